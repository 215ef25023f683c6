"""create -> calibrate -> test on rendered synthetic data with a tiny random-weight model.

Random weights are enough: these tests pin how the threshold is derived from the scores
the profile itself produces, not how well a trained model separates defects.
"""

from __future__ import annotations

import math
import shutil

import cv2
import numpy as np
import pytest

from padformer_edge.config import load_config
from padformer_edge.daemon.drift import WindowTests
from padformer_edge.daemon.settings import DriftConfig
from padformer_edge.detect.images import read_image
from padformer_edge.errors import UserError
from padformer_edge.images.image_stats import NAMES, image_statistics, statistics_table
from padformer_edge.profiles.calibrate import calibrate_profile, pin_threshold, score_files
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.layout import PROFILE_FILE
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.schema import ProfileConfig
from padformer_edge.profiles.thresholds import MIN_GOOD_IMAGES, confusion_at
from padformer_edge.profiles.verdicts import inspect_images
from padformer_edge.profiles.versions import kept_versions, version_folder
from tests.profiles.conftest import FAST, VIEWS, write_checkpoint

TARGET = 0.1  # 40 good images cover a 10 % tail (29 needed), so no warning is expected


@pytest.fixture
def made(tmp_path, product, checkpoint):
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 4, FAST)
    return root


def test_create_calibrate_test(made, product, tmp_path):
    good = sorted((product / "test" / "good").glob("*.png"))
    report = calibrate_profile(made, "duck", product / "test" / "good", product / "test" / "Burrs",
                               TARGET)  # fmt: skip
    profile = load_profile(made, "duck")
    result = profile.calibration
    assert result == report.result and result.warnings == [] and report.skipped_references == []
    assert result.good.count == VIEWS.test_good
    # the stored quantile is the one of the scores the profile's own detector gives
    scores = score_files(profile.build_detector(), good)
    assert result.good_quantile == pytest.approx(np.quantile(scores, 1 - TARGET))
    # the scores themselves are kept, sorted: the daemon's drift reference
    np.testing.assert_allclose(result.good_scores, np.sort(scores), rtol=1e-9)
    # and each good image's luminance percentiles, in image order: its image reference
    assert result.good_image_stats == statistics_table([image_statistics(read_image(p))
                                                        for p in good])  # fmt: skip
    assert result.good_quantile < profile.threshold <= result.good_quantile + result.margin + 1e-9
    assert result.observed_fpr == pytest.approx(float((scores > profile.threshold).mean()))
    sampling_error = math.sqrt(TARGET * (1 - TARGET) / scores.size)
    assert abs(result.observed_fpr - TARGET) <= 2 * sampling_error
    check = result.anomalous
    burrs = score_files(profile.build_detector(), sorted((product / "test" / "Burrs").iterdir()))
    assert check is not None and check.count == VIEWS.test_per_defect
    assert check.recall_at_threshold == pytest.approx(float((burrs > profile.threshold).mean()))
    best = confusion_at(scores, burrs, check.f1_optimal_threshold)[2]
    assert best == pytest.approx(check.f1_optimal) and best >= check.f1_at_threshold
    assert profile.normalised_score(profile.threshold) == 0.5
    assert profile.normalised_score(result.normalise_max + 1e9) == 1.0
    verdicts = inspect_images(
        made, "duck", [good[0], product / "test" / "Burrs" / "0.png"], tmp_path / "heatmaps"
    )
    for verdict in verdicts:
        assert verdict.anomalous == (verdict.score > profile.threshold)
        assert (verdict.normalised > 0.5) == verdict.anomalous
        assert cv2.imread(str(verdict.heatmap)).shape == (64, 64, 3)
    assert verdicts[0].score in scores


