"""Chaos: the real daemon under SIGKILLs, hostile files and a webhook that goes away.

Each round writes a burst of good images over two camera folders together with one of
every hostile entry (a decompression bomb, a header that lies about its size, a text file
named ``.png``, a FIFO, a symlink out of the root, a non-UTF-8 name, a folder named like
an image), waits a random moment and SIGKILLs the daemon, then starts it again. The
webhook receiver on 127.0.0.1 is stopped for some rounds and started again for others.
After the last round the receiver stays up until every row is settled and every alert
is delivered (or the deadline passes). The profile is the tests' tiny random-weight
model with a threshold of zero, so every good image is an anomaly and raises an alert.

Reported: entries written and rows recorded, files lost (no row) or duplicated (two rows
for one file), good images not ``done`` (failed because of a neighbour, or by the kills),
hostile entries with the wrong reason, the daemon's peak resident memory (VmHWM of every
process), and alerts delivered once, more than once or never. Prints a table and one JSON
line; ``--write-docs`` puts the table into the docs.

    python benchmarks/chaos.py [--kills 3] [--burst 12] [--seed 0] [--write-docs]

``--plant`` runs the plant case instead (``tests/daemon/plant_chaos.py``, which the CI
test runs at the same size): ``--lines`` daemons on the torch-free line profile
forwarding to one PostgreSQL server of its own, ``--images`` images each, ``--kills``
SIGKILLs among them (each once its line inspected a random part of the round's files)
and the plant server stopped and started again mid-way; it reports files and alerts lost
or duplicated on the lines and in the plant database, alerts the lines did not deliver,
what the lines owed the plant when it came back, and where the time went. It needs
PostgreSQL's server programs (``apt-get install postgresql``).

    python benchmarks/chaos.py --plant [--lines 3] [--images 300] [--kills 10] [--seed 0]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from benchmarks.process_stats import status_kib
from padformer_edge.daemon.settings import WorkerConfig
from tests.daemon.harness import DaemonProcess, encoded, make_site, rows
from tests.detect_images import product_image
from tests.hostile_files import plant

SETTLE_TIMEOUT_S = 600.0


class Receiver:
    """A webhook endpoint on 127.0.0.1 that can be stopped and started on one port;
    counts accepted POSTs per ``Idempotency-Key`` (the alert id)."""

    def __init__(self) -> None:
        self.accepted: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.port = 0
        self.start()

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.accepted[self.headers.get("Idempotency-Key", "")] += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    @property
    def up(self) -> bool:
        return self.server is not None


class PeakMemory:
    """Samples the daemon's VmHWM (peak resident set) until stopped."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self.pid: int | None = None
        self.stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            self.sample()

    def sample(self) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(OSError):  # the process just died
            self.peak_kib = max(self.peak_kib, status_kib(self.pid, "VmHWM")["VmHWM"])


