"""Tables sent into a pipe or a file come out whole (issue 32): one line per row with every
column, where rich alone folds them at its default of 80 columns off a terminal and a
``grep`` or a spreadsheet import then sees half rows. ``$COLUMNS``, when set, still wins.
Each case is a real CLI process whose stdout is a pipe, as under ``| tee``."""

from __future__ import annotations

from pathlib import Path

import pytest

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import enqueue
from tests.cli_process import run_cli

CAMERA = "press-7"
SOURCE = "/srv/camera/" + "/".join(["station-with-a-long-folder-name"] * 4) + "/part-0001.png"


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "results.sqlite3"
    engine = open_engine(str(path))
    upgrade(engine)
    enqueue(engine, camera=CAMERA, product="bolt", source_path=SOURCE, sha256="0" * 64,
            size_bytes=1)  # fmt: skip
    engine.dispose()
    return path


def test_a_piped_table_keeps_each_row_whole(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    result = run_cli("results", "list", "--db", str(database))
    assert result.returncode == 0, result.stderr
    [row] = [line for line in result.stdout.splitlines() if CAMERA in line]
    assert SOURCE in row and len(row) > 80


def test_columns_from_the_environment_still_set_the_width(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    result = run_cli("results", "list", "--db", str(database))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 100
    assert SOURCE not in result.stdout  # folded to fit, as asked
