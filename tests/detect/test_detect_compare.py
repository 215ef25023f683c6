"""The ``compare`` metric: the shipped comparator as the detector's score, its card, its
signature, and a profile moved onto it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from padformer_edge import models
from padformer_edge.detect.comparison import CompareMetric, compare, read_score, reference_cells
from padformer_edge.detect.detector import Detector
from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.detect.scoring import build_metric
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.detect.signature import scoring_signature, signature_text
from padformer_edge.digest import file_sha256
from padformer_edge.errors import UserError
from padformer_edge.model.comparator import ComparatorConfig, ComparisonModel
from padformer_edge.model.comparator_checkpoint import load_comparator, save_comparator
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile, set_model
from padformer_edge.profiles.profile import load_profile
from tests.detect_images import product_image, with_defect
from tests.line.make_fixture import write_image

CPU = torch.device("cpu")
SETTINGS = DetectionSettings(passes=2, device="cpu", metric="compare")


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model("tiny").eval()


@pytest.fixture(scope="module")
def references() -> list[np.ndarray]:
    return [product_image(80, 120, seed=s) for s in range(3)]


@pytest.fixture(scope="module")
def queries() -> list[np.ndarray]:
    good = product_image(80, 120, seed=1)  # a reference itself, and with a square pasted
    return [good, with_defect(good, (30, 40, 16, 16))]


def another_comparator(folder: Path) -> Path:
    """A comparator with other (random) weights and the card that vouches for it."""
    torch.manual_seed(7)
    net = ComparisonModel(ComparatorConfig(aligned_k=0, use_stn=False, dim=32, depth=1))
    torch.nn.init.normal_(net.comparator.head.weight, std=0.5)  # a correction that is not 0
    path = folder / "other-comparator.safetensors"
    save_comparator(path, net, {"step": 0})
    card = {f: "test" for f in models.CARD_FIELDS} | {"sha256": file_sha256(path)}
    models.card_path(path).write_text(json.dumps(card))
    return path


def test_the_shipped_comparator_is_found_and_checked_against_its_card() -> None:
    path = models.locate_comparator()
    card = models.read_card(path)
    assert card["sha256"] == file_sha256(path)
    net, metadata = load_comparator(path)
    assert card["steps"] == metadata["step"] and not net.config.aligned_k


def test_a_comparator_that_differs_from_its_card_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "comparator.safetensors"
    shutil.copyfile(models.locate_comparator(), copy)
    card = models.read_card(models.locate_comparator())
    models.card_path(copy).write_text(json.dumps(card | {"sha256": "0" * 64}))
    monkeypatch.setenv(models.COMPARATOR_ENV_VAR, str(copy))
    with pytest.raises(UserError, match="does not match the sha256 in its card"):
        models.locate_comparator()
    monkeypatch.setenv(models.COMPARATOR_ENV_VAR, str(tmp_path / "gone.safetensors"))
    with pytest.raises(UserError, match="PADFORMER_EDGE_COMPARATOR points at"):
        models.locate_comparator()


def test_the_detector_scores_exactly_what_the_comparator_reads(model, references, queries) -> None:
    """The detector's score and map are the comparator's per-cell scores read as the
    evaluation reads them (upsampled, smoothed, maximum): one computation, two callers."""
    detector = Detector(model, references, SETTINGS)
    assert isinstance(detector.metric, CompareMetric) and not detector.reads_passes
    found = detector.detect(queries)
    comparator, _ = load_comparator(models.locate_comparator())
    cells = reference_cells(comparator, [to_unit_tensor(r, CPU) for r in references])
    expected = compare(comparator, [to_unit_tensor(q, CPU) for q in queries], cells).score
    for detection, query, cell_scores in zip(found, queries, expected, strict=True):
        amap = read_score(cell_scores, query.shape[:2], comparator.config.input_size)
        assert detection.anomaly_map.shape == query.shape[:2]
        np.testing.assert_array_equal(detection.anomaly_map, amap.numpy())
        assert detection.score == float(amap.max())
        assert detection.pass_mean_error == []  # no reconstruction pass ran
    assert found[1].score > found[0].score  # the pasted square is seen


def test_other_references_change_the_score(model, references, queries) -> None:
    first = Detector(model, references, SETTINGS).detect(queries[:1])[0].score
    other = [product_image(80, 120, seed=s) for s in (11, 12)]
    assert Detector(model, other, SETTINGS).detect(queries[:1])[0].score != first


def test_the_signature_names_the_comparator_weights(
    model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = scoring_signature("compare", build_metric("compare", model))
    assert shipped["comparator"] == file_sha256(models.locate_comparator())
    assert "comparator " + shipped["comparator"][:12] in signature_text(shipped)
    monkeypatch.setenv(models.COMPARATOR_ENV_VAR, str(another_comparator(tmp_path)))
    other = scoring_signature("compare", build_metric("compare", model))
    assert other["comparator"] != shipped["comparator"]
    assert {k: v for k, v in other.items() if k != "comparator"} == {
        k: v for k, v in shipped.items() if k != "comparator"
    }


def test_a_threshold_from_one_comparator_is_refused_with_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references
) -> None:
    root = make_sources(tmp_path, references)
    profile = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=SETTINGS
    ).profile
    pin_threshold(profile, 0.3)
    load_profile(root / "profiles", "part").build_detector()  # the shipped one: accepted
    monkeypatch.setenv(models.COMPARATOR_ENV_VAR, str(another_comparator(tmp_path)))
    with pytest.raises(UserError, match="calibrate"):
        load_profile(root / "profiles", "part").build_detector()


def make_sources(tmp_path: Path, references: list[np.ndarray]) -> Path:
    from padformer_edge.model.checkpoint import save_checkpoint

    torch.manual_seed(0)
    save_checkpoint(tmp_path / "model.safetensors", build_model("tiny"))
    for index, image in enumerate(references):
        write_image(tmp_path / f"refs/{index}.png", image)
    return tmp_path


def test_set_model_moves_a_profile_to_the_comparison_and_drops_its_threshold(
    tmp_path: Path, references
) -> None:
    root = make_sources(tmp_path, references)
    fast = DetectionSettings(passes=2, device="cpu")
    made = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=fast
    ).profile
    pin_threshold(made, 0.5)
    moved = set_model(root / "profiles", "part", None, "compare")
    assert moved.detection.metric == "compare" and moved.threshold is None
    assert moved.model_sha256 == made.model_sha256  # the checkpoint stays
    assert moved.detection.passes == fast.passes  # every other setting too
    assert isinstance(moved.build_detector().metric, CompareMetric)


def test_scoring_settings_under_compare_are_refused_not_ignored() -> None:
    from padformer_edge.cli.detection_options import detection_settings

    params = {
        "passes": 2, "mask_ratio": 0.4, "schedule": "random", "metric": "compare", "seed": 0,
        "device": "cpu", "precision": "fp32", "batch_size": 4, "scoring": ["map.sigma=4"],
    }  # fmt: skip
    with pytest.raises(UserError, match="metric compare reads none of them"):
        detection_settings(params)
    assert detection_settings({**params, "metric": "fused"}).scoring.map.sigma == 4


def earlier_sha256() -> str:
    return models.read_card(models.package_folder() / models.EARLIER_COMPARATORS[0])["sha256"]


def test_the_default_comparator_is_shipped_beside_the_earlier_one(monkeypatch) -> None:
    """Without the variable: the default is the package's newest comparator, checked
    against its card, and the earlier one is found by the sha256 a profile records."""
    monkeypatch.delenv(models.COMPARATOR_ENV_VAR)
    default = models.locate_comparator()
    assert default == models.package_folder() / models.COMPARATOR_NAME
    net, metadata = load_comparator(default)
    card = models.read_card(default)
    assert ComparatorConfig(**card["config"]) == net.config and card["steps"] == metadata["step"]
    earlier = models.locate_comparator(earlier_sha256())
    assert earlier.name == models.EARLIER_COMPARATORS[0] and earlier != default
    with pytest.raises(UserError, match="profile set-model NAME --metric compare"):
        models.locate_comparator("0" * 64)


def test_a_profile_keeps_the_comparator_it_was_made_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references
) -> None:
    """A ``compare`` profile records its comparator's sha256 and scores with it after a
    newer default ships; ``doctor`` names the move, and ``set-model`` makes it."""
    from padformer_edge.doctor import earlier_score

    monkeypatch.delenv(models.COMPARATOR_ENV_VAR)
    root = make_sources(tmp_path, references)
    on_earlier = SETTINGS.replace(comparator=earlier_sha256())
    profile = create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=on_earlier
    ).profile
    pin_threshold(profile, 0.3)
    profile = load_profile(root / "profiles", "part")
    assert profile.detection.comparator == earlier_sha256()
    assert profile.build_detector().metric.sha256 == earlier_sha256()  # threshold accepted
    hint = earlier_score(profile)
    assert "earlier comparator (192 px)" in hint and "set-model part --metric compare" in hint
    moved = set_model(root / "profiles", "part", None, "compare")
    default = file_sha256(models.locate_comparator())
    assert moved.detection.comparator == default != earlier_sha256()
    assert moved.threshold is None and earlier_score(moved) == ""
    fresh = create_profile(
        root / "profiles", "new", root / "model.safetensors", root / "refs", settings=SETTINGS
    ).profile
    assert fresh.detection.comparator == default  # made now: the default, named


def test_a_compare_profile_that_named_no_comparator_reads_the_earlier_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, references
) -> None:
    """Profiles written before comparators were named were made with the earlier one
    (or the one their calibration names): that is what they load with."""
    import yaml

    from padformer_edge.profiles.schema import ProfileConfig

    monkeypatch.delenv(models.COMPARATOR_ENV_VAR)
    root = make_sources(tmp_path, references)
    create_profile(
        root / "profiles", "part", root / "model.safetensors", root / "refs", settings=SETTINGS
    )
    file = root / "profiles/part/profile.yaml"
    written = yaml.safe_load(file.read_text())
    del written["detection"]["comparator"]
    file.write_text(yaml.safe_dump(written))
    assert load_profile(root / "profiles", "part").detection.comparator == earlier_sha256()
    calibrated = {**written, "calibration": {"scoring": {"comparator": "a" * 64}}}
    assert ProfileConfig._name_the_comparator(calibrated)["detection"]["comparator"] == "a" * 64
    fused = {**written, "detection": {**written["detection"], "metric": "fused"}}
    assert "comparator" not in ProfileConfig._name_the_comparator(fused)["detection"]


def test_a_comparator_under_another_metric_is_refused() -> None:
    with pytest.raises(ValueError, match="read by metric compare only"):
        DetectionSettings(metric="fused", comparator="a" * 64)
