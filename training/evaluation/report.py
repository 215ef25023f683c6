"""What an evaluation leaves behind: ``metrics.json``, a terminal table and an HTML page
with the table and a grid of examples, the model's worst mistakes first.

"Worst" is measured within each class, since raw scores of different classes are not on
one scale: a good image is as bad as the share of its class's test images that score
below it, a defective one as bad as the share that score above it. A missed defect and a
false alarm therefore rank together, by how badly they would be ranked.
"""

from __future__ import annotations

import base64
import html
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
from rich.table import Table

from padformer_edge_training.evaluation.protocol import METRICS, ImageResult

HEADERS = {"image_auroc": "image AUROC", "pixel_auroc": "pixel AUROC", "aupro": "AUPRO"}


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def table_rows(summary: dict) -> list[list[str]]:
    """One row per class, indented rows per defect type, then the mean (values in %)."""
    rows = []
    for category, row in summary["classes"].items():
        rows.append([category, *(fmt(row[m]) for m in METRICS), str(row["images"])])
        for label, sub in row["defects"].items():
            rows.append([f"  {label}", *(fmt(sub[m]) for m in METRICS), str(sub["images"])])
    mean = summary["mean"]
    rows.append(["mean", *(fmt(mean[m]) for m in METRICS), str(mean["images"])])
    return rows


def rich_table(summary: dict, title: str) -> Table:
    table = Table(title=title)
    for header in ["class / defect", *(HEADERS[m] for m in METRICS), "images"]:
        table.add_column(header, justify="left" if header == "class / defect" else "right")
    for row in table_rows(summary):
        table.add_row(*row)
    return table


def badness(results: Sequence[ImageResult]) -> list[float]:
    """Per image, how wrongly its score ranks it within its class (0 = right, 1 = worst)."""
    by_class: dict[str, list[float]] = defaultdict(list)
    for r in results:
        by_class[r.record.category].append(r.score)
    out = []
    for r in results:
        scores = np.asarray(by_class[r.record.category])
        if r.record.is_good:
            out.append(float(np.mean(scores < r.score)))
        else:
            out.append(float(np.mean(scores > r.score)))
    return out


def png_data_uri(image: np.ndarray) -> str:
    """An RGB or grey ``uint8`` array inlined as a PNG, so the page is one file."""
    bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR) if image.ndim == 3 else image
    ok, data = cv2.imencode(".png", bgr)
    assert ok
    return "data:image/png;base64," + base64.b64encode(data.tobytes()).decode()


def colour_map(amap: np.ndarray, vmax: float) -> np.ndarray:
    scaled = np.clip(amap / vmax, 0, 1) if vmax > 0 else np.zeros_like(amap)
    bgr = cv2.applyColorMap((scaled * 255).round().astype(np.uint8), cv2.COLORMAP_JET)
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def example_cells(result: ImageResult, vmax: float) -> list[str]:
    thumbs = result.thumbnails
    images = [thumbs["query"], thumbs.get("comparison"), colour_map(thumbs["map"], vmax)]
    images.append((thumbs["mask"] * 255).astype(np.uint8))
    return [f'<img src="{png_data_uri(i)}">' if i is not None else "<span>-</span>" for i in images]


def write_html(
    path: Path, title: str, summary: dict, results: Sequence[ImageResult], examples: int
) -> None:
    """The table, then ``examples`` rows of query / comparison / map / ground truth.

    Maps of one class share one colour scale (the class's highest score), so a red map is
    high relative to that class's other images, not just to its own maximum.
    """
    vmax: dict[str, float] = defaultdict(float)
    for r in results:
        vmax[r.record.category] = max(vmax[r.record.category], float(r.thumbnails["map"].max()))
    ranked = sorted(zip(badness(results), results, strict=True), key=lambda p: -p[0])
    head = "".join(f"<th>{h}</th>" for h in ["class / defect", *HEADERS.values(), "images"])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in table_rows(summary)
    )
    grid = []
    for bad, r in ranked[:examples]:
        caption = (
            f"{html.escape(r.record.category)} / {html.escape(r.record.label)} / "
            f"{html.escape(r.record.path.name)}<br>score {r.score:.4g}, "
            f"ranked worse than {100 * bad:.0f}% of its class"
        )
        cells = "".join(f"<td>{c}</td>" for c in example_cells(r, vmax[r.record.category]))
        grid.append(f"<tr><td>{caption}</td>{cells}</tr>")
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:middle}}
td:first-child{{text-align:left}}img{{width:128px;image-rendering:pixelated}}</style>
</head><body><h1>{html.escape(title)}</h1>
<p>Metrics in %, per class, per defect type (that type against the class's good images)
and the mean over classes.</p>
<table><tr>{head}</tr>{body}</table>
<h2>Examples, worst first</h2>
<p>Missed defects and false alarms, ranked by how many images of the same class were
scored better; anomaly maps share one colour scale per class.</p>
<table><tr><th>image</th><th>query</th><th>reconstruction / reference</th>
<th>anomaly map</th><th>ground truth</th></tr>{"".join(grid)}</table>
</body></html>
"""
    path.write_text(page, encoding="utf-8")


def write_metrics(path: Path, payload: dict) -> None:
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
