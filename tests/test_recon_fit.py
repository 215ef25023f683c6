"""The reconstruction-fit benchmark's measurements: masked-patch error and the sampling."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from padformer_edge.detect.detector import Detector
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge_training.evaluation.recon_fit import masked_error, sample_images
from tests.detect_double import CleanReconstructor


def write_png(path, colour) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.full((32, 32, 3), colour[::-1], np.uint8))


def test_masked_error_counts_hidden_patches_only(tmp_path):
    # the double copies visible patches and paints hidden ones in the references' colour
    query, reference = (200, 40, 90), (100, 40, 90)
    write_png(tmp_path / "query.png", query)
    references = [np.full((32, 32, 3), reference, np.uint8)] * 4
    detector = Detector(CleanReconstructor(), references, DetectionSettings(passes=5, device="cpu"))
    error = masked_error(detector, tmp_path / "query.png")
    # only red differs, by 100/255 on every hidden pixel; visible pixels would dilute it
    assert error == pytest.approx((100 / 255) ** 2 / 3, rel=1e-4)


def test_references_come_from_training_views_and_never_the_image(tmp_path):
    for i in range(6):
        write_png(tmp_path / "widget" / "train" / "good" / f"{i}.png", (i * 20, 0, 0))
    for i in range(3):
        write_png(tmp_path / "widget" / "test" / "good" / f"{i}.png", (0, i * 20, 0))
    chosen = sample_images(tmp_path, per_class=3, seed=0)
    assert [split for split, *_ in chosen] == ["train"] * 3 + ["held-out"] * 3
    for split, image, references in chosen:
        assert image.parent.parent.name == ("train" if split == "train" else "test")
        assert len(references) == 4 and image not in references
        assert all(ref.parent.parent.name == "train" for ref in references)
    assert sample_images(tmp_path, per_class=3, seed=0) == chosen
