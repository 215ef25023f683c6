"""Code the multi-process tests run in child processes: ``python -m tests.store.workers``.

``reader DB SECONDS``: list, stats and export in a loop on a read-only engine, one JSON
line per round; exits 1 with the error on stderr if any query fails.
``stream DB``: commit inspections one by one forever, printing each id after its commit.
``hold DB``: commit 20 rows, then open a big write transaction and wait to be killed.
"""

from __future__ import annotations

import io
import json
import sys
import time

from sqlalchemy import insert

from padformer_edge.store.engine import open_engine
from padformer_edge.store.history import Filters, export, list_inspections, stats
from padformer_edge.store.migrations import open_checked
from padformer_edge.store.models import Inspection, Status
from padformer_edge.store.queue import enqueue

from .seed import digest


class _Ids(io.TextIOBase):
    """Keeps only the ids of exported JSON lines."""

    def __init__(self) -> None:
        self.ids: list[int] = []

    def write(self, text: str) -> int:
        self.ids.append(json.loads(text)["id"])
        return len(text)


def reader(db: str, seconds: float) -> None:
    engine = open_checked(db)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        newest = list_inspections(engine, Filters(), limit=20)
        (overall,) = stats(engine) or [None]
        sink = _Ids()
        exported = export(engine, sink, "jsonl", Filters())
        print(
            json.dumps(
                {
                    "newest": newest[0].id if newest else 0,
                    "exported": exported,
                    "contiguous": sink.ids == list(range(1, exported + 1)),
                    "total": overall.total if overall else 0,
                }
            ),
            flush=True,
        )


def _row(name: str) -> dict[str, object]:
    return dict(
        camera="cam",
        product="p",
        source_path=f"/cams/{name}.png",
        sha256=digest(name),
        size_bytes=1,
    )


def stream(db: str) -> None:
    engine = open_engine(db)
    for i in range(10**9):
        print(enqueue(engine, **_row(f"s{i}")).id, flush=True)  # type: ignore[arg-type]


def hold(db: str) -> None:
    engine = open_engine(db)
    for i in range(20):
        enqueue(engine, **_row(f"c{i}"))  # type: ignore[arg-type]
    with engine.begin() as conn:
        # Large enough that SQLite spills uncommitted pages into the WAL before the kill.
        conn.execute(
            insert(Inspection),
            [
                {**_row(f"u{i}"), "line": "line-1", "status": Status.pending, "attempts": 0}
                for i in range(20_000)
            ],
        )
        print("open", flush=True)
        time.sleep(120)


if __name__ == "__main__":
    mode, path, *rest = sys.argv[1:]
    {
        "reader": lambda: reader(path, float(rest[0])),
        "stream": lambda: stream(path),
        "hold": lambda: hold(path),
    }[mode]()
