"""One ready Detector per profile, built and warmed up before the daemon says READY.

Several cameras may share a profile (two cameras on one product); they then share one
detector and its cached references, because the references are the expensive part.
A profile without a calibrated threshold is refused here, at start, rather than
producing results whose anomaly flag means nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from padformer_edge.detect.images import read_image
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.reporting.log import get_logger

if TYPE_CHECKING:  # a protocol: naming it loads no method and no runtime
    from padformer_edge.detect.detection import InspectionDetector

log = get_logger("daemon")


@dataclass
class Inspector:
    """A product's detector with its decision threshold and model checksum."""

    profile: str
    detector: InspectionDetector
    threshold: float
    model_sha256: str
    good_scores: list[float] | None = None
    """The calibration's good scores, the drift test's reference (None: not kept)."""
    good_image_stats: dict[str, list[float]] | None = None
    """The good calibration images' luminance percentiles, the image drift test's
    reference (None: calibrated before they were kept; that test is off)."""
    target_fpr: float = 0.01
    """The calibrated false-alarm rate, the drift test's expected flagged rate."""
    version: int = 1
    """The profile version (``profile.yaml``'s ``version``) every result records."""
    auto_limit: float | None = None
    """Scores at or below this make an unreviewed part a reference candidate (a profile
    that opted in with ``growth.auto_candidates``); None: only reviewed parts do."""
    auto_max_pending: int = 0


def open_profile(root: Path, name: str) -> tuple[Profile, float]:
    """Profile ``name`` and its threshold, or the ``UserError`` that stops start-up.

    Cheap (a YAML file and a few checks), so the daemon runs it for every profile before
    it creates or migrates the database: a mistyped profile name leaves nothing behind.
    """
    profile = load_profile(root, name)
    return profile, profile.require_threshold()


def build_inspector(
    profile: Profile,
    threshold: float,
    device: str | None,
    runtime: str | None = None,
    batch: int = 1,
) -> Inspector:
    """A ready detector for an opened profile (checksum-verified) on ``device`` and
    ``runtime`` when given (the daemon's overrides), warmed up once on a full batch of
    ``batch`` images (the worker's ``max_batch``).

    Warming up here moves one-off costs (allocator growth, kernel selection on a GPU)
    out of the first real image's latency and proves the profile works before READY.
    The batch is the largest the worker sends because memory follows it: one image
    warmed the heap (and onnxruntime's arena) for one, and the first backlog that
    filled a batch grew the resident set by hundreds of MB on the demo profile, long
    after start (``benchmarks/soak.py``). Warmed on the largest batch, every smaller one
    fits in memory already held, and the daemon's peak is reached before READY.
    """
    detector = profile.build_detector(device, runtime)
    detector.detect([read_image(profile.reference_paths[0])] * batch)
    log.info(
        "daemon.profile_ready",
        profile=profile.name,
        references=len(profile.reference_paths),
        device=str(detector.device),
        runtime=runtime or profile.detection.runtime,
        threshold=threshold,
        warmup_batch=batch,
    )
    calibration = profile.calibration
    assert calibration is not None  # open_profile refused a profile without a threshold
    return Inspector(
        profile.name, detector, threshold, profile.model_sha256,
        good_scores=calibration.good_scores, target_fpr=calibration.target_fpr,
        good_image_stats=calibration.good_image_stats,
        version=profile.config.version, auto_limit=auto_limit(profile),
        auto_max_pending=profile.config.growth.auto_max_pending,
    )  # fmt: skip


def auto_limit(profile: Profile) -> float | None:
    """The score at or below which the daemon proposes a part as a reference candidate
    by itself: the ``growth.auto_quantile`` quantile of the good calibration scores, so
    only parts more typical than most held-out good ones qualify. None unless the
    profile opted in and kept its good scores."""
    growth, calibration = profile.config.growth, profile.calibration
    if not growth.auto_candidates or calibration is None or not calibration.good_scores:
        return None
    scores = sorted(calibration.good_scores)
    return scores[int(growth.auto_quantile * (len(scores) - 1))]
