"""Operator's page under load: many clients at once against ``padformer-edge serve``.

Fills a SQLite file with ``--rows`` finished inspections (``web_pages.fill``: the rows of
``benchmarks/store.py`` ending now, upgraded to the head schema by the store's own
migrations; one in a hundred rows gets a review), starts ``padformer-edge serve`` on
127.0.0.1 as a separate process, then lets ``--clients`` clients (one keep-alive
connection each, all released together) each load ``--requests`` pages in turn: the
live view ``/``, history, history filtered by review, and a detail page. A client
waits for each answer before asking again, as a browser tab does, then waits
``--think-ms`` (drawn uniformly between half and one and a half times it, so clients
drift apart). With no think time the clients are a closed loop: each answer is the
next request at once, so latency is the number of clients over the pages per second
the machine manages, whatever one page costs; an operator's screen asks for a page
every few seconds at most, which ``--think-ms 1000`` stands for.

Reports per page the p50, p95 (nearest rank) and maximum latency seen by the clients,
the errors (any answer but 200, or a failed connection), and the server process's CPU
time and resident memory over the run, read from ``/proc`` (Linux only), and the
machine's load average when the load began. After the load, clients hang up on the
server as killed browsers do (a reset in the middle of a request head, right after a
request, while a page or an export is sent, and on the live stream); the report counts
the tracebacks and error lines the server printed over the whole run, which must be none,
and checks the page still answers: the clients share the machine's cores with
the server (and with whatever else runs), so compare figures measured at similar loads.
The clients are coroutines dealt over ``--processes`` processes of their own, so that
what one client waits for is the server, not the other clients' share of one GIL; and
each client process freezes the heap it was forked with (``gc.freeze``), so that a
collection over this process's objects does not stop its clients in the middle of a
burst.

With ``--db URL`` (an empty PostgreSQL database the run may fill and empty) the store is
a plant instead: ``--lines`` lines of ``--rows`` rows each (``plant_fill``), and the
clients ask for different pages: the plant view, each line's history (newest, reviewed,
an older page keyed on a row) and detail pages, the line and row drawn per client and
load, so a hundred clients do not share one cached render.

    python benchmarks/web_load.py [--clients 100] [--rows 200000] [--requests 10]
                                  [--think-ms 0] [--processes 2] [--write-docs]
    python benchmarks/web_load.py --db postgresql://USER@HOST/EMPTY_DB [--lines 3] ...
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import multiprocessing
import os
import random
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import REPO, markdown_table, print_json_line, update_docs_section
from benchmarks.plant_fill import empty, fill_plant, line_names
from benchmarks.process_stats import cpu_seconds, status_kib
from benchmarks.web_pages import LINE, fill

REVIEW_EVERY = 100  # one row in this many is reviewed, alternately each verdict
START_TIMEOUT_S = 120.0
REQUEST_TIMEOUT_S = 60.0
HANG_UP_AFTER_S = 0.2  # a reset this long after the request: mid-answer or on the stream


def add_reviews(path: Path, rows: int) -> int:
    """Review every ``REVIEW_EVERY``-th row (bulk insert, as ``fill`` does); returns how
    many."""
    conn = sqlite3.connect(path)
    stamp = datetime.now(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    values = [
        (i, LINE, "true_defect" if (i // REVIEW_EVERY) % 2 else "false_alarm", "bench", stamp)
        for i in range(1, rows + 1, REVIEW_EVERY)
    ]
    with conn:
        conn.executemany(
            "INSERT INTO reviews (inspection_id, line, verdict, reviewer, reviewed_at) "
            "VALUES (?, ?, ?, ?, ?)",
            values,
        )
    conn.close()
    return len(values)


def start_server(db: Path | str, state: Path, log: Path) -> tuple[subprocess.Popen[str], str]:
    """``padformer-edge serve`` on a free port, its stderr (the structured log and
    anything printed) into ``log``; returns the process and its URL."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PADFORMER_EDGE_STATE_DIR": str(state),
           "OMP_NUM_THREADS": "1"}  # fmt: skip
    env.pop("PADFORMER_EDGE_HTTP_TOKEN", None)
    with open(log, "wb") as errors:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            [sys.executable, "-m", "padformer_edge", "serve", "--db", str(db), "--port", "0"],
            stdout=subprocess.PIPE, stderr=errors, text=True, env=env, cwd=REPO,
        )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT_S
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("serving ") or time.monotonic() > deadline:
        process.kill()
        raise RuntimeError(f"the server did not start: {line!r}")
    return process, line.split()[1]


