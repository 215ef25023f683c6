"""Operator's page speed: page loads through the real HTTP server on a big history.

Fills a SQLite file with ``--rows`` finished inspections (default 1,000,000, 8 cameras,
the rows of ``benchmarks/store.py`` but ending now, so the health page's last hour
holds what a busy line would put there), starts ``padformer-edge serve``'s server on
127.0.0.1 in this process and requests each page ``--repeats`` times after one warm-up,
one request at a time. Reports per page the p50 and p95 (nearest rank) of the wall time
of a load and of this process's CPU time during it (server and client together): on a
shared machine other jobs stretch wall time, hardly the CPU time a load costs.

    python benchmarks/web_pages.py [--rows 1000000] [--repeats 30] [--write-docs]
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.server import make_server

SQLITE_TIME = "%Y-%m-%d %H:%M:%S.%f"  # how SQLAlchemy stores a naive UTC datetime
LINE = "line-1"  # every filled row's line: one line PC's history


def fill(path: Path, rows: int, start: datetime, chunk: int = 50_000) -> float:
    """The finished inspections of ``benchmarks/store.py``'s ``fill`` (8 cameras, 3
    products, 5 % anomalous, 30 days from ``start``), inserted through the sqlite3 module:
    a million rows through the ORM's type processing take most of an hour on a busy
    2-core machine. Returns seconds taken (not a reported figure)."""
    engine = open_engine(str(path))
    upgrade(engine)
    engine.dispose()
    step = timedelta(days=30) / rows
    started = time.perf_counter()
    conn = sqlite3.connect(path)
    columns = ("line, camera, product, source_path, sha256, size_bytes, status, attempts, score, "
               "threshold, is_anomaly, heatmap_path, model_sha256, detect_ms, queue_ms, "
               "discovered_at, started_at, finished_at")  # fmt: skip
    statement = f"INSERT INTO inspections ({columns}) VALUES ({', '.join('?' * 18)})"
    for first in range(0, rows, chunk):
        batch = []
        for i in range(first, min(first + chunk, rows)):
            at = (start + step * i).replace(tzinfo=None).strftime(SQLITE_TIME)
            batch.append((LINE, f"cam-{i % 8}", ("bolt", "nut", "gear")[i % 3], f"/cams/{i}.png",
                          f"{i:064x}", 500_000, "done", 1, (i * 7919 % 1000) / 100.0, 9.5,
                          int((i * 7919 % 1000) >= 950), f"/heatmaps/{i}.png", "0" * 64,
                          30.0 + (i % 97) / 10.0, 5.0, at, at, at))  # fmt: skip
        with conn:
            conn.executemany(statement, batch)
    conn.close()
    return time.perf_counter() - started


def fetch_ms(url: str) -> tuple[float, float]:
    """(wall ms, process CPU ms) of one complete page load."""
    started, cpu = time.perf_counter(), time.process_time()
    with urllib.request.urlopen(url) as reply:
        reply.read()
        if reply.status != 200:
            raise RuntimeError(f"{url} answered {reply.status}")
    return (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000


def nearest_rank(values: list[float], percent: int) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(percent / 100 * len(ordered))) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.sqlite3"
        start = datetime.now(UTC) - timedelta(days=30)
        fill_s = fill(db, args.rows, start)
        server = make_server(HttpConfig(port=0), str(db), [Path(tmp)]).start()
        base = server.url
        middle = args.rows // 2
        pages = {
            "live view /": "/",
            "live cards /api/live (what each SSE update sends)": "/api/live",
            "history, newest 50": "/history",
            "history --camera cam-3": "/history?camera=cam-3",
            "history --verdict anomaly": "/history?verdict=anomaly",
            "history cam-3 + anomaly + since 7d": "/history?camera=cam-3&verdict=anomaly&since=7d",
            "history --verdict failed (no row matches)": "/history?verdict=failed",
            "history, a page in the middle": f"/history?before={middle}",
            "detail /inspections/ID": f"/inspections/{middle}",
            "health (last hour)": "/health",
            "health (last 24 h)": "/health?window=24h",
            "/metrics (a scrape reads the store anew)": "/metrics",
        }
        timings: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        for name, path in pages.items():
            fetch_ms(base + path)
            timings[name], cpu[name] = [], []
            for _ in range(args.repeats):
                if path == "/metrics":
                    time.sleep(1.0)  # past the collector's one-second cache
                wall_ms, cpu_ms = fetch_ms(base + path)
                timings[name].append(wall_ms)
                cpu[name].append(cpu_ms)
        server.stop()
        server.app.close()
    rows = [
        [name, f"{statistics.median(v):.1f} ms", f"{nearest_rank(v, 95):.1f} ms",
         f"{statistics.median(cpu[name]):.1f} ms", f"{nearest_rank(cpu[name], 95):.1f} ms"]
        for name, v in timings.items()
    ]  # fmt: skip
    headers = [f"page ({args.rows:,} rows, {args.repeats} loads each)", "wall p50", "wall p95",
               "CPU p50", "CPU p95"]  # fmt: skip
    table = markdown_table(headers, rows)
    print(table)
    print(f"(bulk fill of {args.rows:,} rows took {fill_s:.0f} s)")
    p95 = {name: round(nearest_rank(v, 95), 2) for name, v in timings.items()}
    print_json_line(
        "web_pages",
        {
            "rows": args.rows,
            "repeats": args.repeats,
            "p50_ms": {name: round(statistics.median(v), 2) for name, v in timings.items()},
            "p95_ms": p95,
            "cpu_p95_ms": {name: round(nearest_rank(v, 95), 2) for name, v in cpu.items()},
            "worst_p95_ms": max(p95.values()),
        },
    )
    if args.write_docs:
        update_docs_section("web-benchmark", table)


if __name__ == "__main__":
    main()
