"""The shipped generic model: locator and card, CLI defaults, and ``train --init``.

A tiny-preset checkpoint shipped into a temporary folder stands in for the real generic
model; ``PADFORMER_EDGE_GENERIC_MODEL`` points the locator (and the CLI subprocesses) at it.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import yaml

from padformer_edge import weights
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import file_sha256, load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.progress import Reporter
from padformer_edge_training.release.ship import MAX_BYTES, fused_from_validation, ship
from padformer_edge_training.trainer import LAST_WEIGHTS, run_training
from tests.cli_process import run_cli
from tests.detect_images import product_image, with_defect
from tests.train_helpers import mvtec_like_tree


def _png(path: Path, rgb: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    return path


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trained-looking tiny model (non-default top_k) shipped as float16 with its card."""
    root = tmp_path_factory.mktemp("shipped")
    torch.manual_seed(0)
    model = build_model("tiny", top_k=3)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.01 * torch.randn_like(param))
    source = root / "run" / "model.safetensors"
    metadata = {"global_step": 1234, "data_root": "data/procedural", "train_images": {"a": 5}}
    save_checkpoint(source, model, metadata)
    return ship(source, root / "package", wall_time="3 min", machine="test CPU")


@pytest.fixture
def use_shipped(shipped: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(weights.ENV_VAR, str(shipped))
    return shipped


def test_ship_writes_a_small_float16_file_and_a_complete_card(shipped: Path) -> None:
    source = shipped.parent.parent / "run" / "model.safetensors"
    card = json.loads(shipped.with_suffix(".json").read_text())
    assert set(weights.CARD_FIELDS) <= set(card)
    assert card["sha256"] == file_sha256(shipped) and card["steps"] == 1234
    assert card["data"]["root"] == "data/procedural" and card["preset"] == "tiny"
    assert card["wall_time"] == "3 min" and card["machine"] == "test CPU"
    assert shipped.stat().st_size < 0.55 * source.stat().st_size <= MAX_BYTES
    model, metadata = load_checkpoint(shipped)
    assert model.config.top_k == 3 and metadata["shipped_from"] == file_sha256(source)


def test_a_continued_run_ships_with_its_whole_training_on_the_card(tmp_path: Path) -> None:
    source = tmp_path / "run" / "model.safetensors"
    init = {"path": "/x/generic.safetensors", "sha256": "ab" * 32}
    save_checkpoint(source, build_model("tiny"), {"global_step": 500, "init": init})
    with pytest.raises(UserError, match="--earlier-steps"):
        ship(source, tmp_path / "refused", wall_time="1 min", machine="test CPU")
    shipped = ship(source, tmp_path / "p", wall_time="1 min", machine="CPU", earlier_steps=4275)
    card = json.loads(shipped.with_suffix(".json").read_text())
    assert card["steps"] == 4775 and card["steps_this_run"] == 500
    assert card["continued_from"] == init


def test_ship_stores_the_validated_fused_settings_in_the_model(tmp_path: Path) -> None:
    from tests.model.test_model_edge import SMALL_EDGE

    source = tmp_path / "run" / "model.safetensors"
    save_checkpoint(source, build_model("edge", **SMALL_EDGE), {"global_step": 7})
    chosen = {
        "map": {
            "lab_weight": 0.0, "reference_weight": 12.0, "reference_zoom": 2,
            "reference_turns": True, "consistency_filter": False, "sigma": 4.0,
        },
        "score": {
            "lab_weight": 0.25, "reference_weight": 0.0, "reference_zoom": 1,
            "reference_turns": False, "consistency_filter": True, "sigma": 0.0,
        },
    }  # fmt: skip
    validation = tmp_path / "validation.json"
    validation.write_text(json.dumps({"generic_scoring": chosen}))
    scoring = fused_from_validation(validation)
    shipped = ship(source, tmp_path / "p", "1 min", "CPU", scoring=scoring)
    model, _ = load_checkpoint(shipped)
    assert model.scoring == chosen
    card = json.loads(shipped.with_suffix(".json").read_text())
    assert card["fused"] == {
        "map": {
            "weight": 0.0, "reference_weight": 12.0, "reference_zoom": 2,
            "reference_turns": True, "filter": False, "sigma": 4.0,
        },
        "score": {
            "weight": 0.25, "reference_weight": 0.0, "reference_zoom": 1,
            "reference_turns": False, "filter": True, "sigma": 0.0,
        },
    }  # fmt: skip
    tiny = tmp_path / "tiny.safetensors"
    save_checkpoint(tiny, build_model("tiny"), {"global_step": 7})
    with pytest.raises(UserError, match="no CNN tokens"):
        ship(tiny, tmp_path / "q", "1 min", "CPU", scoring=scoring)
    bad = {**chosen, "map": {**chosen["map"], "lab_weight": 2.0}}
    validation.write_text(json.dumps({"generic_scoring": bad}))
    with pytest.raises(UserError, match=r"map\.lab_weight: input should be less than or equal"):
        fused_from_validation(validation)
    partial = {**chosen, "score": {"lab_weight": 0.0}}
    validation.write_text(json.dumps({"generic_scoring": partial}))
    fix = r"pass benchmarks/validation\.json"
    with pytest.raises(UserError, match=rf"sets no score\.reference_weight; {fix}"):
        fused_from_validation(validation)
    validation.write_text(json.dumps({"generic_fused_lab_weight": 0.0}))
    with pytest.raises(UserError, match=rf"has no generic_scoring; {fix}"):
        fused_from_validation(validation)


def test_earlier_steps_without_a_continued_run_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "model.safetensors"
    save_checkpoint(source, build_model("tiny"), {"global_step": 500})
    with pytest.raises(UserError, match="records none"):
        ship(source, tmp_path / "p", wall_time="1 min", machine="CPU", earlier_steps=10)
    assert not (tmp_path / "p").exists()


def test_the_locator_returns_the_checked_model(use_shipped: Path) -> None:
    assert weights.locate_generic_model() == use_shipped
    assert weights.resolve_model(None) == use_shipped
    assert weights.resolve_model(Path("mine.safetensors")) == Path("mine.safetensors")
    assert weights.resolve_init("generic") == use_shipped
    assert weights.resolve_init(None) is None


def test_no_shipped_model_is_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(weights.ENV_VAR, raising=False)
    monkeypatch.setattr(weights, "package_folder", lambda: tmp_path)
    with pytest.raises(UserError) as err:
        weights.locate_generic_model()
    assert str(err.value).startswith("no generic model is shipped in this install; pass --model")
    monkeypatch.setenv(weights.ENV_VAR, str(tmp_path / "gone.safetensors"))
    with pytest.raises(UserError, match="does not exist; fix or unset"):
        weights.locate_generic_model()
    with pytest.raises(UserError, match=r"--init nothing\.safetensors: no such checkpoint"):
        weights.resolve_init("nothing.safetensors")


def test_a_model_that_differs_from_its_card_is_refused(
    shipped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "generic.safetensors"
    data = bytearray(shipped.read_bytes())
    data[-2] ^= 0x01
    copy.write_bytes(bytes(data))
    monkeypatch.setenv(weights.ENV_VAR, str(copy))
    with pytest.raises(UserError, match=r"has no model card generic\.json"):
        weights.locate_generic_model()
    card = json.loads(shipped.with_suffix(".json").read_text())
    copy.with_suffix(".json").write_text(json.dumps(card))
    with pytest.raises(UserError, match="does not match the sha256 in its card"):
        weights.locate_generic_model()
    del card["machine"]
    copy.with_suffix(".json").write_text(json.dumps(card))
    with pytest.raises(UserError, match="lacks machine"):
        weights.locate_generic_model()


def test_profile_create_and_detect_use_the_shipped_model(shipped: Path, tmp_path: Path) -> None:
    for seed in range(3):
        _png(tmp_path / "refs" / f"good_{seed}.png", product_image(64, 64, seed=seed))
    good = product_image(64, 64, seed=9)
    query = _png(tmp_path / "queries" / "part.png", with_defect(good, (20, 20, 10, 10)))
    env = {weights.ENV_VAR: str(shipped)}
    for name, metric in (("widget", "lab"), ("compared", "compare")):
        created = run_cli(
            "profile", "create", name, "--references", str(tmp_path / "refs"),
            "--root", str(tmp_path / "profiles"), "--device", "cpu", "--passes", "2",
            "--metric", metric, env=env, timeout=600,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
    profile = yaml.safe_load((tmp_path / "profiles" / "widget" / "profile.yaml").read_text())
    assert profile["model"] == {"path": str(shipped), "sha256": file_sha256(shipped)}
    # the comparison names its comparator, not the shipped PADFormer it never reads
    compared = yaml.safe_load((tmp_path / "profiles" / "compared" / "profile.yaml").read_text())
    assert compared["model"] is None
    assert compared["weights"]["sha256"] == compared["detection"]["comparator"]
    detected = run_cli(
        "detect", str(query), "--references", str(tmp_path / "refs"), "--passes", "2",
        "--device", "cpu", "--json", env=env, timeout=600,
    )  # fmt: skip
    assert detected.returncode == 0, detected.stderr
    assert json.loads(detected.stdout)[0]["score"] > 0
    missing = {weights.ENV_VAR: str(tmp_path / "gone.safetensors")}
    refused = run_cli(
        "detect", str(query), "--references", str(tmp_path / "refs"), env=missing, timeout=600
    )
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and len(errors) == 1 and "gone.safetensors" in errors[0]


class StopBeforeTheFirstStep(Reporter):
    """Ctrl-C as the first stage starts: the resume point holds the weights at step 0."""

    def stage_started(self, stage: str, total: int, start: int, **fields: object) -> None:
        raise KeyboardInterrupt


TINY_RECIPE = {
    "model": {"preset": "tiny", "overrides": {"top_k": 5}},  # --init keeps the checkpoint's 3
    "data": {"num_refs": 2, "num_workers": 0, "layout": "folder"},
    "loss": {"perceptual": "none"},
    "optim": {"batch_size": 2, "warmup_steps": 1, "lr": 1e-3},
    "stages": {"within_view": {"epochs": 1}, "cross_view": {"epochs": 1}},
    "checkpoint": {"every_steps": 100},
}


@pytest.fixture(scope="module")
def own_images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's own good photos of one product: the ``folder`` layout."""
    root = mvtec_like_tree(tmp_path_factory.mktemp("own"), {"widget": 6}, True, with_test=False)
    return root / "widget" / "train" / "good"


def test_train_init_starts_from_the_shipped_weights(
    use_shipped: Path, own_images: Path, tmp_path: Path
) -> None:
    recipe = TrainConfig.model_validate(TINY_RECIPE)
    start = weights.resolve_init("generic")
    summary = run_training(
        recipe, own_images, tmp_path / "run", reporter=StopBeforeTheFirstStep(), init=start
    )
    assert summary.interrupted and summary.global_step == 0
    at_step_0, metadata = load_checkpoint(tmp_path / "run" / LAST_WEIGHTS)
    shipped_model, _ = load_checkpoint(use_shipped)
    assert at_step_0.preset_name == "tiny" and at_step_0.config == shipped_model.config
    for name, value in shipped_model.state_dict().items():
        assert torch.equal(at_step_0.state_dict()[name], value), name
    assert metadata["init"] == {"path": str(use_shipped), "sha256": file_sha256(use_shipped)}


def test_train_init_fine_tunes_through_the_cli(
    use_shipped: Path, own_images: Path, tmp_path: Path
) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(TINY_RECIPE))
    env = {weights.ENV_VAR: str(use_shipped)}
    base = ["train", "--config", str(recipe), "--data", str(own_images), "--device", "cpu"]
    tuned = run_cli(
        *base, "--out", str(tmp_path / "tuned"), "--init", "generic", env=env, timeout=600
    )
    assert tuned.returncode == 0, tuned.stderr
    start, _ = load_checkpoint(use_shipped)
    fine, metadata = load_checkpoint(tmp_path / "tuned" / "model.safetensors")
    assert fine.config == start.config and fine.config.top_k == 3  # the recipe says 5
    assert metadata["init"]["sha256"] == file_sha256(use_shipped)
    moved = [
        not torch.equal(fine.state_dict()[k], v)
        for k, v in start.state_dict().items()
        if v.is_floating_point()
    ]
    assert any(moved)  # it trained
    resumed = run_cli(*base, "--out", str(tmp_path / "tuned"), "--resume", env=env, timeout=600)
    assert resumed.returncode == 2 and "started from other weights (--init)" in resumed.stderr
