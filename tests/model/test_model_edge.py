"""The edge preset: CNN tokens, pixel-space masking, the feature target, the fused score."""

import numpy as np
import pytest
import torch

from padformer_edge.detect.images import resize_square, to_unit_tensor
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge.methods.padformer.fused_metric import FusedMetric
from padformer_edge.methods.padformer.fused_scoring import (
    PRODUCT_SCORING,
    JobScoring,
    ScoringConfig,
)
from padformer_edge.methods.padformer.mix import Mix
from padformer_edge.methods.padformer.paper_metrics import ColourMetric, PredictedFeatureMetric
from padformer_edge.model.backbone import fold_to_patches, unfold_from_patches
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import build_model
from tests.detect_images import product_image, with_defect


def both(**values) -> ScoringConfig:
    """The same fused settings for the map and the score."""
    return ScoringConfig(map=JobScoring(**values), score=JobScoring(**values))


SMALL_EDGE = dict(
    img_size=64,
    patch_size=16,
    embed_dim=32,
    depth=1,
    num_heads=2,
    decoder_embed_dim=32,
    decoder_depth=2,
    decoder_num_heads=2,
    stn_channels=8,
)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model("edge", **SMALL_EDGE).eval()


def _unit(images):
    """RGB arrays as the ``[3, H, W]`` tensors in [0, 1] a fused metric reads references as."""
    return [to_unit_tensor(image, torch.device("cpu")) for image in images]


def _images(model, *lead, seed=0):
    size = model.config.img_size
    return torch.randn(*lead, 3, size, size, generator=torch.Generator().manual_seed(seed))


def test_edge_preset_loads_the_imagenet_cnn_and_keeps_it_frozen(model):
    cnn = model.encoder.patch_embed.cnn
    assert not any(p.requires_grad for p in cnn.parameters())
    model.train()
    assert not cnn.training  # BN statistics stay ImageNet's
    model.eval()
    fresh = build_model("edge", **SMALL_EDGE)
    for (name, ours), theirs in zip(
        cnn.state_dict().items(), fresh.encoder.patch_embed.cnn.state_dict().values(), strict=True
    ):
        assert torch.equal(ours, theirs), name
    assert float(cnn.stem[0].weight.abs().sum()) > 0


def test_masked_patch_content_never_reaches_the_encoder(model):
    query = _images(model, 1)
    mask = model.random_mask(1, torch.Generator().manual_seed(3))
    p, g = model.config.patch_size, model.config.grid_size
    tampered = query.clone()
    row, col = divmod(int(mask[0].nonzero()[0]), g)
    tampered[..., row * p : (row + 1) * p, col * p : (col + 1) * p] += 5.0
    with torch.no_grad():
        clean, _ = model.forward_encoder(query, mask, None)
        dirty, _ = model.forward_encoder(tampered, mask, None)
        assert torch.equal(clean, dirty)
        # Without the pixel mask the same change leaks into visible tokens through the
        # CNN's receptive field: the check above is not vacuous.
        tokens = model.encoder.patch_embed
        leaked = (tokens(tampered) - tokens(query)).abs().sum(-1)[0]
    assert float(leaked[~mask[0]].max()) > 0


def test_a_visible_patch_change_does_reach_the_encoder(model):
    query = _images(model, 1)
    mask = model.random_mask(1, torch.Generator().manual_seed(3))
    p, g = model.config.patch_size, model.config.grid_size
    row, col = divmod(int((~mask[0]).nonzero()[0]), g)
    changed = query.clone()
    changed[..., row * p : (row + 1) * p, col * p : (col + 1) * p] += 5.0
    with torch.no_grad():
        a, _ = model.forward_encoder(query, mask, None)
        b, _ = model.forward_encoder(changed, mask, None)
    assert not torch.equal(a, b)


def test_feature_target_shape_and_cell_normalisation(model):
    cfg = model.config
    with torch.no_grad():
        target = model.target_features(_images(model, 2))
    assert target.shape == (2, cfg.num_patches, cfg.feature_dim)
    cells = target.unflatten(-1, (-1, cfg.cells_per_side**2))  # [B, M, C, cells^2]
    mean, var = cells.mean(dim=2), cells.var(dim=2, unbiased=False)
    # layer_norm's own epsilon (1e-5) shrinks the variance by var / (var + eps) at most
    assert torch.allclose(mean, torch.zeros_like(mean), atol=1e-5)
    assert float(var.min()) > 0.99 and float(var.max()) <= 1.0 + 1e-5


