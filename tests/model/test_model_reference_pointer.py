"""The reference-pointer readout: predicted features mixed from the references' own.

With ``feature_readout: references`` a patch's predicted CNN features are a softmax-weighted
mean of the references' cell-normalised CNN features. Whatever the query shows, every
prediction stays inside the box spanned by those features, so the query's visible content
can move a hidden patch's prediction by at most that box's width, and a reference set of
one repeated feature predicts exactly that feature.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.reference_cache import read_cache, write_cache
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import PADFormer, ReferenceCache, build_model
from tests.training.test_train_edge import TINY_EDGE

EPS = torch.finfo(torch.float32).eps


@pytest.fixture(scope="module")
def model() -> PADFormer:
    torch.manual_seed(0)
    return build_model("edge", **TINY_EDGE, feature_readout="references").eval()


def _images(model: PADFormer, *lead: int, seed: int) -> torch.Tensor:
    size = model.config.img_size
    generator = torch.Generator().manual_seed(seed)
    return model.normalize(torch.rand(*lead, 3, size, size, generator=generator))


def _predicted(model: PADFormer, query: torch.Tensor, cache: ReferenceCache) -> torch.Tensor:
    mask = model.random_mask(query.shape[0], torch.Generator().manual_seed(3))
    with torch.no_grad():
        return model.reconstruct_all(query, cache, mask).features


def _box(targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per feature, the references' least and greatest value, and a float32 slack: a mean
    with weights summing to one in float32 can leave the box by about (N * M) ulps."""
    flat = targets.flatten(0, 2)
    slack = flat.shape[0] * EPS * flat.abs().amax(dim=0)
    return flat.amin(dim=0), flat.amax(dim=0), slack


def test_only_a_model_with_cnn_tokens_can_read_reference_features() -> None:
    with pytest.raises(UserError, match="feature_readout 'references' needs CNN tokens"):
        build_model("tiny", feature_readout="references")
    with pytest.raises(UserError, match="feature_readout must be one of head, references"):
        build_model("edge", **TINY_EDGE, feature_readout="guess")


def test_predictions_stay_inside_what_the_references_show(model: PADFormer) -> None:
    with torch.no_grad():
        cache = model.encode_references(_images(model, 1, 3, seed=1))
    assert cache.targets is not None and cache.targets.shape[:3] == (1, 3, 16)
    low, high, slack = _box(cache.targets)
    for seed in (2, 5):  # two unrelated queries, noise included
        predicted = _predicted(model, _images(model, 2, seed=seed), cache)
        assert bool((predicted >= low - slack).all() and (predicted <= high + slack).all())


def test_the_visible_query_moves_a_prediction_by_at_most_the_references_spread(
    model: PADFormer,
) -> None:
    with torch.no_grad():
        cache = model.encode_references(_images(model, 1, 2, seed=4))
    low, high, slack = _box(cache.targets)
    first = _predicted(model, _images(model, 1, seed=6), cache)
    second = _predicted(model, _images(model, 1, seed=7), cache)
    assert bool(((first - second).abs() <= high - low + 2 * slack).all())
    assert not torch.equal(first, second)  # the query does steer which cells are read


def test_one_repeated_reference_feature_is_predicted_exactly(model: PADFormer) -> None:
    with torch.no_grad():
        cache = model.encode_references(_images(model, 1, 2, seed=8))
    value = torch.linspace(-1.0, 1.0, cache.targets.shape[-1])
    flat = ReferenceCache(
        cache.features, cache.tokens, cache.layer_terms, value.expand_as(cache.targets).clone()
    )
    predicted = _predicted(model, _images(model, 2, seed=9), flat)
    slack = cache.targets[0].numel() / value.numel() * EPS
    assert torch.allclose(predicted, value.expand_as(predicted), rtol=0, atol=float(slack))


def test_changing_the_references_changes_a_hidden_patch(model: PADFormer) -> None:
    query = _images(model, 1, seed=10)
    with torch.no_grad():
        good = model.encode_references(_images(model, 1, 2, seed=11))
        black = model.encode_references(model.normalize(torch.zeros(1, 2, 3, 64, 64)))
    assert not torch.allclose(_predicted(model, query, good), _predicted(model, query, black))


