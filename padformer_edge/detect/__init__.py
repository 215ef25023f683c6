"""Multi-pass detection: masks, LAB scoring, heatmaps and the cached-reference Detector.

Names resolve lazily (PEP 562), so that ``detect.settings`` (the detector's settings,
without torch) can be imported by the CLI and the config schemas at no cost.
"""

from __future__ import annotations

from padformer_edge.lazy import lazy_exports

_EXPORTS = {
    "DetectionSettings": "padformer_edge.detect.settings",
    "Detection": "padformer_edge.detect.detector",
    "Detector": "padformer_edge.detect.detector",
    "render_overlay": "padformer_edge.detect.heatmap",
    "write_heatmap": "padformer_edge.detect.heatmap",
    "ImageReadError": "padformer_edge.detect.images",
    "read_image": "padformer_edge.detect.images",
    "MASK_SCHEDULES": "padformer_edge.detect.masks",
    "make_masks": "padformer_edge.detect.masks",
    "ERROR_METRICS": "padformer_edge.detect.scoring",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