def test_fold_and_unfold_are_inverse():
    maps = torch.randn(2, 40, 12, 12)
    tokens = fold_to_patches(maps, 2)
    assert tokens.shape == (2, 36, 160)
    assert torch.equal(unfold_from_patches(tokens, 2, 6), maps)


def test_reconstruction_predicts_features_for_every_patch(model):
    refs = _images(model, 2, 3, seed=1)
    with torch.no_grad():
        out, mask = model(_images(model, 2), refs)
    assert out.pixels.shape == (2, 3, 64, 64)
    assert out.features.shape == (2, model.config.num_patches, model.config.feature_dim)
    assert mask.shape == (2, model.config.num_patches)


def test_cached_reference_tokens_equal_recomputed_ones(model):
    refs = _images(model, 1, 3, seed=1)
    query = _images(model, 2, seed=2)
    mask = model.random_mask(2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        cache = model.encode_references(refs)
        again = model.encode_references(refs)
        assert torch.equal(cache.tokens, again.tokens)
        cached = model.reconstruct_all(query, cache, mask)
        fresh = model.reconstruct_all(
            query, model.encode_references(refs.expand(2, -1, -1, -1, -1)), mask
        )
    # The same numbers, batched differently: float32 summation order may differ by a few ulp
    # of the output's magnitude.
    scale = float(fresh.pixels.abs().max())
    torch.testing.assert_close(cached.pixels, fresh.pixels, rtol=0, atol=1e-5 * scale)
    torch.testing.assert_close(
        cached.features, fresh.features, rtol=0, atol=1e-5 * float(fresh.features.abs().max())
    )


def test_rows_share_one_image_with_per_row_pixel_masks(model):
    refs = _images(model, 1, 3, seed=1)
    query = _images(model, 1, seed=2)
    masks = model.random_mask(3, torch.Generator().manual_seed(4))
    rows = torch.zeros(3, dtype=torch.long)
    with torch.no_grad():
        cache = model.encode_references(refs)
        shared = model.reconstruct_all(query, cache, masks, rows=rows)
        repeated = model.reconstruct_all(query.expand(3, -1, -1, -1), cache, masks)
    scale = float(repeated.pixels.abs().max())
    torch.testing.assert_close(shared.pixels, repeated.pixels, rtol=0, atol=1e-5 * scale)


def test_fused_metric_divides_each_map_by_its_stored_spread(model):
    model.score_scales.copy_(torch.tensor([2.0, 8.0]))
    try:
        query01 = torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
        query_model = model.normalize(query01)
        recon01 = torch.rand(3, 3, 64, 64, generator=torch.Generator().manual_seed(1))
        features = torch.randn(3, model.config.num_patches, model.config.feature_dim)
        size = (64, 64)
        # the reference term has its own tests
        fused = FusedMetric(model, both(lab_weight=0.25, reference_weight=0.0))
        lab, feature = ColourMetric("lab"), PredictedFeatureMetric(model)
        expected = 0.25 * lab.errors(lab.target(query01, query_model), recon01, size) / 2.0
        expected += (
            0.75
            * feature.errors(feature.target(query01, query_model), recon01, size, features)
            / 8.0
        )
        got = fused.errors(fused.target(query01, query_model), recon01, size, features)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6 * float(expected.max()))
    finally:
        model.score_scales.fill_(1.0)


def test_checkpoint_round_trip_keeps_weights_and_scales(model, tmp_path):
    model.score_scales.copy_(torch.tensor([3.5, 0.25]))
    try:
        save_checkpoint(tmp_path / "edge.safetensors", model)
        loaded, _ = load_checkpoint(tmp_path / "edge.safetensors")
    finally:
        model.score_scales.fill_(1.0)
    assert loaded.preset_name == "edge" and loaded.config == model.config
    assert torch.equal(loaded.score_scales, torch.tensor([3.5, 0.25]))
    for (name, ours), theirs in zip(
        model.state_dict().items(), loaded.state_dict().values(), strict=True
    ):
        if name != "score_scales":
            assert torch.equal(ours, theirs), name


def test_detector_defaults_to_fused_and_finds_a_defect_region(model):
    check_fused_detection(model)


