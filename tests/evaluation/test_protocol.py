"""Reference choice, episode planning, per-defect grouping and the baselines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from padformer_edge.detect.images import read_image
from padformer_edge.errors import UserError
from padformer_edge_training.data.layouts import ImageRecord, index_dataset
from padformer_edge_training.evaluation.patchcore import PatchCoreScorer
from padformer_edge_training.evaluation.protocol import (
    EvalOptions,
    ImageResult,
    plan_episodes,
    summarise,
)
from padformer_edge_training.evaluation.refdiff import ReferenceDifferenceScorer
from padformer_edge_training.evaluation.references import ReferencePicker, read_view_directions
from padformer_edge_training.evaluation.report import badness


def angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arccos(np.clip(a @ b, -1, 1)))


def test_nearest_and_farthest_follow_camera_directions(tiny_data: Path) -> None:
    index = index_dataset(tiny_data)
    query = next(r for r in index.records if r.split == "test" and r.category == "duck")
    directions = read_view_directions(tiny_data / "duck")
    to_query = {
        p: angle(
            directions[f"train/good/{p.stem}"], directions[f"test/{query.label}/{query.path.stem}"]
        )
        for p in index.good_train()["duck"]
    }
    ranked = sorted(to_query, key=to_query.get)
    for strategy, expected in (("nearest", ranked[:2]), ("farthest", ranked[::-1][:2])):
        assert ReferencePicker(index.good_train(), 2, strategy, 0).pick(query) == expected


def test_random_references_are_seeded_per_class(tiny_data: Path) -> None:
    good = index_dataset(tiny_data).good_train()
    picks = [ReferencePicker(good, 3, "random", s).random_set("duck") for s in (0, 0, 1)]
    assert picks[0] == picks[1] and len(set(picks[0])) == 3
    alone = ReferencePicker({"duck": good["duck"]}, 3, "random", 0).random_set("duck")
    assert alone == picks[0]  # another class in the dataset does not change this draw


def test_random_plan_has_one_episode_per_class(tiny_data: Path) -> None:
    episodes = plan_episodes(index_dataset(tiny_data), EvalOptions(shots=2, max_per_label=1))
    assert [e.category for e in episodes] == ["duck", "lego"]
    assert [len(e.tests) for e in episodes] == [4, 4]  # one per label: 3 defects + good


def test_missing_poses_name_the_file(tiny_data: Path, tmp_path: Path) -> None:
    (tmp_path / "duck" / "train" / "good").mkdir(parents=True)
    with pytest.raises(UserError, match=r"transforms\.json does not exist"):
        read_view_directions(tmp_path / "duck")
    broken = tmp_path / "duck" / "transforms.json"
    broken.write_text(json.dumps({"frames": [{"file_path": "x"}]}))
    with pytest.raises(UserError, match="not a NeRF-style transforms file"):
        read_view_directions(tmp_path / "duck")


def result(label: str, score: float, mask_pixel: bool, pixel_score: float) -> ImageResult:
    mask = np.zeros((4, 4), bool)
    mask[0, 0] = mask_pixel
    amap = np.zeros((4, 4), np.float32)
    amap[0, 0] = pixel_score
    record = ImageRecord(Path(f"{label}{score}.png"), "part", "test", label)
    return ImageResult(record, score, amap, mask, {})


def test_defect_rows_pair_each_type_with_the_good_images() -> None:
    results = [
        result("good", 0.1, False, 0.0),
        result("good", 0.5, False, 0.0),
        result("dent", 0.9, True, 1.0),
        result("scratch", 0.3, True, 1.0),
    ]
    row = summarise(results)["classes"]["part"]
    assert row["defects"]["dent"]["image_auroc"] == 1.0
    assert row["defects"]["scratch"]["image_auroc"] == 0.5
    assert row["image_auroc"] == 0.75 and row["pixel_auroc"] == 1.0
    assert badness(results) == [0.0, 0.5, 0.0, 0.5]  # the good 0.5 and scratch rank worst


def test_reference_difference_finds_the_identical_reference(tiny_data: Path) -> None:
    refs = [read_image(p) for p in index_dataset(tiny_data).good_train()["duck"][:3]]
    scorer = ReferenceDifferenceScorer()
    scorer.prepare(refs)
    (same,) = scorer.score([refs[1]])
    assert same.score == 0.0 and np.array_equal(same.comparison, refs[1])
    (other,) = scorer.score([np.ascontiguousarray(refs[1][::-1])])
    assert other.score > 1.0 and other.anomaly_map.shape == refs[1].shape[:2]


def test_patchcore_scores_its_own_bank_zero_and_a_defect_higher(tiny_data: Path) -> None:
    index = index_dataset(tiny_data)
    refs = [read_image(p) for p in index.good_train()["duck"][:2]]
    scorer = PatchCoreScorer()
    scorer.prepare(refs)
    defect = next(r for r in index.records if r.category == "duck" and r.label == "Missing")
    own, query = scorer.score([refs[0], read_image(defect.path)])
    assert own.score == pytest.approx(0.0, abs=1e-3)
    assert query.score > 0.1 and query.anomaly_map.shape == (64, 64)


def test_patchcore_with_turned_references_sees_a_turned_view(tiny_data: Path) -> None:
    from padformer_edge_training.evaluation.patchcore import parse_config

    assert parse_config("2@448 turned") == ((2,), 448, True, "efficientnet-lite0")
    assert parse_config("2+3@224") == ((2, 3), 224, False, "efficientnet-lite0")
    with pytest.raises(UserError, match="is not STAGES@SIZE"):
        parse_config("2@448 upside-down")
    index = index_dataset(tiny_data)
    reference = read_image(index.good_train()["duck"][0])
    turned_view = np.ascontiguousarray(np.rot90(reference))
    upright, turned = PatchCoreScorer((2,), 64), PatchCoreScorer((2,), 64, turns=True)
    for scorer in (upright, turned):
        scorer.prepare([reference])
    assert turned.bank is not None and upright.bank is not None
    assert turned.bank.shape[0] == 4 * upright.bank.shape[0]
    (seen,) = turned.score([turned_view])
    (unseen,) = upright.score([turned_view])
    assert seen.score == pytest.approx(0.0, abs=1e-3) and unseen.score > 0.1
