"""Alert tests run on a real migrated SQLite file and real HTTP servers and programs."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.planning import Cooldown, plan_alerts
from padformer_edge.store.engine import open_engine
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue


@pytest.fixture
def engine(sqlite_file: Path) -> Iterator[Engine]:
    writer = open_engine(str(sqlite_file))
    yield writer
    writer.dispose()


def store_result(
    engine: Engine,
    config: AlertsConfig,
    cooldown: Cooldown,
    name: str,
    *,
    score: float = 5.0,
    camera: str = "cam-1",
    product: str = "nut",
) -> tuple[int, int]:
    """Inspect one fake file the way the worker does; returns (inspection id, alert rows)."""
    source = f"/cameras/{camera}/{name}"
    row = enqueue(
        engine,
        camera=camera,
        product=product,
        source_path=source,
        sha256=hashlib.sha256(source.encode()).hexdigest(),
        size_bytes=100,
    )
    assert [r.id for r in claim_batch(engine, 1)] == [row.id]
    outcome = DetectionOutcome(
        score=score,
        threshold=1.0,
        heatmap_path=f"/heatmaps/{row.id}.png",
        model_sha256="0" * 64,
        detect_ms=1.0,
    )
    requests = []
    if outcome.is_anomaly:  # as the worker: the outcome's verdict plans the alerts
        requests = plan_alerts(
            config,
            cooldown=cooldown,
            camera=camera,
            product=product,
            score=score,
            threshold=1.0,
            reason=f"score {score} above threshold 1.0",
            source_path=source,
            heatmap_path=f"/heatmaps/{row.id}.png",
        )
        outcome = replace(outcome, alerts=requests)
    done = complete(engine, row.id, outcome)
    return done.id, len(requests)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll until true; the generous limit only bounds a hang, it asserts no speed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@dataclass
class WebhookReceiver:
    """A real HTTP endpoint that fails the first ``failures`` requests of every key."""

    failures: int
    url: str = ""
    requests: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    accepted: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, key: str, headers: dict[str, str], body: dict[str, Any]) -> int:
        with self.lock:
            self.headers.append(headers)
            self.requests[key] += 1
            if self.requests[key] <= self.failures:
                return 500
            self.accepted[key].append(body)
            return 200


@pytest.fixture
def webhook() -> Iterator[Callable[[int], WebhookReceiver]]:
    servers: list[ThreadingHTTPServer] = []

    def start(failures: int) -> WebhookReceiver:
        receiver = WebhookReceiver(failures)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = self.headers.get("Idempotency-Key", "")
                status = receiver.handle(key, dict(self.headers.items()), body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        receiver.url = f"http://127.0.0.1:{server.server_address[1]}/alerts"
        return receiver

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