def check_fused_detection(model) -> None:
    """An edge model (any token source) detects with the fused metric by default, and its
    score is the maximum of the score's own mix and readout of the same passes."""
    references = [product_image(80, 120, seed=s) for s in range(3)]
    query = with_defect(product_image(80, 120, seed=1), (30, 40, 12, 12))
    detector = Detector(
        model, references, DetectionSettings(metric="auto", passes=4, max_batch=3, device="cpu")
    )
    assert detector.metric_name == "fused"
    (result,) = detector.detect([query])
    assert result.anomaly_map.shape == (80, 120)
    # the score is the maximum of the score's own mix and readout of the same passes
    score_job = detector.metric.scoring.score
    refs01 = _unit(references)
    metric = FusedMetric(model, ScoringConfig(map=score_job, score=score_job), refs01)
    detector.metric = metric
    (score_map,) = detector.detect([query])
    assert np.isfinite(result.score) and result.score == pytest.approx(
        float(score_map.anomaly_map.max()), rel=1e-5
    )


def test_fused_metric_is_refused_for_pixel_models():
    from padformer_edge.errors import UserError
    from padformer_edge.methods.padformer.metrics import build_metric

    with pytest.raises(UserError, match="fused metric needs a model with CNN tokens"):
        build_metric("fused", build_model("tiny"))


def test_fused_score_can_take_its_own_mix_while_the_map_keeps_the_other(model):
    """With two weights the map is the first weight's map and the score the maximum of the
    second weight's map, each exactly what a single-weight detector gives."""
    references = [product_image(64, 64, seed=s) for s in range(3)]
    query = with_defect(product_image(64, 64, seed=1), (20, 20, 10, 10))
    model.score_scales.copy_(torch.tensor([5.0, 0.5]))
    try:
        settings = DetectionSettings(passes=4, metric="fused", device="cpu")
        detector = Detector(model, references, settings)
        results = {}
        refs01 = _unit(references)
        for pair in ((0.6, 0.6), (0.0, 0.0), (0.6, 0.0)):
            given = ScoringConfig(
                map=JobScoring(lab_weight=pair[0], reference_weight=4.0),
                score=JobScoring(lab_weight=pair[1], reference_weight=4.0),
            )
            detector.metric = FusedMetric(model, given, refs01)
            (results[pair],) = detector.detect([query])
    finally:
        model.score_scales.fill_(1.0)
    split, map_only, score_only = results[(0.6, 0.0)], results[(0.6, 0.6)], results[(0.0, 0.0)]
    scale = float(np.abs(map_only.anomaly_map).max())
    np.testing.assert_allclose(split.anomaly_map, map_only.anomaly_map, atol=1e-5 * scale)
    assert split.score == pytest.approx(score_only.score, rel=1e-5)
    assert split.score != pytest.approx(map_only.score, rel=1e-3)  # the two mixes differ


def test_a_model_carries_its_own_validated_fused_settings_field_by_field(tmp_path):
    from padformer_edge.detect.readout import Readout

    plain = build_model("edge", **SMALL_EDGE)
    assert FusedMetric(plain).scoring == PRODUCT_SCORING
    path = tmp_path / "own.safetensors"
    weighted = build_model("edge", **SMALL_EDGE)
    own_settings = {"map": {"lab_weight": 0.0, "consistency_filter": False, "sigma": 4.0},
                    "score": {"lab_weight": 0.75, "sigma": 2.0}}  # fmt: skip
    weighted.scoring = own_settings
    save_checkpoint(path, weighted)
    own, _ = load_checkpoint(path)
    assert own.scoring == own_settings
    metric = FusedMetric(own)
    ref, score_ref = (job.reference_weight for job in (metric.scoring.map, metric.scoring.score))
    mixes = [(mix.lab_weight, mix.reference_weight) for mix in metric.mixes]
    assert mixes == [(0.0, ref), (0.75, score_ref)]
    assert metric.map_readout == Readout(False, 4.0)
    # a field the model leaves unset keeps the product's
    assert metric.score_readout == Readout(PRODUCT_SCORING.score.consistency_filter, 2.0)
    # what a detection gives goes over the model's own, field by field
    given = both(lab_weight=0.5, reference_zoom=1, reference_turns=False, sigma=0.0)
    assert FusedMetric(own, given).mixes == (Mix(0.5, ref), Mix(0.5, score_ref))
    assert FusedMetric(own, given).map_readout == Readout(False, 0.0)
    own.scoring = {"map": {"lab_weight": 1.5}}
    with pytest.raises(UserError, match=r"map\.lab_weight: input should be less than or equal"):
        FusedMetric(own)