def alerts(database: Path) -> list[tuple[int, str]]:
    """(id, state) of the alerts for the webhook (other sinks of the config are not counted)."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        return list(conn.execute("SELECT id, state FROM alerts WHERE sink = 'hook' ORDER BY id"))
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def settled(database: Path, expected: int) -> bool:
    current = rows(database)
    open_rows = any(r["status"] in ("pending", "processing") for r in current)
    open_alerts = any(state == "pending" for _, state in alerts(database))
    return len(current) >= expected and not open_rows and not open_alerts


def run(kills: int, burst: int, seed: int, work: Path, host_threads: int) -> dict:
    rng = random.Random(seed)
    receiver = Receiver()
    site = make_site(
        work,
        cameras=("cam0", "cam1"),
        threshold=0.0,
        # Restarts on a loaded machine take minutes; overload skipping is not under test.
        worker={"deadline_s": 86400, "host_threads": host_threads},
        alerts={
            "sinks": {
                "hook": {
                    "type": "webhook",
                    "url": f"http://127.0.0.1:{receiver.port}/alerts",
                    "timeout_s": 2,
                }
            },
            "cooldown_s": 0,
            "max_attempts": 1000,
            "backoff_base_s": 0.2,
            "backoff_max_s": 2.0,
            "poll_interval_s": 0.2,
        },
    )
    outside = work / "outside.png"
    outside.write_bytes(encoded(product_image(48, 64, 999)))
    good_bytes = encoded(product_image(48, 64, 998))
    good: list[str] = []  # paths of good images, as stored
    hostile: dict[str, str] = {}  # path as stored -> expected reason fragment
    memory = PeakMemory()
    started = time.monotonic()
    for round_ in range(kills + 1):
        with DaemonProcess(site) as daemon:
            memory.pid = daemon.process.pid
            daemon.wait_ready(timeout=900)  # minutes on a loaded machine
            if round_ == kills:  # the last daemon is left to finish, receiver up
                if not receiver.up:
                    receiver.start()
                deadline = time.monotonic() + SETTLE_TIMEOUT_S
                expected = len(good) + len(hostile)
                while time.monotonic() < deadline and not settled(site.database, expected):
                    time.sleep(0.5)
                memory.sample()
                daemon.terminate(timeout=120)
                break
            for index in range(burst):
                camera = site.cameras[f"cam{index % 2}"]
                path = camera / f"r{round_:02d}_{index:03d}.png"
                path.write_bytes(encoded(product_image(48, 64, 1000 * round_ + index)))
                good.append(str(path))
            camera = site.cameras[f"cam{round_ % 2}"]
            planted = plant(camera, f"r{round_:02d}", outside, good_bytes)
            hostile.update({str(camera / name): why for name, why in planted.items()})
            time.sleep(rng.uniform(0.5, 4.0))  # kill mid-burst, at a random moment
            memory.sample()
            daemon.kill()
        if rng.random() < 0.5:  # the receiver goes down, or comes back, between rounds
            if receiver.up:
                receiver.stop()
            else:
                receiver.start()
    elapsed = time.monotonic() - started
    memory.stop.set()
    receiver.stop()

    recorded = rows(site.database)
    by_path: dict[str, list[dict]] = {}
    for row in recorded:
        by_path.setdefault(row["source_path"], []).append(row)
    written = good + list(hostile)
    lost = [p for p in written if p not in by_path]
    duplicated = [p for p, found in by_path.items() if len(found) > 1]
    failed_good = [p for p in good if p in by_path and by_path[p][0]["status"] == "failed"]
    by_kills = [p for p in failed_good if "interrupted" in (by_path[p][0]["error"] or "")]
    neighbour = [p for p in failed_good if p not in by_kills]
    skipped = [p for p in good if p in by_path and by_path[p][0]["status"] == "skipped"]
    wrong_reason = [
        p
        for p, why in hostile.items()
        if p in by_path and why not in (by_path[p][0]["error"] or "")
    ]
    sent = alerts(site.database)
    deliveries = [receiver.accepted.get(str(alert_id), 0) for alert_id, _ in sent]
    return {
        "kills": kills,
        "burst": burst,
        "seed": seed,
        "seconds": round(elapsed, 1),
        "good_images_written": len(good),
        "hostile_entries_written": len(hostile),
        "rows": len(recorded),
        "lost": len(lost),
        "duplicated": len(duplicated),
        "good_failed_because_of_a_neighbour": len(neighbour),
        "good_failed_by_the_kills": len(by_kills),
        "good_skipped": len(skipped),
        "hostile_with_wrong_reason": len(wrong_reason),
        "peak_rss_mib": round(memory.peak_kib / 1024, 1),
        "alerts": len(sent),
        "alerts_delivered_once": sum(1 for d in deliveries if d == 1),
        "alerts_delivered_more_than_once": sum(1 for d in deliveries if d > 1),
        "alerts_never_delivered": sum(1 for d in deliveries if d == 0),
        "examples": {"lost": lost[:3], "duplicated": duplicated[:3], "wrong": wrong_reason[:3]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=3, help="SIGKILLs, one per round")
    parser.add_argument("--burst", type=int, default=12, help="good images per round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--host-threads", type=int, default=WorkerConfig().host_threads,
        help="the worker's host_threads: decoding and heatmaps in that many threads",
    )  # fmt: skip
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument(
        "--plant", action="store_true",
        help="the plant case: several lines forwarding to one PostgreSQL under SIGKILLs",
    )  # fmt: skip
    parser.add_argument("--lines", type=int, default=3, help="--plant: line daemons")
    parser.add_argument("--images", type=int, default=300, help="--plant: images per line")
    args = parser.parse_args()
    if args.plant:
        plant_main(args)
        return
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        result = run(args.kills, args.burst, args.seed, Path(tmp), args.host_threads)
    labels = [
        ("good images written", "good_images_written"),
        ("hostile entries written (one row expected each)", "hostile_entries_written"),
        ("rows", "rows"),
        ("lost (no row)", "lost"),
        ("duplicated (two rows for one file)", "duplicated"),
        ("good images failed because of a neighbour", "good_failed_because_of_a_neighbour"),
        ("good images failed by the kills (interrupted every attempt)", "good_failed_by_the_kills"),
        ("good images skipped (waited past worker.deadline_s)", "good_skipped"),
        ("hostile entries with the wrong reason", "hostile_with_wrong_reason"),
        ("peak resident memory of a daemon process (MiB)", "peak_rss_mib"),
        ("alerts", "alerts"),
        ("alerts delivered once", "alerts_delivered_once"),
        ("alerts delivered more than once", "alerts_delivered_more_than_once"),
        ("alerts never delivered", "alerts_never_delivered"),
    ]
    table = markdown_table(["metric", "value"], [[label, result[key]] for label, key in labels])
    print(table)
    if args.write_docs:
        note = (
            f"{args.kills} SIGKILLs at random moments during bursts of {args.burst} good images "
            "over 2 camera folders, each burst with one of every hostile entry; the webhook "
            f"receiver went down and came back between rounds; {result['seconds']} s in all. "
            "Tiny random-weight model, threshold 0 (every good image raises an alert); "
            f"worker.host_threads {args.host_threads}."
        )
        update_docs_section("chaos-benchmark", f"{table}\n\n{note}")
    print_json_line("chaos", {k: v for k, v in result.items() if k != "examples"})
    if any(result["examples"].values()):
        print(json.dumps(result["examples"]), file=sys.stderr)


def plant_main(args: argparse.Namespace) -> None:
    """``--plant``: the lines, the kills and the outage; a table and one JSON line."""
    from tests.daemon.plant_chaos import run_plant_chaos
    from tests.pg_cluster import own_cluster, server_programs

    if server_programs() is None:
        sys.exit("--plant needs PostgreSQL's server programs: apt-get install postgresql")
    with tempfile.TemporaryDirectory(prefix="chaos-plant-") as tmp, own_cluster() as cluster:
        result = run_plant_chaos(
            Path(tmp), cluster, lines=args.lines, images=args.images, kills=args.kills,
            seed=args.seed,
        )  # fmt: skip
    labels = [
        ("line daemons", "lines"),
        ("images written per line", "images_per_line"),
        ("SIGKILLs", "kills"),
        ("changes the lines owed the plant when it came back", "owed_when_plant_returned"),
        ("every line settled (all inspected, alerted, forwarded)", "settled"),
        ("files written", "files"),
        ("lost on the lines (no row)", "lost"),
        ("duplicated on the lines", "duplicated"),
        ("files not done (failed by the kills)", "not_done"),
        ("lost in the plant database", "plant_lost"),
        ("duplicated in the plant database", "plant_duplicated"),
        ("alerts stored by the lines", "alerts"),
        ("alerts lost in the plant database", "plant_alerts_lost"),
        ("alerts duplicated in the plant database", "plant_alerts_duplicated"),
        ("webhook alerts never delivered", "alerts_never_delivered"),
        ("webhook alerts delivered more than once", "alerts_delivered_more_than_once"),
        ("plant rows of no line under test", "plant_rows_of_no_line"),
    ]
    table = markdown_table(["metric", "value"], [[label, result[key]] for label, key in labels])
    print(table)
    if args.write_docs:
        note = (
            f"{result['kills']} SIGKILLs among {args.lines} line daemons, {args.images} images "
            "each in rounds, the plant server stopped and started again mid-way; "
            f"{result['seconds']} s in all: {result['ready_s']} s until the first daemons "
            f"were ready, {result['settle_s']} s to settle after the last round. Torch-free "
            "line profile (tiny random-weight edge model, onnxruntime), threshold 0 (every "
            "image raises an alert)."
        )
        update_docs_section("chaos-plant-benchmark", f"{table}\n\n{note}")
    print_json_line("chaos_plant", result)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