class Client:
    """One browser tab: a keep-alive HTTP/1.1 connection, reopened after an error.

    Requests are written and answers read on asyncio streams, so a process holds many
    tabs on one event loop: a hundred ``http.client`` threads in one process spent their
    time queueing for its GIL, and that wait was counted as the server's latency.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.request = (f"GET {{path}} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                        "Accept: text/html\r\n\r\n")  # fmt: skip
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def _exchange(self, path: str) -> int:
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        writer.write(self.request.format(path=path).encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
        await reader.readexactly(int(fields["content-length"]))  # every page here has one
        if fields.get("connection", "").lower() == "close":
            self.close()
        return status

    async def get(self, path: str) -> tuple[float, bool]:
        """(milliseconds to the last byte, success) of one GET."""
        started = time.perf_counter()
        try:
            ok = await asyncio.wait_for(self._exchange(path), REQUEST_TIMEOUT_S) == 200
        except (OSError, TimeoutError, ValueError, KeyError, IndexError,
                asyncio.IncompleteReadError, asyncio.LimitOverrunError):  # fmt: skip
            self.close()
            ok = False
        return (time.perf_counter() - started) * 1000, ok

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


Loads = list[tuple[str, int, float, bool]]  # (page, load number, milliseconds, success)


def page_path(template: str, client: int, load: int, lines: list[str], rows: int) -> str:
    """``template`` with ``{line}`` and ``{row}`` drawn for this client's ``load``-th
    page: every client asks for its own rows (a template without them is itself)."""
    line = lines[(client + load) % len(lines)] if lines else ""
    row = 1 + (client * 7919 + load * 104_729) % max(rows, 1)
    return template.format(line=line, row=row)
_release: Any = None  # the cross-process barrier, set in each client process


def _set_release(barrier: Any) -> None:
    """A client process's start: the barrier, and the heap it was forked with frozen.

    A client process is forked from this one, which holds a hundred thousand objects
    of its imports (SQLAlchemy, NumPy) and of the fill; a full collection there walks
    every one of them, copying each page it touches, and it came due a few dozen
    allocations into the burst: each client's loop stood still 60 to 190 ms while the
    server had answered, which the clients counted as the server's latency. Frozen, the
    collector leaves the inherited objects alone and looks only at what the clients
    make."""
    global _release
    _release = barrier
    gc.freeze()


def _client_process(base: str, pages: dict[str, str], indexes: list[int], requests: int,
                    think_ms: float, lines: list[str], rows: int) -> Loads:  # fmt: skip
    """The clients ``indexes`` on one event loop, started when every process is ready."""
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    names = list(pages)
    loads: Loads = []

    async def one(index: int) -> None:
        client, pause = Client(host, port), random.Random(index)
        try:
            for n in range(requests):
                name = names[(index + n) % len(names)]
                ms, ok = await client.get(page_path(pages[name], index, n, lines, rows))
                loads.append((name, n, ms, ok))
                if think_ms > 0 and n + 1 < requests:
                    await asyncio.sleep(think_ms * pause.uniform(0.5, 1.5) / 1000)
        finally:
            client.close()

    async def every() -> None:
        await asyncio.gather(*(one(i) for i in indexes))

    _release.wait(START_TIMEOUT_S)
    asyncio.run(every())
    return loads


def run_load(base: str, pages: dict[str, str], clients: int, requests: int, processes: int,
             think_ms: float = 0.0, lines: list[str] | None = None, rows: int = 1,
             ) -> tuple[dict[str, list[float]], dict[str, list[float]],
                        dict[str, int], float]:  # fmt: skip
    """Every client loads ``requests`` pages, cycling through ``pages`` from its own
    offset, the clients dealt over ``processes`` processes (each its own GIL and event
    loop) and all released together; returns per page the latencies of every load and of
    the loads after each client's first (the opening burst left out), the errors, and the
    run's wall seconds."""
    latencies: dict[str, list[float]] = defaultdict(list)
    later: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    processes = min(processes, clients)
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(processes + 1)  # the client processes and this one
    shares = [list(range(clients))[k::processes] for k in range(processes)]
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_set_release,
                             initargs=(barrier,)) as pool:  # fmt: skip
        futures = [pool.submit(_client_process, base, pages, share, requests, think_ms,
                               lines or [], rows) for share in shares]  # fmt: skip
        barrier.wait(START_TIMEOUT_S)
        started = time.perf_counter()
        for future in futures:
            for name, n, ms, ok in future.result():
                latencies[name].append(ms)
                if n > 0:
                    later[name].append(ms)
                errors[name] += not ok
        wall_s = time.perf_counter() - started
    return latencies, later, errors, wall_s