def test_nearest_reference_distance_is_zero_for_a_seen_cell_and_not_for_a_new_one(model):
    from padformer_edge.methods.padformer.distance_search import (
        nearest_reference_distances,
        reference_banks,
    )

    size = model.config.img_size
    references = [torch.rand(3, 48, 40, generator=torch.Generator().manual_seed(s)) for s in (3, 4)]
    banks = reference_banks(model, references, zoom=2, turns=True)
    cells_1x, cells_2x = (size // 8) ** 2, (size // 4) ** 2
    assert [bank.upright for bank in banks] == [2 * cells_1x, 2 * cells_2x]
    assert [bank.cells.shape for bank in banks] == [(8 * cells_1x, 40), (8 * cells_2x, 40)]
    upright = reference_banks(model, references, zoom=2)
    for turned, plain in zip(banks, upright, strict=True):
        assert not plain.turned and torch.equal(turned.cells[: turned.upright], plain.cells)

    def distances(image):
        query_model = model.normalize(resize_square(image.unsqueeze(0), size))
        target = model.target_features(query_model)
        return nearest_reference_distances(model, image.unsqueeze(0), target, banks, (48, 40))

    seen = distances(references[1])
    assert sorted(seen) == [(1, False), (1, True), (2, False), (2, True)]
    assert all(d.shape == (48, 40) for d in seen.values())
    # cosine of a unit vector with itself: 1 up to float32 rounding over 40 channels
    assert max(float(d.abs().max()) for d in seen.values()) < 1e-5
    new = distances(torch.rand(3, 48, 40, generator=torch.Generator().manual_seed(5)))
    for level in new.values():
        assert level.min() >= -1e-5 and level.mean() > 1e-3


def test_a_reference_turned_a_quarter_is_seen_only_with_turns(model):
    """A query that is a reference squeezed square and turned a quarter has every cell in
    the turned bank (distance 0 up to rounding) but not in the upright one."""
    from padformer_edge.methods.padformer.distance_search import (
        nearest_reference_distances,
        reference_banks,
    )

    size = model.config.img_size
    reference = torch.rand(3, size, size, generator=torch.Generator().manual_seed(6))
    banks = reference_banks(model, [reference], zoom=1, turns=True)
    query = torch.rot90(reference, 1, (-2, -1)).unsqueeze(0)
    target = model.target_features(model.normalize(query))
    distances = nearest_reference_distances(model, query, target, banks, (size, size))
    assert float(distances[1, True].abs().max()) < 1e-5
    assert float(distances[1, False].mean()) > 1e-3


def test_the_best_cosine_search_in_blocks_equals_the_whole_matrix(monkeypatch):
    from padformer_edge.methods.padformer import distance_search as scoring
    from padformer_edge.methods.padformer.distance_blocks import Blocks

    generator = torch.Generator().manual_seed(0)
    cells = torch.nn.functional.normalize(torch.randn(50, 40, generator=generator), dim=1)
    rows = torch.nn.functional.normalize(torch.randn(120, 40, generator=generator), dim=1)
    bank = scoring.ReferenceBank(rows, upright=30)
    whole = cells @ rows.T
    # blocks of 7 query cells x 11 bank rows: none divides 50, 30 or 90, so blocks end short
    # and the last upright block stops at the turned rows
    monkeypatch.setattr(scoring, "SEARCH_BLOCKS", Blocks(7, 11))
    upright, every = scoring.best_cosines(cells, bank)
    # a block's product may sum its 40 terms in another order: float32 rounding per term
    rounding = 40 * torch.finfo(torch.float32).eps
    torch.testing.assert_close(upright, whole[:, :30].amax(dim=1), rtol=0, atol=rounding)
    torch.testing.assert_close(every, whole.amax(dim=1), rtol=0, atol=rounding)
    assert scoring.best_cosines(cells, scoring.ReferenceBank(rows[:30], 30))[1] is None


def test_the_best_cosine_search_stays_on_the_cells_device():
    """On a GPU line PC the query cells and the bank are on CUDA; the running maxima must
    be made there too. PyTorch's meta device stands in for CUDA: mixing it with a CPU
    tensor fails the same way."""
    from padformer_edge.methods.padformer import distance_search as scoring

    cells = torch.empty(9, 40, device="meta")
    bank = scoring.ReferenceBank(torch.empty(20, 40, device="meta"), upright=10)
    upright, every = scoring.best_cosines(cells, bank)
    assert upright.device.type == "meta" and every is not None and every.device.type == "meta"


def test_a_zoomed_reference_term_names_its_zoom_and_zoom_one_keeps_old_signatures(model):
    from padformer_edge.detect.signature import signature_text
    from padformer_edge.methods.padformer.metrics import scoring_signature

    one = FusedMetric(model, both(reference_weight=6.0, reference_zoom=1))
    signature = scoring_signature("fused", one)
    assert signature["map"]["reference_weight"] == 6.0 and signature["map"]["reference_zoom"] == 1
    assert "reference weight 6" in signature_text(signature)
    assert "zoom" not in signature_text(signature)
    given = ScoringConfig(
        map=JobScoring(reference_weight=6.0, reference_zoom=1),
        score=JobScoring(reference_weight=12.0, reference_zoom=2),
    )
    two = FusedMetric(model, given)
    turns = two.mixes[0].turns, two.mixes[1].turns  # the product's, not given here
    assert two.mixes == (
        Mix(PRODUCT_SCORING.map.lab_weight, 6.0, 1, turns[0]),
        Mix(PRODUCT_SCORING.score.lab_weight, 12.0, 2, turns[1]),
    )
    assert two.zoom == 2
    assert scoring_signature("fused", two)["score"]["reference_zoom"] == 2
    text = signature_text(scoring_signature("fused", two))
    assert "reference weight 12 at zoom 2" in text.split("score:")[1]
    # without a reference term a zoom changes nothing, so it does not split the mixes
    none = FusedMetric(
        model,
        ScoringConfig(
            map=JobScoring(lab_weight=0.5, reference_weight=0.0, reference_zoom=1),
            score=JobScoring(lab_weight=0.5, reference_weight=0.0, reference_zoom=3),
        ),
    )
    assert none.mixes == (Mix(0.5),) and not none.reads_references
    assert scoring_signature("fused", none)["score"]["reference_zoom"] == 1
    with pytest.raises(ValueError, match="less than or equal to 3"):
        JobScoring(reference_zoom=4)
    with pytest.raises(ValueError, match="fractional part"):
        JobScoring(reference_zoom=1.5)


def test_the_reference_term_makes_the_references_matter_and_names_itself(model):
    from padformer_edge.detect.signature import signature_text
    from padformer_edge.methods.padformer.metrics import scoring_signature

    query = with_defect(product_image(64, 64, seed=1), (20, 20, 10, 10))
    unlike = [product_image(64, 64, seed=s) for s in (5, 6)]
    model.score_scales.copy_(torch.tensor([5.0, 0.5]))
    try:
        settings = DetectionSettings(passes=4, metric="fused", device="cpu")
        scores = {}
        for weight in (0.0, 20.0):
            for name, refs in (("itself", [query, unlike[0]]), ("unlike", unlike)):
                detector = Detector(model, refs, settings)
                refs01 = _unit(refs)
                detector.metric = FusedMetric(model, both(reference_weight=weight), refs01)
                scores[weight, name] = detector.detect([query])[0].score
        # with the term, a query that is one of the references scores lower than against
        # references unlike it, by at least the term's share of the score
        gap = scores[20.0, "unlike"] - scores[20.0, "itself"]
        plain_gap = scores[0.0, "unlike"] - scores[0.0, "itself"]
        assert gap > plain_gap + 1e-3
        plain = FusedMetric(model, both(reference_weight=0.0))
        assert "reference" not in signature_text(scoring_signature("fused", plain))
        weighted = FusedMetric(
            model,
            ScoringConfig(
                map=JobScoring(reference_weight=0.0), score=JobScoring(reference_weight=20.0)
            ),
        )
        text = signature_text(scoring_signature("fused", weighted))
        assert "score: LAB weight" in text and "reference weight 20" in text.split("score:")[1]
        with pytest.raises(ValueError, match="build it with them"):
            weighted.target(torch.rand(1, 3, 64, 64), torch.rand(1, 3, 64, 64))
    finally:
        model.score_scales.fill_(1.0)
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        JobScoring(reference_weight=-1.0)
