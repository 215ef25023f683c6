"""The comparator: a zero correction is the distance, the references matter, checkpoints
round-trip, and a window reads the same cells as the whole grid."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from padformer_edge.errors import UserError
from padformer_edge.methods.compare.checkpoint import (
    forget_shared_comparators,
    load_comparator,
    save_comparator,
    shared_comparator,
)
from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel
from padformer_edge.methods.compare.scorer import compare, reference_cells
from padformer_edge.methods.padformer.distance_search import ReferenceBank, best_cosines
from tests.compare_readout import read_score
from tests.train_helpers import object_image

CONFIG = ComparatorConfig(input_size=64, dim=32, depth=1, heads=2, top_k=4, aligned_k=2)


def images(seeds: list[int]) -> list[torch.Tensor]:
    return [torch.from_numpy(object_image(s, 80)).permute(2, 0, 1).float() / 255 for s in seeds]


@pytest.fixture(scope="module")
def model() -> ComparisonModel:
    torch.manual_seed(0)
    net = ComparisonModel(CONFIG)
    net.features.load_imagenet()
    return net.eval()


def with_random_head(model: ComparisonModel, seed: int = 1) -> ComparisonModel:
    twin = ComparisonModel(CONFIG)
    twin.load_state_dict(model.state_dict())
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        twin.comparator.head.weight.copy_(
            torch.randn(twin.comparator.head.weight.shape, generator=generator)
        )
    return twin.eval()


def test_an_untrained_comparator_scores_exactly_the_distance(model):
    refs = reference_cells(model, images([1, 2, 3]))
    result = compare(model, images([10, 11]), refs)
    assert torch.equal(result.correction, torch.zeros_like(result.correction))
    assert torch.equal(result.score, result.distance)


def test_the_distance_is_one_minus_the_best_cosine_over_turned_references(model):
    refs = reference_cells(model, images([1, 2]))
    query = images([7])
    result = compare(model, query, refs)
    cells = model.cells(F.interpolate(query[0][None], size=64, mode="bilinear", antialias=True))
    rows = cells.permute(0, 2, 3, 1).reshape(-1, cells.shape[1])
    upright = refs.upright.shape[1] * refs.upright.shape[-1] * refs.upright.shape[-2]
    _, every = best_cosines(rows, ReferenceBank(refs.bank[0], upright))
    # the same products, summed in another order by another kernel: float32 rounding
    bound = 8 * torch.finfo(torch.float32).eps * cells.shape[1]
    assert (result.distance.flatten() - (1 - every)).abs().max() <= bound


def test_changing_the_references_changes_the_comparators_output(model):
    trained = with_random_head(model)
    query = images([20])
    first = compare(trained, query, reference_cells(trained, images([1, 2, 3])))
    other = compare(trained, query, reference_cells(trained, images([4, 5, 6])))
    assert not torch.allclose(first.correction, other.correction)
    assert not torch.allclose(first.score, other.score)


def test_a_checkpoint_round_trip_scores_the_same(model, tmp_path):
    trained = with_random_head(model)
    path = tmp_path / "comparator.safetensors"
    save_comparator(path, trained, {"step": 3})
    loaded, metadata = load_comparator(path)
    refs = images([1, 2])
    query = images([9])
    before = compare(trained, query, reference_cells(trained, refs))
    after = compare(loaded, query, reference_cells(loaded, refs))
    assert metadata == {"step": 3}
    assert loaded.config == trained.config
    assert torch.equal(before.score, after.score)


def test_a_damaged_or_foreign_file_is_refused_in_one_sentence(model, tmp_path):
    path = tmp_path / "comparator.safetensors"
    save_comparator(path, model)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="corrupt"):
        load_comparator(path)
    foreign = tmp_path / "notes.safetensors"
    foreign.write_text("not a checkpoint")
    with pytest.raises(UserError, match="not a comparator checkpoint"):
        load_comparator(foreign)
    with pytest.raises(UserError, match="does not exist"):
        load_comparator(tmp_path / "missing.safetensors")


def test_the_score_map_is_read_at_the_querys_size_and_smoothed():
    cells = torch.zeros(8, 8)
    cells[3, 4] = 1.0
    amap = read_score(cells, (120, 90), input_size=64)
    assert amap.shape == (120, 90)
    assert 0 < float(amap.max()) < 1.0  # smoothed: the single cell's peak spreads
    row, col = np.unravel_index(int(amap.argmax()), amap.shape)
    assert abs(row - 3.5 * 120 / 8) <= 120 / 8 and abs(col - 4.5 * 90 / 8) <= 90 / 8


def test_a_window_sees_the_position_embedding_of_its_place(model):
    trained = with_random_head(model)
    twin = ComparisonModel(ComparatorConfig(**{**CONFIG.to_json(), "aligned_k": 0}))
    twin.load_state_dict(trained.state_dict())
    twin.eval()
    refs = reference_cells(twin, images([1, 2]))
    cells = twin.cells(F.interpolate(images([5])[0][None], size=64, mode="bilinear"))
    whole = twin(cells, refs.upright, refs.bank)
    corner = twin(cells[..., 2:6, 3:7], refs.upright, refs.bank, [(2, 3)])
    shifted = twin(cells[..., 2:6, 3:7], refs.upright, refs.bank, [(0, 0)])
    # the nearest-reference evidence is per cell: the same in a window as in the grid
    assert torch.equal(corner.distance[0], whole.distance[0, 2:6, 3:7])
    # the embedding follows the origin: another origin, another correction
    assert not torch.allclose(corner.correction, shifted.correction)
    with pytest.raises(ValueError, match="whole query grid"):
        trained(cells[..., 2:6, 3:7], refs.upright, refs.bank, [(2, 3)])


def test_the_nearest_search_in_blocks_finds_what_the_whole_search_finds(model, monkeypatch):
    """A fine grid's cosines are searched in blocks of query rows; each row's top-k is
    its own, so blocks find the same cells with the same cosines (float32 rounding of
    the same dot products taken by another kernel is the only freedom)."""
    import padformer_edge.methods.compare.model as comparator

    generator = torch.Generator().manual_seed(3)
    query = F.normalize(torch.randn(2, 50, 40, generator=generator), dim=-1)
    bank = F.normalize(torch.randn(2, 300, 40, generator=generator), dim=-1)
    whole = model.comparator.nearest(query, bank)
    monkeypatch.setattr(comparator, "NEAREST_BLOCK", 2 * 300 * 7)  # blocks of 7 query rows
    blocked = model.comparator.nearest(query, bank)
    assert torch.equal(blocked[1], whole[1])
    bound = 4 * torch.finfo(torch.float32).eps * query.shape[-1]
    assert (blocked[0] - whole[0]).abs().max() <= bound


def test_stacked_stages_keep_the_stride8_cells_and_add_the_wider_map():
    """``stages (2, 3)``: block 2's channels first, unchanged, then block 3's map (stride
    16) upsampled to the same grid; a checkpoint keeps the choice."""
    from padformer_edge.model.backbone import Stride8Features

    one, two = Stride8Features(), Stride8Features(stages=(2, 3))
    one.load_imagenet()
    two.load_imagenet()
    x = torch.rand(1, 3, 64, 64)
    fine, stacked = one(x), two(x)
    assert stacked.shape == (1, 120, 8, 8)
    assert torch.equal(stacked[:, :40], fine)
    wider = two.blocks[3](two.blocks[:3](two.stem(x)))
    assert wider.shape[-1] == 4
    upsampled = F.interpolate(wider, (8, 8), mode="bilinear", align_corners=False)
    torch.testing.assert_close(stacked[:, 40:], upsampled)
    with pytest.raises(ValueError, match="first tapped block"):
        Stride8Features(stages=(3,))


def test_a_recipe_with_stride16_cells_builds_their_channels(tmp_path):
    from padformer_edge_training.comparator.recipe import ComparatorModelSection

    section = ComparatorModelSection(stages=[3, 2], input_size=64)
    config = section.config()
    assert config.stages == (2, 3) and config.channels == 120
    model = ComparisonModel(config)
    model.features.load_imagenet()
    save_comparator(tmp_path / "c.safetensors", model, {"step": 0})
    loaded, _ = load_comparator(tmp_path / "c.safetensors")
    assert loaded.config == config
    assert loaded.cells(torch.rand(1, 3, 64, 64)).shape == (1, 120, 8, 8)
    with pytest.raises(ValueError, match="the stages are"):
        ComparatorModelSection(stages=[2, 4])


def test_the_two_step_top_k_finds_what_one_top_k_finds():
    """``top_k_cosines``: the best cosine of each group of bank rows, the best groups,
    then the best cosines inside them; the same values at the same indices as one top-k
    over the whole row (random cosines have no ties)."""
    from padformer_edge.methods.compare.model import TOP_K_GROUP, top_k_cosines

    generator = torch.Generator().manual_seed(5)
    cosines = torch.rand(2, 30, 20 * 8 * TOP_K_GROUP, generator=generator)
    cosines[0, 0, :8] = 1.0 + torch.arange(8.0)  # the best all in one group
    values, index = top_k_cosines(cosines, 8)
    whole = cosines.topk(8, dim=-1)
    assert torch.equal(values, whole.values) and torch.equal(index, whole.indices)


def test_queries_sharing_one_bank_find_what_each_finds_alone(model):
    """Queries against one bank are searched as one block of rows; each query's top-k
    is its own (the rounding of the same dot products taken by another kernel aside)."""
    generator = torch.Generator().manual_seed(4)
    query = F.normalize(torch.randn(3, 50, 40, generator=generator), dim=-1)
    bank = F.normalize(torch.randn(1, 300, 40, generator=generator), dim=-1)
    together = model.comparator.nearest(query, bank)
    bound = 4 * torch.finfo(torch.float32).eps * query.shape[-1]
    for i in range(3):
        alone = model.comparator.nearest(query[i : i + 1], bank)
        assert torch.equal(together[1][i], alone[1][0])
        assert (together[0][i] - alone[0][0]).abs().max() <= bound


def test_a_comparator_first_shared_under_inference_mode_serves_autograd_later(
    model: ComparisonModel, tmp_path
) -> None:
    """The shared comparator is one object per process: a detector built under
    inference mode must not leave it with inference tensors, or an export traced after it in
    the same process fails ("Inference tensors cannot be saved for backward")."""
    path = tmp_path / "c.safetensors"
    save_comparator(path, model)
    forget_shared_comparators()
    try:
        with torch.inference_mode():
            first = shared_comparator(path)
        assert not any(t.is_inference() for t in first.state_dict().values())
        cells = torch.randn(1, 4, 3, 3, requires_grad=True)
        (next(first.parameters()) * cells.sum()).sum().backward()
        assert shared_comparator(path) is first
    finally:
        forget_shared_comparators()