def test_too_small_calibration_set_leaves_the_profile_untouched(made, product, tmp_path):
    small = tmp_path / "good"
    small.mkdir()
    for path in sorted((product / "test" / "good").glob("*.png"))[: MIN_GOOD_IMAGES - 1]:
        shutil.copy(path, small / path.name)
    before = (made / "duck" / "profile.yaml").read_bytes()
    with pytest.raises(UserError, match=f"has {MIN_GOOD_IMAGES - 1} usable good images"):
        calibrate_profile(made, "duck", small, target_fpr=TARGET)
    assert (made / "duck" / "profile.yaml").read_bytes() == before


def test_references_are_never_calibration_images(made, product, tmp_path):
    mixed = tmp_path / "good"
    shutil.copytree(product / "test" / "good", mixed)
    for path in load_profile(made, "duck").reference_paths:
        shutil.copy(path, mixed / f"ref_{path.name}")
    report = calibrate_profile(made, "duck", mixed, target_fpr=TARGET)
    assert sorted(p.name for p in report.skipped_references) == sorted(
        f"ref_{p.name}" for p in load_profile(made, "duck").reference_paths
    )
    assert report.result.good.count == VIEWS.test_good
    assert "4 good images are references and were left out" in report.result.warnings[0]


def test_warns_when_the_good_set_cannot_show_the_tail(made, product):
    report = calibrate_profile(made, "duck", product / "test" / "good", target_fpr=0.01)
    assert report.result.warnings == [
        "40 good images are too few for a false-alarm rate of 0.01: at least 299 are needed "
        "for a 95% chance that one of them lies in the tail the threshold cuts; the real rate "
        "may be higher (the rate this threshold promises is reported with it)."
    ]
    bounds = report.result.rate_bounds  # what "may be higher" comes to: the rate's bounds
    assert bounds is not None and bounds.images_needed == 299 and bounds.count == 40
    assert bounds.high > 0.01 and bounds.low <= report.result.observed_fpr <= bounds.high


def test_changed_checkpoint_stops_calibration(made, product, checkpoint):
    before = (made / "duck" / "profile.yaml").read_bytes()
    write_checkpoint(checkpoint, seed=3)
    with pytest.raises(UserError, match="changed since the profile was made"):
        calibrate_profile(made, "duck", product / "test" / "good", target_fpr=TARGET)
    assert (made / "duck" / "profile.yaml").read_bytes() == before


@pytest.mark.parametrize("fpr", [0.0, 0.5, -0.1])
def test_target_fpr_must_be_a_small_rate(made, product, fpr):
    with pytest.raises(UserError, match=r"--target-fpr .* is outside"):
        calibrate_profile(made, "duck", product / "test" / "good", target_fpr=fpr)


def test_a_threshold_only_holds_for_the_scoring_it_was_calibrated_under(made, product, tmp_path):
    """The threshold records how its scores were computed; a profile whose scoring has
    changed since (another metric in its file, a version that reads the passes another
    way) is refused with the command that fixes it, until it is calibrated again."""
    import yaml

    calibrate_profile(made, "duck", product / "test" / "good", None, TARGET)
    profile = load_profile(made, "duck")
    detector = profile.build_detector()
    assert profile.calibration.scoring == detector.scoring
    paper = {"consistency_filter": True, "sigma": 0.0}
    assert detector.scoring == {
        "metric": "lab", "map": paper, "score": paper, "hidden_patches_only": False
    }  # fmt: skip
    path = profile.folder / "profile.yaml"
    calibrated = yaml.safe_load(path.read_text())

    def rewrite(change) -> None:
        data = yaml.safe_load(yaml.safe_dump(calibrated))
        change(data)
        path.write_text(yaml.safe_dump(data))

    rewrite(lambda d: d["detection"].update(metric="rgb"))  # edited after calibrating
    with pytest.raises(UserError, match=r"calibrated on scores computed another way \(lab;"):
        load_profile(made, "duck").build_detector()
    with pytest.raises(UserError, match="run `padformer-edge profile calibrate duck --good DIR`"):
        inspect_images(made, "duck", [product / "test" / "good" / "0.png"], tmp_path / "h")
    # a file from before the scoring was recorded: the paper's readouts never changed
    rewrite(lambda d: d["calibration"].pop("scoring"))
    legacy = load_profile(made, "duck")
    assert legacy.build_detector().scoring == detector.scoring
    # ... but the fused metric's readouts did, so such a file is refused for it
    mix = {"lab_weight": 0.25, "reference_weight": 0.0, "reference_zoom": 1}
    fused = {
        **detector.scoring,
        "metric": "fused",
        "map": {**mix, "reference_turns": False, "consistency_filter": False, "sigma": 4.0},
    }
    with pytest.raises(UserError, match="calibrated on scores computed another way"):
        legacy.check_scoring(fused)
    # a file calibrated by a version that recorded the signature as a line of text
    rewrite(
        lambda d: d["calibration"].update(
            scoring="lab; map: filtered, sigma 0; score: filtered, sigma 0"
        )
    )
    assert load_profile(made, "duck").build_detector().scoring == detector.scoring
    rewrite(
        lambda d: d["calibration"].update(
            scoring="lab; map: mean, sigma 2; score: filtered, sigma 0"
        )
    )
    with pytest.raises(UserError, match=r"another way \(lab; map: mean, sigma 2"):
        load_profile(made, "duck").build_detector()
    calibrate_profile(made, "duck", product / "test" / "good", None, TARGET)  # always allowed
    assert load_profile(made, "duck").calibration.scoring == detector.scoring


