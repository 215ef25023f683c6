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
from padformer_edge.numbers import plain

HEATMAP_FIX = "choose a writable --out folder"

OVERLAY_ALPHA = 0.5  # equal weight: the defect stays visible under the colour

# With a threshold, the map's colour scale is fixed by it rather than by the image:
# 0 .. threshold fills the calm half of JET (blue to green) and threshold .. HOT_FACTOR x
# threshold the hot half (yellow to red). A good part then looks calm on every image, a
# defect turns hot, and the same map value gets the same colour on every image of a profile.
HOT_FACTOR = 2.0
CALM_SHARE = 0.5  # the part of the colour map below the threshold
OUTLINE_BGR = (255, 0, 255)  # magenta: a colour JET never draws, so the outline reads as one
MIN_MARK_SHARE = 0.05  # radius of the ring around a tiny region, as a share of the short side


def colour_indices(
    anomaly_map: np.ndarray, vmax: float | None = None, threshold: float | None = None
) -> np.ndarray:
    """Each map value's index (``uint8``, 0..255) on the colour map.

    Without a threshold the map is scaled linearly to ``vmax`` (default: its own maximum),
    which shows where the map is highest but makes every image look alarming. With a
    threshold, 0..threshold maps to the calm half and threshold..``vmax`` (default
    ``HOT_FACTOR`` x threshold) to the hot half, so colours mean the same across images
    (a threshold of 0 or less anchors nothing and is read as none).
    """
    values = anomaly_map.astype(np.float32, copy=False)
    if threshold is None or threshold <= 0:
        # A threshold of 0 or less (every image anomalous) anchors no scale: the image's
        # own, so that a daemon never loses a result over how its heatmap is coloured.
        top = float(values.max()) if vmax is None else float(vmax)
        scaled = np.clip(values / top, 0.0, 1.0) if top > 0 else np.zeros_like(values)
        return (scaled * 255.0).round().astype(np.uint8)
    top = HOT_FACTOR * threshold if vmax is None else float(vmax)
    if top <= threshold:
        raise ValueError(f"heatmap max {top:g} must lie above the threshold {threshold:g}")
    calm = values / threshold * CALM_SHARE
    hot = CALM_SHARE + (values - threshold) / (top - threshold) * (1.0 - CALM_SHARE)
    scaled = np.clip(np.where(values <= threshold, calm, hot), 0.0, 1.0)
    # Floored, so the threshold itself is the calm half's last index (127), and anything
    # above it lands in the hot half.
    return np.floor(scaled * 255.999).astype(np.uint8)


def draw_outline(overlay: np.ndarray, anomaly_map: np.ndarray, threshold: float) -> int:
    """Draw the outline of ``anomaly_map > threshold`` on ``overlay`` in place; return how
    many separate regions it has. The outline keeps a defect findable where its colour is
    small or the image behind it is busy. A region smaller than ``MIN_MARK_SHARE`` of the
    picture (a score just above the threshold often passes it at a pixel or two) is also
    ringed by a circle of that radius, because its own outline would be a dot."""
    above = (anomaly_map > threshold).astype(np.uint8)
    contours, _ = cv2.findContours(above, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    side = min(anomaly_map.shape)
    thickness = max(1, round(side / 200))
    cv2.drawContours(overlay, contours, -1, OUTLINE_BGR, thickness, cv2.LINE_8)
    smallest = max(3.0, MIN_MARK_SHARE * side)
    for contour in contours:
        (x, y), radius = cv2.minEnclosingCircle(contour)
        if radius < smallest:
            centre = (round(x), round(y))
            cv2.circle(overlay, centre, round(smallest), OUTLINE_BGR, thickness, cv2.LINE_8)
    return len(contours)


def render_overlay(
    image: np.ndarray,
    anomaly_map: np.ndarray,
    score: float,
    vmax: float | None = None,
    threshold: float | None = None,
) -> np.ndarray:
    """A BGR ``uint8`` picture: the map in the JET colour map blended on the image,
    with the score (and threshold, when given) printed in the top-left corner.

    ``vmax`` fixes the value drawn as full red so that overlays of several images can be
    compared; without it and without ``threshold`` each map is scaled to its own maximum.
    With ``threshold`` (a profile's) the scale is anchored to it (``colour_indices``) and
    the region above it is outlined in magenta.
    """
    colour = cv2.applyColorMap(colour_indices(anomaly_map, vmax, threshold), cv2.COLORMAP_JET)
    base = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    overlay = cv2.addWeighted(base, 1.0 - OVERLAY_ALPHA, colour, OVERLAY_ALPHA, 0.0)
    text = f"score {plain(score)}"
    if threshold is not None:
        text += f" / threshold {plain(threshold)}"
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
    if threshold is not None:  # last, so the score label never hides part of the outline
        draw_outline(overlay, anomaly_map, threshold)
    return overlay


def write_heatmap(
    path: str | Path,
    image: np.ndarray,
    anomaly_map: np.ndarray,
    score: float,
    *,
    vmax: float | None = None,
    threshold: float | None = None,
    raw_path: str | Path | None = None,
) -> Path:
    """Write the overlay PNG to ``path`` and, if asked, the float32 map as ``.npy``;
    ``vmax`` and ``threshold`` as in ``render_overlay``."""
    if anomaly_map.shape != image.shape[:2]:
        raise ValueError(f"map {anomaly_map.shape} does not match image {image.shape[:2]}")
    ok, encoded = cv2.imencode(".png", render_overlay(image, anomaly_map, score, vmax, threshold))
    if not ok:
        raise RuntimeError("OpenCV failed to encode the heatmap PNG")
    if raw_path is not None:
        buffer = io.BytesIO()
        np.save(buffer, anomaly_map.astype(np.float32, copy=False))
        write_atomic(raw_path, buffer.getvalue(), fix=HEATMAP_FIX)
    return write_atomic(path, encoded.tobytes(), fix=HEATMAP_FIX)
