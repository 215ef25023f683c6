"""Result-store speed: the daemon's write pattern, and history queries on a big database.

Part 1 runs the daemon's per-image transactions (enqueue, claim a batch, complete with an
alert for one image in twenty) on fresh SQLite files with ``synchronous=FULL`` (what the
product uses) and ``NORMAL`` (what it would gain by risking the last commits on power
loss), in interleaved rounds, and reports the median rate of each and their ratio.
Part 2 fills a file with ``--rows`` finished inspections (default 1,000,000, spread over
30 days and 8 cameras) and times the ``results`` queries on a read-only engine, median
of three runs after a warm-up.

    python benchmarks/store.py [--rows 1000000] [--images 2000] [--write-docs]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import Engine, insert

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.store.engine import open_engine
from padformer_edge.store.history import Filters, export, list_inspections, stats
from padformer_edge.store.migrations import open_checked, upgrade
from padformer_edge.store.models import Inspection, Status
from padformer_edge.store.queue import (
    AlertRequest,
    DetectionOutcome,
    claim_batch,
    complete,
    enqueue,
)

BATCH = 8


def daemon_writes(engine: Engine, first: int, count: int) -> float:
    """Inspections per second through enqueue -> claim_batch -> complete."""
    started = time.perf_counter()
    for start in range(first, first + count, BATCH):
        for i in range(start, min(start + BATCH, first + count)):
            enqueue(
                engine,
                camera=f"cam-{i % 8}",
                product="bolt",
                source_path=f"/cams/{i}.png",
                sha256=hashlib.sha256(str(i).encode()).hexdigest(),
                size_bytes=500_000,
            )
        for row in claim_batch(engine, BATCH):
            alerts = [AlertRequest("mqtt", {"id": row.id})] if row.id % 20 == 0 else []
            complete(
                engine,
                row.id,
                DetectionOutcome(
                    score=0.1,
                    threshold=1.0,
                    heatmap_path=f"/heatmaps/{row.id}.png",
                    model_sha256="0" * 64,
                    detect_ms=40.0,
                    alerts=alerts,
                ),
            )
    return count / (time.perf_counter() - started)


def compare_synchronous(folder: Path, images: int, rounds: int = 6) -> dict[str, float]:
    """Median rate per setting over interleaved rounds, so load drift hits both alike."""
    engines = {}
    for mode in ("FULL", "NORMAL"):
        engines[mode] = open_engine(str(folder / f"{mode.lower()}.sqlite3"), synchronous=mode)
        upgrade(engines[mode])
    per_round = images // rounds
    rates: dict[str, list[float]] = {mode: [] for mode in engines}
    for r in range(rounds):
        order = ("FULL", "NORMAL") if r % 2 == 0 else ("NORMAL", "FULL")
        for mode in order:
            rates[mode].append(daemon_writes(engines[mode], r * per_round, per_round))
    for engine in engines.values():
        engine.dispose()
    return {mode: statistics.median(values) for mode, values in rates.items()}


def fill(path: Path, rows: int, chunk: int = 50_000) -> float:
    """Bulk-load finished inspections; returns seconds taken (not a reported figure)."""
    engine = open_engine(str(path))
    upgrade(engine)
    start_time = datetime(2026, 1, 1, tzinfo=UTC)
    step = timedelta(days=30) / rows
    started = time.perf_counter()
    for first in range(0, rows, chunk):
        with engine.begin() as conn:
            conn.execute(
                insert(Inspection),
                [
                    dict(
                        line="line-1",
                        camera=f"cam-{i % 8}",
                        product=("bolt", "nut", "gear")[i % 3],
                        source_path=f"/cams/{i}.png",
                        sha256=f"{i:064x}",
                        size_bytes=500_000,
                        status=Status.done,
                        attempts=1,
                        score=(i * 7919 % 1000) / 100.0,
                        threshold=9.5,
                        is_anomaly=(i * 7919 % 1000) >= 950,
                        heatmap_path=f"/heatmaps/{i}.png",
                        model_sha256="0" * 64,
                        detect_ms=30.0 + (i % 97) / 10.0,
                        queue_ms=5.0,
                        discovered_at=start_time + step * i,
                        started_at=start_time + step * i,
                        finished_at=start_time + step * i,
                    )
                    for i in range(first, min(first + chunk, rows))
                ],
            )
    engine.dispose()
    return time.perf_counter() - started


class _Discard:
    def write(self, text: str) -> int:
        return len(text)


def median_ms(fn: Callable[[], object], repeats: int = 3) -> float:
    fn()  # warm the page cache and the statement cache
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=2_000)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rates = compare_synchronous(folder, args.images)
        full, normal = rates["FULL"], rates["NORMAL"]
        big = folder / "big.sqlite3"
        fill_s = fill(big, args.rows)
        reader = open_checked(str(big))
        last_week = datetime(2026, 1, 24, tzinfo=UTC)
        queries: dict[str, Callable[[], object]] = {
            "results list (newest 50)": lambda: list_inspections(reader, Filters()),
            "results list --camera cam-3": lambda: list_inspections(
                reader, Filters(camera="cam-3")
            ),
            "results list --anomalies --min-score 9.9": lambda: list_inspections(
                reader, Filters(anomalies_only=True, min_score=9.9)
            ),
            "results stats": lambda: stats(reader),
            "results stats --by camera": lambda: stats(reader, "camera"),
            "results stats --by hour --since 7d": lambda: stats(reader, "hour", last_week),
        }
        latency = {name: median_ms(fn) for name, fn in queries.items()}
        started = time.perf_counter()
        exported = export(reader, _Discard(), "jsonl", Filters())  # type: ignore[arg-type]
        export_rate = exported / (time.perf_counter() - started)
    write_rows = [
        ["daemon writes, synchronous=FULL (product)", f"{full:.0f} inspections/s", ""],
        [
            "daemon writes, synchronous=NORMAL",
            f"{normal:.0f} inspections/s",
            f"FULL is {full / normal:.2f}x NORMAL",
        ],
    ]
    query_rows = [[name, f"{ms:.1f} ms", ""] for name, ms in latency.items()]
    query_rows.append(["results export --format jsonl (all rows)", f"{export_rate:.0f} rows/s", ""])
    table = markdown_table(
        [f"operation ({args.rows:,} rows for queries)", "result", "ratio"], write_rows + query_rows
    )
    print(table)
    print(f"(bulk fill of {args.rows:,} rows took {fill_s:.0f} s)")
    print_json_line(
        "store",
        {
            "rows": args.rows,
            "images": args.images,
            "inserts_per_s_full": round(full, 1),
            "inserts_per_s_normal": round(normal, 1),
            "full_over_normal": round(full / normal, 3),
            "latency_ms": {k: round(v, 2) for k, v in latency.items()},
            "export_rows_per_s": round(export_rate, 1),
        },
    )
    if args.write_docs:
        update_docs_section("store-benchmark", table)


if __name__ == "__main__":
    main()
