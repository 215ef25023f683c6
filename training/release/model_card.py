"""Model cards as docs rows, read from the files themselves so the docs cannot disagree
with them: the shipped generic model's card (``generic.json``, the file the locator
checks) as (field, value) rows, with the steps split where a run continued from earlier
weights and where the fused metric's settings come from; and one row per kept weights
file (``benchmarks/models/``) with its sha256. ``benchmarks/model_card.py`` writes both
tables into the docs.
"""

from __future__ import annotations

import json
from pathlib import Path


def steps_text(card: dict) -> str:
    """The steps in all, and for a continued run how they split (cards before the split
    have ``steps`` alone)."""
    earlier = card["steps"] - card.get("steps_this_run", card["steps"])
    if not earlier:
        return str(card["steps"])
    return (
        f"{card['steps']}: {earlier} in earlier runs, then {card['steps_this_run']} in the "
        "last, started from their weights (`continued_from` in the card)"
    )


def zoom_text(job: dict) -> str:
    """' averaged over 1x-2x inputs' for a zoomed reference distance, ' with quarter turns'
    for turned references; nothing at 1x upright (and on cards from before either)."""
    if not job.get("reference_weight"):
        return ""
    zoom = job.get("reference_zoom") or 1
    text = f" averaged over 1x-{zoom}x inputs" if zoom > 1 else ""
    return text + (" with quarter turns" if job.get("reference_turns") else "")


def fused_text(card: dict) -> str:
    """The model's own validated settings, or where the detector takes them from instead."""
    own = card.get("fused")
    if not own:
        return "the product's defaults (methods/padformer/metrics.py)"
    jobs = [
        f"{name}: LAB weight {s['weight']:g}, nearest-reference weight "
        f"{s.get('reference_weight') or 0:g}{zoom_text(s)}, "
        f"{'filtered' if s['filter'] else 'pass mean'}, smoothing sigma {s['sigma']:g}"
        for name, s in (("map", own["map"]), ("image score", own["score"]))
    ]
    return "; ".join(jobs) + " (chosen on validation, in the file)"


def card_rows(card: dict) -> list[list[str]]:
    images = card["data"]["train_images"] or {}
    procedural = sorted(k for k in images if k.startswith("procedural-"))
    builtins = sorted(k for k in images if not k.startswith("procedural-"))
    return [
        ["preset", card["preset"]],
        [
            "training data",
            f"{len(procedural)} procedural objects + builtins {', '.join(builtins)}; "
            f"{sum(images.values())} good views",
        ],
        ["held out of training", ", ".join(card["held_out"])],
        ["steps", steps_text(card)],
        ["fused metric's settings", fused_text(card)],
        ["wall time", card["wall_time"]],
        ["machine", card["machine"]],
        ["file", f"{card['size_bytes'] / 1e6:.1f} MB, {card['storage']}"],
        ["sha256", f"`{card['sha256']}`"],
        ["quality", f"{card['quality']} (4-shot, held-out parts)"],
    ]


KEPT_HEADERS = ["file", "preset", "step", "storage", "MB", "sha256"]


def kept_rows(folder: Path, root: Path) -> list[list[str]]:
    """One card row per kept weights file in ``folder`` (named relative to ``root``):
    what its header says it is, and the sha256 of its bytes, so that a docs table that
    names the file can be checked against the very file (``tests/test_keep_weights.py``)."""
    from padformer_edge.files.digest import file_sha256
    from padformer_edge.model.header import read_header

    rows = []
    for path in sorted(folder.glob("*.safetensors")):
        header = read_header(path)
        metadata = json.loads(header.get("metadata") or "{}")
        rows.append(
            [
                path.relative_to(root).as_posix(),
                header.get("preset", ""),
                str(metadata.get("global_step")),
                header.get("storage", "float32"),
                f"{path.stat().st_size / 1e6:.1f}",
                f"`{file_sha256(path)}`",
            ]
        )
    return rows
