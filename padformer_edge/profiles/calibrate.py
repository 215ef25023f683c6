"""``profile calibrate``: score held-out good (and optionally anomalous) images and store
the threshold, with the score distribution it came from, in ``profile.yaml``. (With
``--from-reviews`` the threshold comes from reviewed scores instead: ``review_calibration``,
which runs without torch.)

Images identical to a reference (same sha256) are left out: a reference is copied into
the query's own reference set, so it reconstructs almost perfectly and would pull the
false-alarm quantile down.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from padformer_edge.anomaly import is_anomalous
from padformer_edge.detect.detection import InspectionDetector
from padformer_edge.detect.images import IMAGE_SUFFIXES, list_images, read_image
from padformer_edge.detect.signature import Signature
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.images.image_stats import image_statistics, statistics_table
from padformer_edge.profiles.create import now_iso
from padformer_edge.profiles.fpr_bounds import rate_bounds, upper_bound_threshold
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.schema import CalibrationResult, FalseAlarmBounds, ScoreSummary
from padformer_edge.profiles.thresholds import (
    COVERAGE_CONFIDENCE,
    MIN_GOOD_IMAGES,
    Threshold,
    anomaly_check,
    false_alarm_threshold,
    good_images_needed,
    summarise,
)
from padformer_edge.profiles.versions import save_profile, version_for
from padformer_edge.reporting.log import get_logger

if TYPE_CHECKING:
    from padformer_edge.model.padformer import PADFormer

Progress = Callable[[int, int], None]
Rule = Literal["quantile", "upper-bound"]


@dataclass(frozen=True)
class CalibrationReport:
    """What ``calibrate`` stored, plus which given images it left out."""

    profile: Profile
    result: CalibrationResult
    skipped_references: list[Path]


def score_files(
    detector: InspectionDetector,
    paths: Sequence[Path],
    progress: Progress | None = None,
    statistics: list[tuple[float, ...]] | None = None,
) -> np.ndarray:
    """Scores of ``paths`` in order, decoding only one model batch of images at a time.

    With ``statistics``, each image's ``image_stats.image_statistics`` is appended to it,
    computed from the pixels already decoded for scoring (the drift watch's reference)."""
    scores: list[float] = []
    for path, image, found in detector.detect_each(paths, read_image):
        if found.no_part:  # a framed profile's: a frame of the belt alone has no score
            raise UserError(
                f"{path} shows no part against the profile's belt photo; calibrate on "
                "frames with the part in view (leave out frames of the empty belt)."
            )
        scores.append(found.score)
        if statistics is not None:
            statistics.append(image_statistics(image))
        if progress is not None:
            progress(len(scores), len(paths))
    return np.asarray(scores, dtype=np.float64)


def image_files(folder: str | Path, what: str) -> list[Path]:
    paths = list_images(folder)
    if not paths:
        raise UserError(
            f"{what} folder {folder} holds no images ({', '.join(IMAGE_SUFFIXES)}); "
            "put the calibration images there."
        )
    return paths


def defect_folders(folder: Path) -> list[Path]:
    """``folder`` itself when it holds images, else its subfolders that do, except
    ``good``: ``synth`` and MAD-Sim put each defect kind in its own folder under
    ``test/`` beside the good ones, and the whole ``test/`` folder should be accepted."""
    if list_images(folder):
        return [folder]
    return sorted(
        sub for sub in folder.iterdir() if sub.is_dir() and sub.name != "good" and list_images(sub)
    )


def anomalous_files(folders: Sequence[str | Path]) -> list[Path]:
    """Every labelled defective image in ``folders`` (each one a folder of images or a
    parent of one folder per defect kind), in a stable order."""
    paths: list[Path] = []
    for given in folders:
        folder = Path(given)
        if not folder.is_dir():
            raise UserError(
                f"anomalous folder {folder} does not exist; pass a folder of defective images "
                "or a parent holding one folder per defect kind."
            )
        kinds = defect_folders(folder)
        if not kinds:
            raise UserError(
                f"anomalous folder {folder} holds no images ({', '.join(IMAGE_SUFFIXES)}), "
                "directly or in subfolders other than good; point --anomalous at the "
                "defective images."
            )
        paths.extend(path for kind in kinds for path in list_images(kind))
    return paths


def calibrate_profile(
    root: str | Path,
    name: str,
    good: str | Path,
    anomalous: Sequence[str | Path] | str | Path | None = None,
    target_fpr: float = 0.01,
    device: str | None = None,
    progress: Progress | None = None,
    rule: Rule = "quantile",
) -> CalibrationReport:
    """Set the profile's threshold from good images so false alarms run at ``target_fpr``
    (``rule`` quantile), or so that ``target_fpr`` is the upper bound of the rate the
    threshold promises (``rule`` upper-bound, which refuses too few images up front)."""
    if not 0.0 < target_fpr < 0.5:
        raise UserError(
            f"--target-fpr {target_fpr} is outside (0, 0.5); give a false-alarm rate such as 0.01."
        )
    profile = load_profile(root, name)
    reference_shas = {entry.sha256 for entry in profile.config.references}
    good_paths, skipped = [], []
    for path in image_files(good, "good"):
        (skipped if file_sha256(path) in reference_shas else good_paths).append(path)
    if len(good_paths) < MIN_GOOD_IMAGES:
        raise UserError(
            f"calibration set {good} has {len(good_paths)} usable good images (references "
            f"excluded); give at least {MIN_GOOD_IMAGES} held-out good images."
        )
    if isinstance(anomalous, str | Path):
        anomalous = [anomalous]
    bad_paths = anomalous_files(anomalous) if anomalous else []
    warnings = []
    needed = good_images_needed(target_fpr)
    if len(good_paths) < needed and rule == "upper-bound":
        raise UserError(
            f"--upper-bound: {len(good_paths)} good images cannot promise a false-alarm rate "
            f"of {target_fpr:g} with {COVERAGE_CONFIDENCE:.0%} confidence, whatever the "
            f"threshold; give at least {needed} held-out good images, or drop --upper-bound."
        )
    if len(good_paths) < needed:
        warnings.append(
            f"{len(good_paths)} good images are too few for a false-alarm rate of "
            f"{target_fpr:g}: at least {needed} are needed for a 95% chance that one of "
            "them lies in the tail the threshold cuts; the real rate may be higher "
            "(the rate this threshold promises is reported with it)."
        )
    if skipped:
        warnings.append(f"{len(skipped)} good images are references and were left out.")
    detector = profile.build_detector(device, calibrating=True)
    result = measure_calibration(
        profile, detector, good_paths, bad_paths, target_fpr, warnings, progress, rule
    )
    if load_profile(root, name).config.pinned != profile.config.pinned:
        raise UserError(
            f"profile '{name}' was pointed at another model while calibrating; "
            "run `padformer-edge profile calibrate` again."
        )
    config = profile.config.model_copy(update={"calibration": result})
    save_profile(profile, config.model_copy(update={"version": version_for(profile, config)}))
    # the warnings go back to the caller with the result (``profile calibrate`` prints
    # each once, the demo states what the threshold rests on); logged here as well, they
    # printed twice on a terminal
    log = get_logger("profiles")
    log.info("profile.calibrated", name=name, threshold=result.threshold, good=len(good_paths))
    return CalibrationReport(load_profile(root, name), result, skipped)


def measure_calibration(
    profile: Profile,
    detector: InspectionDetector,
    good_paths: Sequence[Path],
    bad_paths: Sequence[Path],
    target_fpr: float,
    warnings: list[str],
    progress: Progress | None = None,
    rule: Rule = "quantile",
) -> CalibrationResult:
    """The calibration of ``profile`` run by ``detector``: held-out good images set the
    threshold, labelled anomalous ones (if any) report recall at it. Shared by
    ``calibrate`` and ``refresh`` (which measures on the good images it held aside). The
    good images' scores and luminance statistics are kept for the daemon's drift watch."""
    total = len(good_paths) + len(bad_paths)

    def report(offset: int) -> Progress | None:
        return None if progress is None else lambda done, _: progress(offset + done, total)

    good_statistics: list[tuple[float, ...]] = []
    good_scores = score_files(detector, good_paths, report(0), good_statistics)
    bad_scores = score_files(detector, bad_paths, report(len(good_paths)))
    threshold = choose_threshold(good_scores, target_fpr, rule)
    bounds = rate_bounds(good_scores, threshold.value, COVERAGE_CONFIDENCE)
    everything = np.concatenate([good_scores, bad_scores])
    return CalibrationResult(
        threshold=threshold.value,
        target_fpr=target_fpr,
        good_quantile=threshold.quantile,
        margin=threshold.margin,
        observed_fpr=float(is_anomalous(good_scores, threshold.value).mean()),
        good=summarise(good_scores),
        anomalous=anomaly_check(good_scores, bad_scores, threshold.value) if bad_paths else None,
        normalise_min=float(everything.min()),
        normalise_max=float(everything.max()),
        model_sha256=profile.model_sha256,
        calibrated_at=now_iso(),
        warnings=warnings,
        good_scores=np.sort(good_scores).tolist(),
        good_image_stats=statistics_table(good_statistics),
        scoring=detector.scoring,
        rule=rule,
        rate_bounds=FalseAlarmBounds(
            count=bounds.count,
            exceeding=bounds.exceeding,
            low=bounds.low,
            high=bounds.high,
            confidence=bounds.confidence,
            images_needed=good_images_needed(target_fpr),
        ),
    )


def choose_threshold(good: np.ndarray, target_fpr: float, rule: Rule) -> Threshold:
    """The threshold by ``rule``: quantile plus margin (``false_alarm_threshold``), or
    the lowest good score whose promised rate is within ``target_fpr`` at its upper
    bound (``fpr_bounds.upper_bound_threshold``; no margin: the bound is the margin)."""
    if rule == "quantile":
        return false_alarm_threshold(good, target_fpr)
    value = upper_bound_threshold(good, target_fpr, COVERAGE_CONFIDENCE)
    if value is None:
        raise UserError(
            f"--upper-bound: {good.size} good scores cannot promise a false-alarm rate of "
            f"{target_fpr:g}; give at least {good_images_needed(target_fpr)} good images."
        )
    return Threshold(value, value, 0.0)


def scoring_of(profile: Profile) -> Signature:
    """The profile's scoring signature, from its method and detection settings alone (a
    PADFormer method reads the checkpoint)."""
    from padformer_edge.model.checkpoint import load_checkpoint

    def padformer() -> PADFormer:
        return load_checkpoint(profile.model_path)[0]

    signature = profile.method.signature(profile.detection, padformer)
    if profile.config.background is not None:
        from padformer_edge.detect.framed import framing_signature  # as FramedDetector's

        signature = {**signature, "framing": framing_signature(profile.config.background.sha256)}
    if (ignored := profile.ignored_regions()) is not None:  # as RegionsDetector.scoring
        signature = {**signature, "ignore_regions": ignored.signature}
    return signature


def pin_threshold(profile: Profile, threshold: float) -> Profile:
    """Give ``profile`` a threshold chosen rather than measured, with no score summary.

    Tests and benchmarks decide which results count as anomalies; this records their
    choice in the same ``calibration`` block the daemon reads, stamped with the model's
    sha256 so a later model change still invalidates it.
    """
    empty = ScoreSummary(count=1, min=0.0, max=0.0, mean=0.0, std=0.0, p50=0.0, p90=0.0, p99=0.0)
    calibration = CalibrationResult(
        threshold=threshold,
        target_fpr=0.01,
        good_quantile=0.99,
        margin=0.0,
        observed_fpr=0.0,
        good=empty,
        normalise_min=0.0,
        normalise_max=1.0,
        model_sha256=profile.model_sha256,
        calibrated_at=now_iso(),
        scoring=scoring_of(profile),
    )
    config = profile.config.model_copy(update={"calibration": calibration})
    return save_profile(
        profile, config.model_copy(update={"version": version_for(profile, config)})
    )
