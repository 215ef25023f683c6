"""How long `padformer-edge synth` takes for the issue's reference job: six built-in
classes, 200 training and 120 test images each (30 good + 30 per defect kind), 256 px.

Prints a markdown table (one row per class and the total) and one JSON line; with
--write-docs the table replaces the `synth-speed` docs block. The CPU load
average at the start and the end is printed too, because this machine's cores are
shared and a contended run is slower.

    python benchmarks/synth_speed.py [--classes 6] [--size 256] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.reporting.log import configure_logging
from padformer_edge_training.synth import ViewCounts, builtin_names, render_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=6, help="first N built-in classes")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--train-views", type=int, default=200)
    parser.add_argument("--test-views-per-defect", type=int, default=30)
    parser.add_argument("--good-test-views", type=int, default=30)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    configure_logging("json", "WARNING")  # keep stdout to the table and the JSON line
    counts = ViewCounts(args.train_views, args.test_views_per_defect, args.good_test_views)
    names = builtin_names()[: args.classes]
    load_before = os.getloadavg()[0]
    rows, total = [], 0.0
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            started = time.perf_counter()
            render_dataset([f"builtin:{name}"], Path(scratch) / name, counts, size=args.size)
            seconds = time.perf_counter() - started
            total += seconds
            rows.append([name, counts.per_class, seconds, counts.per_class / seconds])
            print(f"{name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    load_after = os.getloadavg()[0]
    images = counts.per_class * len(names)
    rows.append([f"**all {len(names)}**", images, total, images / total])
    table = markdown_table(["class", "images", "seconds", "images/s"], rows)
    note = (
        f"\n\n{args.size} px; {images} images in {total / 60:.2f} min; 1-minute load average "
        f"{load_before:.2f} at the start and {load_after:.2f} at the end on "
        f"{os.cpu_count()} cores (other jobs share them)."
    )
    print(table + note)
    print_json_line(
        "synth_speed",
        {
            "classes": names,
            "size": args.size,
            "images": images,
            "seconds": round(total, 2),
            "images_per_second": round(images / total, 3),
            "per_class_seconds": {r[0]: round(r[2], 2) for r in rows[:-1]},
            "load_average": [load_before, load_after],
        },
    )
    if args.write_docs:
        update_docs_section("synth-speed", table + note)


if __name__ == "__main__":
    main()
