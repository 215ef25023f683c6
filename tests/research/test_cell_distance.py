"""The distance on richer cells (stage A of the small-defect work) and its benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from padformer_edge.detect.images import read_image
from padformer_edge.errors import UserError
from padformer_edge_training.data.layouts import index_dataset
from research.cell_distance import (
    CellConfig,
    CellDistanceScorer,
    farthest_point_coreset,
    parse_cells,
)
from tests.benchmark_process import run_research


def test_a_configuration_reads_back_from_its_text() -> None:
    config = parse_cells("3+2@448 n3 p64 c0.1 lite2")
    assert config == CellConfig((2, 3), 448, 3, 64, 0.1, "efficientnet-lite2")
    assert parse_cells(config.text) == config
    assert parse_cells("2@192") == CellConfig()
    for bad, message in [
        ("2@448 x3", "is not STAGES@SIZE"),
        ("2@448 n2", "neighbourhood is odd"),
        ("7@448", "stages are 1-5"),
        ("2@448 c0", "0 < F <= 1"),
    ]:
        with pytest.raises(UserError, match=message):
            parse_cells(bad)


def test_the_coreset_keeps_the_cells_farthest_apart() -> None:
    """Three tight clusters of unit cells: three picks take one cell of each."""
    generator = torch.Generator().manual_seed(0)
    centres = torch.eye(3)
    cells = torch.cat([c + 0.01 * torch.randn(20, 3, generator=generator) for c in centres])
    cells = torch.nn.functional.normalize(cells, dim=-1)
    chosen = farthest_point_coreset(cells, 3)
    assert sorted(int(i) // 20 for i in chosen) == [0, 1, 2]
    assert len(set(farthest_point_coreset(cells, 60).tolist())) == 60  # all, each once


@pytest.mark.parametrize("text", ["2@64 n1", "2+3@96 n3 p16", "2@64 n3 c0.5"])
def test_a_reference_scores_near_zero_and_a_defect_higher(tiny_data: Path, text: str) -> None:
    index = index_dataset(tiny_data)
    refs = [read_image(p) for p in index.good_train()["duck"][:2]]
    scorer = CellDistanceScorer(parse_cells(text))
    scorer.prepare(refs)
    defect = next(r for r in index.records if r.category == "duck" and r.label == "Missing")
    own, query = scorer.score([refs[0], read_image(defect.path)])
    # a unit cell against itself: 1 - cos is zero up to float32 rounding of the dot product
    # (the channels' count times the unit roundoff), unless the coreset dropped the cell
    rounding = 64 * 2 * float(np.finfo(np.float32).eps)
    if parse_cells(text).coreset == 1.0:
        assert own.score == pytest.approx(0.0, abs=rounding)
    assert query.score > own.score + 10 * rounding
    assert query.anomaly_map.shape == (64, 64)


def test_the_turned_references_see_a_turned_view(tiny_data: Path) -> None:
    index = index_dataset(tiny_data)
    reference = read_image(index.good_train()["duck"][0])
    scorer = CellDistanceScorer(parse_cells("2@64"))
    scorer.prepare([reference])
    (turned,) = scorer.score([np.ascontiguousarray(np.rot90(reference))])
    assert turned.score == pytest.approx(0.0, abs=1e-5)
    other = read_image(index.good_train()["lego"][0])
    scorer.prepare([other])  # other references change the score
    (again,) = scorer.score([np.ascontiguousarray(np.rot90(reference))])
    assert again.score > 0.05


def test_the_benchmark_caches_its_rows_and_writes_margins(tiny_data: Path, tmp_path: Path):
    cache = tmp_path / "cache.json"
    args = ["--data", str(tiny_data), "--shots", "2", "--max-per-label", "1"]
    args += ["--cells", "2@64", "--patchcore", "2@64 turned", "--cache", str(cache)]
    done = run_research("distance_cells.py", *args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        "| distance 2@64 n1 |" in done.stdout and "margin over PatchCore 2@64 turned" in done.stdout
    )
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(line["rows"]) == {"PatchCore 2@64 turned", "distance 2@64 n1"}
    stored = json.loads(cache.read_text())
    assert len(stored) == 2
    # a cached row is read back, not computed again: a planted figure comes out as stored
    key = next(k for k in stored if "PatchCore" in k)
    stored[key]["cpu_s_per_image"] = 123.0
    cache.write_text(json.dumps(stored))
    again = run_research("distance_cells.py", *args)
    assert again.returncode == 0 and "123.000" in again.stdout


def test_a_comparators_own_cells_read_the_mean_of_their_neighbourhood(tiny_data: Path):
    """``neighbourhood: 3`` averages each cell with its eight neighbours before the unit
    length (the CNN's maps, pooled), and 1 leaves the cells as a shipped comparator's."""
    from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel
    from padformer_edge.model.backbone import unit_cells

    index = index_dataset(tiny_data)
    image = read_image(index.good_train()["duck"][0])
    squares = torch.from_numpy(image).permute(2, 0, 1)[None].float() / 255
    plain = ComparisonModel(ComparatorConfig(input_size=64, aligned_k=0, use_stn=False))
    plain.features.load_imagenet()
    pooled = ComparisonModel(
        ComparatorConfig(input_size=64, aligned_k=0, use_stn=False, neighbourhood=3)
    )
    pooled.load_state_dict(plain.state_dict())
    maps = plain.features((squares - plain.mean) / plain.std)
    assert torch.equal(plain.cells(squares), unit_cells(maps))
    centre = maps[..., 2:5, 2:5].mean((-2, -1))
    expected = unit_cells(centre[..., None, None])[..., 0, 0]
    torch.testing.assert_close(pooled.cells(squares)[..., 3, 3], expected)


def test_the_benchmark_scores_a_comparators_cells_and_a_trained_model(
    tiny_data: Path, tmp_path: Path
):
    from padformer_edge.methods.compare.checkpoint import save_comparator
    from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel

    model = ComparisonModel(ComparatorConfig(input_size=64, dim=16, depth=1, heads=2, top_k=2))
    model.features.load_imagenet()
    save_comparator(tmp_path / "tiny.safetensors", model, {"step": 0})
    args = ["--data", str(tiny_data), "--shots", "2", "--max-per-label", "1"]
    args += ["--comparator-cells", "64 n3", "--comparator-cells", "64 s2+3"]
    args += ["--model", str(tmp_path / "tiny.safetensors")]
    done = run_research("distance_cells.py", *args, "--cache", str(tmp_path / "c.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])["rows"]
    assert set(rows) == {
        "comparator cells 64 n3: distance alone",
        "comparator cells 64 s2+3: distance alone",
        f"comparator {tmp_path.name}/tiny",
    }
    refused = run_research("distance_cells.py", *args[:6], "--comparator-cells", "64 x3")
    assert refused.returncode != 0 and "are not SIZE[ nN][ sSTAGES]" in refused.stderr