def hang_ups(base: str, pages: dict[str, str]) -> int:
    """Reset connections as a killed browser does (SO_LINGER 0: an RST, no goodbye):
    half a request head, a request just sent, a page or export while it is written, the
    live stream once open; returns how many."""
    parts = urlsplit(base)
    address = (parts.hostname or "127.0.0.1", parts.port or 80)
    head = f"Host: {address[0]}:{address[1]}\r\n"
    requests = [b"GET /history HTTP/1.1\r\nHo"]
    paths = [page_path(p, 0, 0, ["line-1"], 1) for p in pages.values()]
    for path in [*paths, "/history.csv", "/events"]:
        requests.append(f"GET {path} HTTP/1.1\r\n{head}\r\n".encode())
    made = 0
    for after_s in (0.0, HANG_UP_AFTER_S):
        for raw in requests:
            with socket.create_connection(address, timeout=REQUEST_TIMEOUT_S) as conn:
                conn.sendall(raw)
                time.sleep(after_s)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            made += 1
    return made


def printed_trouble(log: Path) -> tuple[int, int]:
    """(tracebacks, lines at level error or above) in the server's stderr."""
    text = log.read_text(errors="replace")
    bad_levels = ('"level": "error"', '"level": "critical"', "[error", "[critical")
    errors = sum(any(mark in line for mark in bad_levels) for line in text.splitlines())
    return text.count("Traceback"), errors