def test_a_cache_without_reference_features_is_one_sentence(model: PADFormer) -> None:
    with torch.no_grad():
        cache = model.encode_references(_images(model, 1, 2, seed=12))
        with pytest.raises(UserError, match="reads its references' CNN features"):
            model.cache_from_features(cache.features)
        rebuilt = model.cache_from_features(cache.features, cache.targets)
    query = _images(model, 1, seed=13)
    assert torch.equal(_predicted(model, query, rebuilt), _predicted(model, query, cache))


def test_the_profile_cache_file_keeps_the_reference_features(
    model: PADFormer, tmp_path: Path
) -> None:
    with torch.no_grad():
        cache = model.encode_references(_images(model, 1, 2, seed=14))
    path = tmp_path / "references.safetensors"
    write_cache(path, "k", cache)
    loaded = read_cache(path, "k", model, torch.device("cpu"))
    assert loaded is not None and torch.equal(loaded.targets, cache.targets)


def test_a_head_model_is_reconfigured_into_a_pointer_model_and_back(tmp_path: Path) -> None:
    torch.manual_seed(1)
    head = build_model("edge", **TINY_EDGE).eval()
    pointer = head.reconfigured(feature_readout="references")
    assert pointer.decoder.feature_head is None and pointer.decoder.pointer is not None
    shared = {k: v for k, v in pointer.state_dict().items() if not k.startswith("decoder.pointer")}
    original = head.state_dict()
    assert all(torch.equal(value, original[key]) for key, value in shared.items())
    back = pointer.reconfigured(feature_readout="head")
    assert back.decoder.feature_head is not None and back.decoder.pointer is None

    path = tmp_path / "pointer.safetensors"
    save_checkpoint(path, pointer, {"note": "round trip"})
    loaded, _ = load_checkpoint(path)
    assert loaded.config.feature_readout == "references"
    refs, query = _images(head, 1, 2, seed=15), _images(head, 1, seed=16)
    with torch.no_grad():
        before = _predicted(pointer, query, pointer.encode_references(refs))
        after = _predicted(loaded.eval(), query, loaded.encode_references(refs))
    assert torch.equal(before, after)


def test_a_reconfiguration_that_drops_shared_weights_is_refused() -> None:
    model = build_model("edge", **TINY_EDGE)
    with pytest.raises(RuntimeError, match="size mismatch"):
        model.reconfigured(decoder_embed_dim=16, decoder_num_heads=2)


def test_export_carries_the_references_features_to_the_query_graph(
    model: PADFormer, tmp_path: Path
) -> None:
    """The reference graph yields the targets and the query graph reads them: predicted
    features from onnxruntime follow the references the runner was given (the float32
    parity itself is tests/deploy/export_parity_cases.py's)."""
    from padformer_edge.deploy.export import export_onnx
    from padformer_edge.deploy.onnx_runner import OnnxRunner
    from padformer_edge.detect.masks import mask_indices

    manifest = export_onnx(model, tmp_path / "graphs")
    assert manifest["reference_outputs"] == ["features", "ref_targets"]
    runner = OnnxRunner(tmp_path / "graphs", model)
    refs, query = _images(model, 2, seed=20), _images(model, 1, seed=21)
    features, targets = runner.encode_references(refs.numpy())
    mask = model.random_mask(1, torch.Generator().manual_seed(3))
    runner.use_features(features, targets)
    _, predicted = runner.reconstruct(query.numpy(), *mask_indices(mask))
    expected = _predicted(model, query, model.encode_references(refs[None]))
    assert torch.allclose(torch.from_numpy(predicted), expected, atol=1e-4)
    runner.use_features(features, targets * 0)  # the features come from ref_targets alone
    _, zeroed = runner.reconstruct(query.numpy(), *mask_indices(mask))
    assert float(abs(zeroed).max()) == 0.0 and float(abs(predicted).max()) > 0.0
