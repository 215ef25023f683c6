"""Training never sees a held-out defect kind: not in a dataset, not in a rendered manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from padformer_edge.errors import UserError
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.families import (
    FAMILIES,
    HELD_OUT_FAMILY,
    TRAINING_FAMILY,
    TRANSFER_FAMILY,
    UNSEEN_FAMILY,
    family_of,
    held_out_in,
    refuse_held_out,
)
from padformer_edge_training.trainer import run_training
from tests.train_helpers import mvtec_like_tree, object_image, write

RECIPE = {
    "model": {"preset": "tiny"},
    "data": {"num_refs": 2, "num_workers": 0},
    "loss": {"perceptual": "none"},
    "optim": {"batch_size": 2, "warmup_steps": 1},
    "stages": {"within_view": {"epochs": 1}, "cross_view": {"epochs": 0}},
}


@pytest.fixture()
def good_tree(tmp_path: Path) -> Path:
    """Two classes of good images with a Stains test folder: a training-family dataset."""
    return mvtec_like_tree(tmp_path / "data", {"duck": 4, "mug": 4}, padded=False)


def test_the_three_families_are_disjoint_and_held_out_is_transfer_and_unseen() -> None:
    kinds = [k for family in FAMILIES.values() for k in family]
    assert len(kinds) == len(set(kinds)), "a kind in two families"
    assert list(FAMILIES) == ["training", "transfer", "unseen"]
    assert HELD_OUT_FAMILY == TRANSFER_FAMILY + UNSEEN_FAMILY and len(UNSEEN_FAMILY) == 1
    assert {family_of(k) for k in TRAINING_FAMILY} == {"training"}
    assert {family_of(k) for k in TRANSFER_FAMILY} == {"transfer"}
    assert {family_of(k) for k in UNSEEN_FAMILY} == {"unseen"}
    assert family_of("crack") is None  # a real dataset's label belongs to no family


def test_only_held_out_kinds_are_named_as_such() -> None:
    assert held_out_in(TRAINING_FAMILY) == []
    assert held_out_in(["Stains", *HELD_OUT_FAMILY, HELD_OUT_FAMILY[0]]) == list(HELD_OUT_FAMILY)
    assert held_out_in(["crack", "foreign"]) == []  # MVTec AD's own labels are not synthetic
    refuse_held_out(TRAINING_FAMILY, "recipe train.yaml, anomalies.kinds")


@pytest.mark.parametrize("kind", HELD_OUT_FAMILY)
def test_refusal_is_one_sentence_naming_kind_source_and_fix(kind: str) -> None:
    with pytest.raises(UserError) as caught:
        refuse_held_out(["Dents", kind], "recipe train.yaml, anomalies.kinds")
    message = str(caught.value)
    assert "\n" not in message and message.count(". ") == 0 and message.endswith(".")
    assert f"'{kind}'" in message and "recipe train.yaml, anomalies.kinds" in message
    assert "--defects training" in message
    family = "transfer" if kind in TRANSFER_FAMILY else "unseen"
    assert f"of the {family} family ({', '.join(FAMILIES[family])})" in message


@pytest.mark.parametrize("kind", HELD_OUT_FAMILY)
def test_training_refuses_a_dataset_with_a_held_out_folder(
    good_tree: Path, tmp_path: Path, kind: str
) -> None:
    write(good_tree / "mug" / "test" / kind / "0.png", object_image(9))
    with pytest.raises(UserError, match=f"training dataset {good_tree} contains .*'{kind}'"):
        run_training(TrainConfig.model_validate(RECIPE), good_tree, tmp_path / "run")
    assert not (tmp_path / "run" / "last.safetensors").exists()


def test_training_refuses_a_render_whose_manifest_lists_a_held_out_kind(
    good_tree: Path, tmp_path: Path
) -> None:
    """Choosing only the clean classes of a test render does not make it training data."""
    manifest = {"generator": "padformer-edge synth", "defect_kinds": ["Stains", "Cracks"]}
    (good_tree / "dataset.json").write_text(json.dumps(manifest))
    recipe = {**RECIPE, "data": {**RECIPE["data"], "categories": ["duck"]}}
    with pytest.raises(UserError, match="'Cracks'"):
        run_training(TrainConfig.model_validate(recipe), good_tree, tmp_path / "run")


def test_a_training_family_dataset_still_trains(good_tree: Path, tmp_path: Path) -> None:
    (good_tree / "dataset.json").write_text(json.dumps({"defect_kinds": list(TRAINING_FAMILY)}))
    for kind in TRAINING_FAMILY:
        shutil.copytree(good_tree / "duck" / "test" / "good", good_tree / "duck" / "test" / kind,
                        dirs_exist_ok=True)  # fmt: skip
    summary = run_training(TrainConfig.model_validate(RECIPE), good_tree, tmp_path / "run")
    assert summary.global_step > 0
