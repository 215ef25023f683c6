"""Several lines on one plant database under SIGKILLs and a plant outage, at the issue's
full size in CI (``tests/daemon/test_plant.py``) and in ``benchmarks/chaos.py --plant``.

Each line is a daemon subprocess with its own state folder, SQLite file, camera folder
and webhook, all forwarding to one PostgreSQL server the caller owns. Images arrive in
rounds on every line; in each round one line's daemon (in turn) is SIGKILLed once it has
inspected a random part of that round's files (mid-burst, whatever the machine's speed)
and started again at once; after a third of the rounds the plant server is stopped, and
started again a third later, once the lines owe it changes. At the end every line must
have inspected every file once, sent every alert itself, and the plant must hold exactly
what each line holds: the report counts what is lost or duplicated on each side.

The lines run ``line_profile``: the torch-free line runtime, so a restart after a kill
costs a second or two rather than the torch stack's import.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.profiles.create import create_profile
from padformer_edge.store.engine import resolve_url
from tests.daemon.harness import DaemonProcess, Site, make_site, write_image
from tests.deploy.parity import tiny_model
from tests.detect_images import product_image
from tests.pg_cluster import Cluster

FILE_COLUMNS = "line, source_path, sha256, status, score"
ALERT_QUERY = (
    "SELECT i.line, i.source_path, a.sink, a.payload, a.state FROM alerts a "
    "JOIN inspections i ON i.id = a.inspection_id"
)


def line_profile(folder: Path) -> Path:
    """The cheapest real profile a line daemon runs, made once under ``folder`` for every
    site to copy (``make_site(profile=...)``, as ``bolt``): a tiny random-weight edge
    model on its fused metric, exported to ONNX and scored by onnxruntime, as a
    torch-free line install runs a published profile. A daemon on it never loads torch,
    so it is ready in a second or two where the torch stack's imports alone take about
    ten on a loaded 2-core machine; what the plant tests check (claims, the outbox,
    forwarding, alerts) does not depend on the detector. Returns the profile's folder."""
    source = folder / "source"
    save_checkpoint(source / "model.safetensors", tiny_model("edge"))
    for seed in range(2):
        write_image(source / f"references/{seed}.png", product_image(48, 64, seed))
    settings = DetectionSettings(metric="auto", passes=2, device="cpu", runtime="onnxruntime")
    made = create_profile(folder / "profiles", "bolt", source / "model.safetensors",
                          source / "references", settings=settings)  # fmt: skip
    return made.profile.folder


class Webhook:
    """127.0.0.1 endpoint counting accepted deliveries per alert id (one per line)."""

    def __init__(self) -> None:
        self.received: Counter[int] = Counter()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver.lock:
                    receiver.received[int(body["alert_id"])] += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def local(site: Site, query: str) -> list[tuple]:
    """``query`` on a line's SQLite file, read-only; nothing before its first migration."""
    conn = sqlite3.connect(f"file:{site.database}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(query).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def plant(cluster: Cluster, query: str) -> list[tuple]:
    """``query`` on the plant database; nothing while it is stopped or not migrated."""
    engine = create_engine(resolve_url(cluster.url))
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(query)).all()]
    except Exception:
        return []
    finally:
        engine.dispose()


def backlog(site: Site) -> int:
    """The line's outbox rows not yet forwarded; -1 before the outbox exists."""
    found = local(site, "SELECT count(*) FROM plant_outbox")
    return int(found[0][0]) if found else -1


@dataclass
class Line:
    """One line under test: its site, webhook, running daemon and files written."""

    name: str
    site: Site
    hook: Webhook
    daemon: DaemonProcess | None = None
    written: list[str] = field(default_factory=list)

    def start(self) -> None:
        self.daemon = DaemonProcess(self.site)

    def settled(self) -> bool:
        """Every file written has a finished row, every alert is settled, nothing owed."""
        statuses = dict(local(self.site, "SELECT source_path, status FROM inspections"))
        if any(statuses.get(path) in (None, "pending", "processing") for path in self.written):
            return False
        if local(self.site, "SELECT 1 FROM alerts WHERE state = 'pending' LIMIT 1"):
            return False
        return backlog(self.site) == 0


def make_lines(root: Path, cluster: Cluster, count: int, profile: Path) -> list[Line]:
    lines = []
    for index in range(count):
        hook, name = Webhook(), f"line-{index + 1}"
        site = make_site(
            root / name,
            threshold=0.0,  # every image anomalous: every result raises a webhook alert
            profile=profile,
            line=name,
            plant_database=cluster.url,
            # restarts on a loaded machine are slow; overload skipping is not under test
            worker={"deadline_s": 86400},
            alerts={
                "sinks": {"hook": {"type": "webhook", "url": hook.url, "timeout_s": 5}},
                "cooldown_s": 0,
                "poll_interval_s": 0.2,
            },
        )
        lines.append(Line(name, site, hook))
    return lines


def finished(site: Site) -> int:
    """The line's inspections no longer waiting or under way."""
    query = "SELECT count(*) FROM inspections WHERE status NOT IN ('pending', 'processing')"
    found = local(site, query)
    return int(found[0][0]) if found else 0


def inspected(site: Site, count: int) -> bool:
    return finished(site) >= count


