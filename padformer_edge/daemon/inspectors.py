"""One ready Detector per profile, built and warmed up before the daemon says READY.

Several cameras may share a profile (two cameras on one product); they then share one
detector and its cached references, because the references are the expensive part.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from padformer_edge.config import DaemonProfileConfig
from padformer_edge.detect import Detector
from padformer_edge.detect.service import load_references
from padformer_edge.log import get_logger
from padformer_edge.model.checkpoint import file_sha256, load_checkpoint

log = get_logger("daemon")


@dataclass
class Inspector:
    """A product's detector with its decision threshold and model checksum."""

    profile: str
    product: str
    detector: Detector
    threshold: float
    model_sha256: str


def build_inspector(
    name: str,
    profile: DaemonProfileConfig,
    *,
    device: str,
    precision: str,
    model_batch: int,
    base: Path,
) -> Inspector:
    """Load the checkpoint and references of ``profile`` and run one warm-up detection.

    Warming up here moves one-off costs (allocator growth, kernel selection on a GPU)
    out of the first real image's latency and proves the profile works before READY.
    """
    checkpoint, references = base / profile.checkpoint, base / profile.references
    model, _ = load_checkpoint(checkpoint)
    reference_images = load_references(references)
    detector = Detector(
        model,
        reference_images,
        passes=profile.passes,
        mask_ratio=profile.mask_ratio,
        schedule=profile.schedule,
        seed=profile.seed,
        device=device,
        precision=precision,
        max_batch=model_batch,
    )
    detector.detect(reference_images[:1])
    log.info(
        "daemon.profile_ready",
        profile=name,
        product=profile.product,
        references=len(reference_images),
        device=str(detector.device),
    )
    return Inspector(name, profile.product, detector, profile.threshold, file_sha256(checkpoint))