def nearest_rank(values: list[float], percent: int) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(percent / 100 * len(ordered))) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100, help="clients at once")
    parser.add_argument("--rows", type=int, default=200_000, help="inspections in the store")
    parser.add_argument("--requests", type=int, default=10, help="pages each client loads")
    parser.add_argument("--think-ms", type=float, default=0.0,
                        help="mean pause of a client between its page loads")  # fmt: skip
    parser.add_argument("--processes", type=int, default=2,
                        help="client processes the clients are dealt over")  # fmt: skip
    parser.add_argument("--db", default=None, metavar="URL",
                        help="an empty PostgreSQL database to fill with a plant's lines "
                        "(emptied afterwards); default: a SQLite file of one line")  # fmt: skip
    parser.add_argument("--lines", type=int, default=3,
                        help="lines in the --db plant, --rows each")  # fmt: skip
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    if min(args.clients, args.rows, args.requests, args.processes, args.lines) < 1 or (
        args.think_ms < 0
    ):
        parser.error("--clients, --rows, --requests, --processes and --lines must be at "
                     "least 1, --think-ms >= 0")  # fmt: skip
    if args.db is not None and not args.db.startswith("postgresql"):
        parser.error("--db takes a PostgreSQL URL (postgresql://USER@HOST/DB); without it "
                     "the benchmark makes its own SQLite file")  # fmt: skip
    lines = line_names(args.lines) if args.db else []
    total_rows = args.rows * len(lines) if args.db else args.rows
    with tempfile.TemporaryDirectory() as tmp:
        db: Path | str
        if args.db:
            db = args.db
            fill_s = fill_plant(args.db, lines, args.rows)
            reviewed = total_rows // 100
            middle = max(1, total_rows // 2)
            pages = {
                "plant view /plant": "/plant",
                "a line's history, newest 50": "/history?line={line}",
                "a line's history, reviewed": "/history?line={line}&review=reviewed",
                "a line's history, an older page": "/history?line={line}&before={row}",
                "detail /inspections/ID (a row per client)": "/inspections/{row}",
                "live view /": "/",
            }
        else:
            db = Path(tmp) / "load.sqlite3"
            fill_s = fill(db, args.rows, datetime.now(UTC) - timedelta(days=30))
            reviewed = add_reviews(db, args.rows)
            middle = max(1, args.rows // 2)
            pages = {
                "live view /": "/",
                "history, newest 50": "/history",
                "history --review reviewed": "/history?review=reviewed",
                "detail /inspections/ID": f"/inspections/{middle}",
            }
        server_log = Path(tmp) / "serve.log"
        process, base = start_server(db, Path(tmp) / "state", server_log)
        try:
            for path in pages.values():  # first loads open the engine and fill caches
                warm = Request(base + page_path(path, 0, 0, lines, total_rows),
                               headers={"Accept": "text/html"})  # fmt: skip
                urlopen(warm, timeout=REQUEST_TIMEOUT_S).read()
            load_before = os.getloadavg()[0]
            cpu_before = cpu_seconds(process.pid)
            latencies, later, errors, wall_s = run_load(base, pages, args.clients, args.requests,
                                                 args.processes, args.think_ms, lines,
                                                 total_rows)  # fmt: skip
            server_cpu_s = cpu_seconds(process.pid) - cpu_before
            memory = status_kib(process.pid, "VmRSS", "VmHWM")
            rss_mib, peak_mib = memory["VmRSS"] / 1024, memory["VmHWM"] / 1024
            hangups = hang_ups(base, pages)
            time.sleep(1.5)  # an open stream notices its client gone at its next poll
            after = Request(base + "/history", headers={"Accept": "text/html"})
            answers_after = urlopen(after, timeout=REQUEST_TIMEOUT_S).status == 200
        finally:
            process.terminate()
            process.wait(30)
            if args.db:
                empty(args.db)
        tracebacks, error_lines = printed_trouble(server_log)
    every = [v for values in latencies.values() for v in values]
    total_errors = sum(errors.values())
    every_later = [v for values in later.values() for v in values]

    def p95_later(values: list[float]) -> str:
        return f"{nearest_rank(values, 95):.1f} ms" if values else "-"

    rows = [
        [name, len(v), f"{nearest_rank(v, 50):.1f} ms", f"{nearest_rank(v, 95):.1f} ms",
         p95_later(later[name]), f"{max(v):.1f} ms", errors[name]]
        for name, v in sorted(latencies.items())
    ]  # fmt: skip
    rows.append(["all pages", len(every), f"{nearest_rank(every, 50):.1f} ms",
                 f"{nearest_rank(every, 95):.1f} ms", p95_later(every_later),
                 f"{max(every):.1f} ms", total_errors])  # fmt: skip
    think = f", think {args.think_ms:g} ms" if args.think_ms else ", no think time"
    store = (f"PostgreSQL, {len(lines)} lines x {args.rows:,} rows" if args.db
             else f"{args.rows:,} rows")  # fmt: skip
    headers = [f"page ({args.clients} clients{think}, {store})", "loads", "p50",
               "p95", "p95 after the first load", "max", "errors"]  # fmt: skip
    table = markdown_table(headers, rows)
    summary = (
        f"Server process: {server_cpu_s:.2f} s CPU over {wall_s:.2f} s of load "
        f"({server_cpu_s / len(every) * 1000:.2f} ms of CPU per page), "
        f"{len(every) / wall_s:.0f} pages/s, RSS {rss_mib:.0f} MiB (peak {peak_mib:.0f} MiB). "
        f"Clients in {min(args.processes, args.clients)} processes; machine load (1-minute "
        f"average, as `uptime` shows it) {load_before:.2f} when the load began. "
        f"{hangups} client hang-ups after the load (resets mid-head, mid-request, "
        f"mid-answer and on the live stream): the server printed {tracebacks} tracebacks "
        f"and {error_lines} error lines over the whole run, and "
        f"{'still answered' if answers_after else 'did NOT answer'} afterwards."
    )
    print(table)
    print(summary)
    print(f"(bulk fill of {total_rows:,} rows with {reviewed:,} reviews took {fill_s:.0f} s)")
    print_json_line(
        "web_load",
        {
            "clients": args.clients,
            "rows": args.rows,
            "database": "postgresql" if args.db else "sqlite",
            "lines": len(lines) or 1,
            "requests_per_client": args.requests,
            "think_ms": args.think_ms,
            "processes": args.processes,
            "load_before": round(load_before, 2),
            "p50_ms": {n: round(nearest_rank(v, 50), 2) for n, v in latencies.items()},
            "p95_ms": {n: round(nearest_rank(v, 95), 2) for n, v in latencies.items()},
            "max_ms": {n: round(max(v), 2) for n, v in latencies.items()},
            "errors": total_errors,
            "p95_all_ms": round(nearest_rank(every, 95), 2),
            "p95_after_first_ms": round(nearest_rank(every_later, 95), 2) if every_later else None,
            "server_cpu_s": round(server_cpu_s, 2),
            "wall_s": round(wall_s, 2),
            "rss_mib": round(rss_mib, 1),
            "peak_rss_mib": round(peak_mib, 1),
            "hangups": hangups,
            "server_tracebacks": tracebacks,
            "server_error_lines": error_lines,
            "answers_after_hangups": answers_after,
        },
    )
    if args.write_docs:
        block = "web-load-think-benchmark" if args.think_ms else "web-load-benchmark"
        block = "web-load-plant-benchmark" if args.db else block
        command = None  # the database's own URL is no business of the docs
        if args.db:
            command = "python " + " ".join(sys.argv).replace(args.db, "postgresql://USER@HOST/DB")
        update_docs_section(block, f"{table}\n\n{summary}", command=command)


if __name__ == "__main__":
    main()