def wait_on(lines: list[Line], condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` until true; fail at once when a line's daemon exited (none may)."""
    deadline = time.monotonic() + timeout
    while not condition():
        for line in lines:
            if line.daemon is not None and not line.daemon.alive():
                raise AssertionError(
                    f"{line.name}'s daemon exited:\n{line.daemon.log.read_text()[-4000:]}"
                )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def compare(lines: list[Line], cluster: Cluster) -> dict[str, int]:
    """What went wrong, counted over every line (all zero when nothing did)."""
    plant_files = Counter(plant(cluster, f"SELECT {FILE_COLUMNS} FROM inspections"))
    plant_alerts = Counter(plant(cluster, ALERT_QUERY))
    counts = Counter[str]()
    for line in lines:
        files = local(line.site, f"SELECT {FILE_COLUMNS} FROM inspections")
        by_path = Counter(row[1] for row in files)
        counts["files"] += len(line.written)
        counts["lost"] += sum(1 for path in line.written if by_path[path] == 0)
        counts["duplicated"] += sum(1 for n in by_path.values() if n > 1)
        counts["not_done"] += sum(1 for row in files if row[3] != "done")
        for row in files:
            counts["plant_lost"] += plant_files[row] == 0
            counts["plant_duplicated"] += plant_files[row] > 1
        line_alerts = local(line.site, ALERT_QUERY)
        counts["alerts"] += len(line_alerts)
        for row in line_alerts:
            counts["plant_alerts_lost"] += plant_alerts[row] == 0
            counts["plant_alerts_duplicated"] += plant_alerts[row] > 1
        hook_ids = [i for (i,) in local(line.site, "SELECT id FROM alerts WHERE sink = 'hook'")]
        counts["alerts_never_delivered"] += sum(1 for i in hook_ids if line.hook.received[i] == 0)
        counts["alerts_delivered_more_than_once"] += sum(
            1 for i in hook_ids if line.hook.received[i] > 1
        )
    mine = {line.name for line in lines}
    counts["plant_rows_of_no_line"] = sum(n for row, n in plant_files.items() if row[0] not in mine)
    return dict(counts)


def run_plant_chaos(
    root: Path,
    cluster: Cluster,
    *,
    lines: int,
    images: int,
    kills: int,
    seed: int = 0,
    profile: Path | None = None,
    settle_timeout_s: float = 600.0,
) -> dict[str, Any]:
    """``lines`` daemons on ``profile`` (else a ``line_profile`` made under ``root``),
    ``images`` images each in ``kills + 1`` rounds, one SIGKILL per round but the last,
    the plant stopped after round ``kills // 3``'s files and started after round
    ``2 * kills // 3``'s. Returns ``compare``'s counts with the run's shape and timings."""
    rng = random.Random(seed)
    under_test = make_lines(root, cluster, lines, profile or line_profile(root / "profile"))
    rounds = kills + 1
    cut_at, back_at = kills // 3, max(2 * kills // 3, kills // 3 + 1)
    started = time.monotonic()
    kills_done, owed_at_return = 0, 0
    try:
        for line in under_test:  # together: the machine's cores start them side by side
            line.start()
        for line in under_test:
            assert line.daemon is not None
            line.daemon.wait_ready(timeout=300)
        ready_s = time.monotonic() - started
        for round_ in range(rounds):
            share = images // rounds + (1 if round_ < images % rounds else 0)
            for line in under_test:
                camera = line.site.cameras["cam0"]
                for index in range(len(line.written), len(line.written) + share):
                    path = write_image(camera / f"{index:04d}.png", product_image(48, 64, index))
                    line.written.append(str(path))
            if round_ == cut_at and kills:
                cluster.stop()
            if round_ == back_at and not cluster.running():
                # back once the lines owe it what they inspected meanwhile
                wait_on(under_test, lambda: any(backlog(x.site) > 0 for x in under_test),
                        300, "a line to owe the stopped plant changes")  # fmt: skip
                owed_at_return = sum(max(backlog(line.site), 0) for line in under_test)
                cluster.start()
            if round_ < kills:
                victim = under_test[round_ % lines]
                # mid-burst: once it has finished a random part of this round's files
                target = len(victim.written) - share + rng.randint(0, max(share - 1, 0))
                wait_on(under_test, partial(inspected, victim.site, target), 300,
                        f"{victim.name} to inspect {target} files")  # fmt: skip
                assert victim.daemon is not None
                victim.daemon.kill()
                kills_done += 1
                victim.start()  # at once: files arrive meanwhile, the backlog waits
        if not cluster.running():
            cluster.start()
        rounds_done = time.monotonic()
        wait_on(under_test, lambda: all(line.settled() for line in under_test),
                settle_timeout_s, "every line to settle")  # fmt: skip
        settle_s = time.monotonic() - rounds_done
        for line in under_test:
            assert line.daemon is not None
            line.daemon.terminate(timeout=120)
        report: dict[str, Any] = {
            "lines": lines,
            "images_per_line": images,
            "kills": kills_done,
            "seed": seed,
            "seconds": round(time.monotonic() - started, 1),
            "ready_s": round(ready_s, 1),
            "settle_s": round(settle_s, 1),
            "owed_when_plant_returned": owed_at_return,
            "settled": all(line.settled() for line in under_test),
        }
        return {**report, **compare(under_test, cluster)}
    finally:
        for line in under_test:
            if line.daemon is not None and line.daemon.alive():
                line.daemon.kill()
            line.hook.close()
