"""The model cards as docs tables, read from the files themselves.

The shipped generic model's card (``padformer_edge/weights/generic.json``, written by
``padformer_edge_training.release.ship`` from the checkpoint's own metadata) goes into the
``generic-model-card`` block, so the docs cannot disagree with the file the locator
checks. The weights that docs tables were measured on, kept in ``--kept``
(``benchmarks/models/``, the one folder of such weights), go into the
``kept-weights-card`` block: preset, step and storage from each file's header, and the
sha256 of its bytes, which ``tests/test_keep_weights.py`` checks against the files.

    python benchmarks/model_card.py --write-docs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.weights import CARD_NAME, package_folder
from padformer_edge_training.release.model_card import KEPT_HEADERS, card_rows, kept_rows

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kept",
        type=Path,
        default=REPO / "benchmarks" / "models",
        help="the folder of kept weights (default: benchmarks/models)",
    )
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    card = json.loads((package_folder() / CARD_NAME).read_text(encoding="utf-8"))
    table = markdown_table(["field", "value"], card_rows(card))
    kept = kept_rows(args.kept.resolve(), REPO)
    kept_table = markdown_table(KEPT_HEADERS, kept)
    print(table + "\n\n" + kept_table)
    kept_cards = [dict(zip(KEPT_HEADERS, row, strict=True)) for row in kept]
    print_json_line("model_card", {"generic": card, "kept": kept_cards})
    if args.write_docs:
        update_docs_section("generic-model-card", table)
        update_docs_section("kept-weights-card", kept_table)


if __name__ == "__main__":
    main()
