"""Multi-pass detection: masks, LAB scoring, heatmaps and the cached-reference Detector."""

from padformer_edge.detect.detector import Detection, Detector
from padformer_edge.detect.heatmap import render_overlay, write_heatmap
from padformer_edge.detect.images import ImageReadError, read_image
from padformer_edge.detect.masks import MASK_SCHEDULES, make_masks
from padformer_edge.detect.scoring import ERROR_METRICS

__all__ = [
    "ERROR_METRICS",
    "MASK_SCHEDULES",
    "Detection",
    "Detector",
    "ImageReadError",
    "make_masks",
    "read_image",
    "render_overlay",
    "write_heatmap",
]
