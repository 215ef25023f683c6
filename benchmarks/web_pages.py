"""Operator's page speed: page loads through the real HTTP server on a big history.

Fills a SQLite file with ``--rows`` finished inspections (default 1,000,000, 8 cameras,
the same rows as ``benchmarks/store.py`` but ending now, so the health page's last hour
holds what a busy line would put there), starts ``padformer-edge serve``'s server on
127.0.0.1 in this process and requests each page ``--repeats`` times after one warm-up,
one request at a time. Reports per page the p50 and p95 (nearest rank) of the wall time
of a load and of this process's CPU time during it (server and client together): on a
shared machine other jobs stretch wall time, hardly the CPU time a load costs.

    python benchmarks/web_pages.py [--rows 1000000] [--repeats 30] [--write-readme]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_readme_section
from benchmarks.store import fill
from padformer_edge.web import HttpConfig, make_server


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
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.sqlite3"
        start = datetime.now(UTC) - timedelta(days=30)
        fill_s = fill(db, args.rows, start=start)
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
    if args.write_readme:
        update_readme_section("web-benchmark", table)


if __name__ == "__main__":
    main()
