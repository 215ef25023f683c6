"""Daemons on several line PCs starting together on one database migrate it once: each
process its own state folder (its own PC's file lock), real processes, real database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import current_revision, head_revision
from tests.cli_process import REPO

PCS = 4
MIGRATE = """
import sys, time
from pathlib import Path
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import migrate_on_start
go = Path(sys.argv[2])
while not go.exists():  # every process imported and waiting: then all at once
    time.sleep(0.005)
print(migrate_on_start(open_engine(sys.argv[1])))
"""


def test_line_pcs_starting_together_migrate_the_database_once(
    db_url: str, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    processes = []
    for pc in range(PCS):
        env = {**os.environ, "PYTHONPATH": str(REPO),
               "PADFORMER_EDGE_STATE_DIR": str(tmp_path / f"pc{pc}")}  # fmt: skip
        processes.append(subprocess.Popen(
            [sys.executable, "-c", MIGRATE, db_url, str(go)], cwd=REPO, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))  # fmt: skip
    time.sleep(5)  # long enough for each to import; a late one only migrates later
    go.touch()
    outputs = [process.communicate(timeout=300) for process in processes]
    failed = [err for (_, err), p in zip(outputs, processes, strict=True) if p.returncode]
    assert failed == [], failed[0][-3000:]
    assert [out.strip().splitlines()[-1] for out, _ in outputs] == [head_revision()] * PCS
    # Exactly one of them upgraded (the store logs it); the others found it at head.
    assert sum(out.count("db.upgraded") for out, _ in outputs) == 1
    engine = open_engine(db_url)
    assert current_revision(engine) == head_revision()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
    engine.dispose()