def test_a_new_threshold_is_a_new_version_and_the_old_one_is_kept(made, product):
    """The first threshold of a new profile is still version 1 (nothing was scored
    without one); a later one is a new version, the replaced file kept for rollback, so
    an inspection's profile_version names exactly the threshold that scored it."""
    calibrate_profile(made, "duck", product / "test" / "good", target_fpr=TARGET)
    profile = load_profile(made, "duck")
    first = profile.threshold
    assert profile.config.version == 1 and kept_versions(profile) == []
    assert pin_threshold(profile, first).config.version == 1  # the same threshold: no change
    raised = pin_threshold(profile, first + 1.0)
    assert (raised.config.version, raised.threshold) == (2, first + 1.0)
    assert kept_versions(raised) == [1]
    kept = load_config(version_folder(raised, 1) / PROFILE_FILE, ProfileConfig)
    assert (kept.version, kept.calibration.threshold) == (1, first)


def test_image_statistics_round_trip_and_old_profiles_keep_working(made, product):
    """``profile.yaml`` with the image statistics reads back to the same calibration; one
    written before they were kept (the key absent) still loads, with the image test off
    (the daemon's window runs the two score tests only); a table whose columns differ in
    length is refused by the schema, naming the columns."""
    import yaml

    calibrate_profile(made, "duck", product / "test" / "good", None, TARGET)
    path = made / "duck" / PROFILE_FILE
    stored = load_config(path, ProfileConfig)
    table = stored.calibration.good_image_stats
    assert list(table) == list(NAMES) and {len(v) for v in table.values()} == {VIEWS.test_good}
    again = ProfileConfig.model_validate(yaml.safe_load(yaml.safe_dump(
        stored.model_dump(mode="json"))))  # fmt: skip
    assert again == stored
    config = DriftConfig()
    calibration = stored.calibration
    assert WindowTests(config, calibration.good_scores, calibration.target_fpr,
                       calibration.threshold, calibration.good_image_stats).tests == 5  # fmt: skip

    data = yaml.safe_load(path.read_text())
    del data["calibration"]["good_image_stats"]
    path.write_text(yaml.safe_dump(data))
    old = load_profile(made, "duck").calibration
    assert old.good_image_stats is None and old.threshold == calibration.threshold
    assert WindowTests(config, old.good_scores, old.target_fpr, old.threshold,
                       old.good_image_stats).tests == 2  # fmt: skip

    data["calibration"]["good_image_stats"] = {**table, "luminance_p90": table["luminance_p90"][1:]}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(UserError, match="every statistic needs one value per image"):
        load_profile(made, "duck")
