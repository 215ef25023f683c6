"""Anomaly heatmaps as files: a colour overlay for people and the raw map for tools.

Files are written to a temporary name in the destination folder and moved into place
with ``os.replace``, so a viewer, a sync job or a crashed run never sees half a PNG.
"""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np

from padformer_edge.atomic import write_atomic

HEATMAP_FIX = "choose a writable --out folder"

OVERLAY_ALPHA = 0.5  # equal weight: the defect stays visible under the colour


def render_overlay(
    image: np.ndarray, anomaly_map: np.ndarray, score: float, vmax: float | None = None
) -> np.ndarray:
    """A BGR ``uint8`` picture: the map in the JET colour map blended on the image,
    with the score printed in the top-left corner.

    ``vmax`` fixes the value drawn as full red so that overlays of several images can be
    compared; without it each map is scaled to its own maximum.
    """
    top = float(anomaly_map.max()) if vmax is None else float(vmax)
    scaled = np.clip(anomaly_map / top, 0.0, 1.0) if top > 0 else np.zeros_like(anomaly_map)
    colour = cv2.applyColorMap((scaled * 255.0).round().astype(np.uint8), cv2.COLORMAP_JET)
    base = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    overlay = cv2.addWeighted(base, 1.0 - OVERLAY_ALPHA, colour, OVERLAY_ALPHA, 0.0)
    text = f"score {score:.4g}"
    scale = max(0.4, min(image.shape[:2]) / 400.0)
    thickness = max(1, round(scale * 2))
    (width, height), baseline = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
    margin = int(4 * scale)
    origin = (margin, height + margin)
    cv2.rectangle(
        overlay, (0, 0), (width + 2 * margin, height + baseline + 2 * margin), (0, 0, 0), -1
    )
    cv2.putText(
        overlay,
        text,
        origin,
        cv2.FONT_HERSHEY_SIMPLEX,
        scale,
        (255, 255, 255),
        thickness,
        cv2.LINE_AA,
    )
    return overlay


def write_heatmap(
    path: str | Path,
    image: np.ndarray,
    anomaly_map: np.ndarray,
    score: float,
    *,
    vmax: float | None = None,
    raw_path: str | Path | None = None,
) -> Path:
    """Write the overlay PNG to ``path`` and, if asked, the float32 map as ``.npy``."""
    if anomaly_map.shape != image.shape[:2]:
        raise ValueError(f"map {anomaly_map.shape} does not match image {image.shape[:2]}")
    ok, encoded = cv2.imencode(".png", render_overlay(image, anomaly_map, score, vmax))
    if not ok:
        raise RuntimeError("OpenCV failed to encode the heatmap PNG")
    if raw_path is not None:
        buffer = io.BytesIO()
        np.save(buffer, anomaly_map.astype(np.float32, copy=False))
        write_atomic(raw_path, buffer.getvalue(), fix=HEATMAP_FIX)
    return write_atomic(path, encoded.tobytes(), fix=HEATMAP_FIX)
