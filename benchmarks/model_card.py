"""The shipped generic model's card as a docs table, read from the card file itself.

The card (``padformer_edge/models/generic.json``) is written by ``training.release.ship``
from the checkpoint's own metadata; this prints it as markdown and, with --write-docs,
puts it in the ``generic-model-card`` block, so the docs cannot disagree with the file the
locator checks.

    python benchmarks/model_card.py --write-docs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.models import CARD_NAME, package_folder


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
        return "the product's defaults (detect/scoring.py)"
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    card = json.loads((package_folder() / CARD_NAME).read_text(encoding="utf-8"))
    table = markdown_table(["field", "value"], card_rows(card))
    print(table)
    print_json_line("model_card", card)
    if args.write_docs:
        update_docs_section("generic-model-card", table)


if __name__ == "__main__":
    main()
