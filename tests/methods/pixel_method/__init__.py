"""A scoring method that lives outside the product: ``pixel``, the grey difference of a
query to the mean of its references, times its own setting ``gain``.

It is the smallest thing ``methods.interface.ScoringMethod`` asks for (its section of the
detection settings, a torch-free detector, an export and the line detector that reads it,
a signature, selection features), registered at run time by ``methods.registry.register``
in ``tests/methods/test_registered_method.py``: a new method needs no product file edited.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np
from pydantic import Field

from padformer_edge.deploy.verify import verify_files
from padformer_edge.detect.detection import Detection, GroupedDetection, call_timings
from padformer_edge.detect.settings import DetectionSettings, MethodSettings
from padformer_edge.detect.signature import paper_signature
from padformer_edge.files.digest import file_sha256

EXPORT_FILE = "pixel.json"


class PixelSettings(MethodSettings):
    """``metric: pixel`` and its one setting."""

    metric: Literal["pixel"] = Field("pixel", description="the grey difference")
    gain: float = Field(1.0, gt=0.0, description="what the difference is multiplied by")


def pixel_signature(settings: DetectionSettings) -> dict[str, Any]:
    return {**paper_signature("pixel"), "gain": settings.section.gain}


class PixelDetector(GroupedDetection):
    """Per pixel, |grey - mean grey of the references| / 255 times ``gain``; the score is
    the map's maximum."""

    cache_hit = False

    def __init__(
        self, references: Sequence[np.ndarray], settings: DetectionSettings, gain: float
    ) -> None:
        self.settings, self.device, self.max_batch = settings, "cpu", settings.max_batch
        self.images_per_call, self.gain = 2, gain
        self.mean = np.mean([image.astype(np.float32).mean(-1) for image in references], 0)

    @property
    def scoring(self) -> dict[str, Any]:
        return {**paper_signature("pixel"), "gain": self.gain}

    def detect(self, images: Sequence[np.ndarray], *, reconstruction: bool = False) -> list:
        found = []
        for image in images:
            grey = image.astype(np.float32).mean(-1)
            mean = cv2.resize(self.mean, (grey.shape[1], grey.shape[0]))
            amap = (np.abs(grey - mean) / 255.0 * self.gain).astype(np.float32)
            found.append(Detection(float(amap.max()), amap, [], [], call_timings(0, 0, 0)))
        return found


class PixelMethod:
    """The grey difference to the mean reference (a test's method)."""

    name = "pixel"
    metrics = ("pixel",)
    reads_padformer = False
    settings_type = PixelSettings

    def settled(self, settings: DetectionSettings) -> DetectionSettings:
        return settings

    def torch_detector(self, references, settings, padformer, *, cache=None, open_graphs=None):
        return PixelDetector(references, settings, settings.section.gain)

    def line_detector(self, folder, files, references, settings, *, fix, cache, threads):
        verify_files(folder, files, fix)
        record = json.loads((folder / EXPORT_FILE).read_text())
        return PixelDetector(references, settings, record["gain"])

    def export(self, settings: DetectionSettings, out: Path, padformer) -> dict[str, str]:
        (out / EXPORT_FILE).write_text(json.dumps({"gain": settings.section.gain}))
        return {EXPORT_FILE: file_sha256(out / EXPORT_FILE)}

    def signature(self, settings: DetectionSettings, padformer) -> dict[str, Any]:
        return pixel_signature(settings)

    def selection_features(self, images, settings, padformer):
        import torch

        small = [cv2.resize(image, (8, 8)).astype(np.float32).ravel() for image in images]
        return torch.from_numpy(np.stack(small))

    def weights_checked(self, settings: DetectionSettings) -> str:
        return ""


PIXEL = PixelMethod()
