"""A logger made at import time must follow the format chosen later by the CLI, and
the format ``auto`` picks for where the command's output goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from padformer_edge.reporting.log import configure_logging, get_logger
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from tests.cli_process import REPO
from tests.store.seed import seed_history

module_level_logger = get_logger("tests.module")


def test_module_logger_follows_later_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "INFO")
    module_level_logger.info("hello", answer=42)
    line = capsys.readouterr().err.strip().splitlines()[-1]
    event = json.loads(line)
    assert event["event"] == "hello"
    assert event["answer"] == 42
    assert event["component"] == "tests.module"


def test_level_filters_debug(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "WARNING")
    get_logger("x").info("quiet")
    get_logger("x").warning("loud")
    err = capsys.readouterr().err
    assert "quiet" not in err
    assert "loud" in err


def _review(db: str, row: int, merged: bool) -> subprocess.CompletedProcess[str]:
    """``results review`` as a script runs it, its two streams one pipe or two."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONUNBUFFERED", None)  # stdout block-buffered, as in a plain pipe
    return subprocess.run(
        [sys.executable, "-m", "padformer_edge", "results", "review", str(row),
         "--false-alarm", "--by", "ann", "--db", db],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_a_merged_stream_gets_plain_lines_and_separate_ones_json(tmp_path: Path) -> None:
    """Issue 51: off a terminal, JSON log lines were interleaved with what a command
    prints. With ``2>&1`` (one stream, read by a person) they are key=value lines, in
    order with the output; with stderr apart they stay JSON for scripts and shippers."""
    db = str(tmp_path / "results.sqlite3")
    engine = open_engine(db)
    upgrade(engine)
    rows = seed_history(engine, tmp_path / "heatmaps").anomaly_ids
    engine.dispose()
    merged = _review(db, rows[0], merged=True)
    assert merged.returncode == 0, merged.stdout
    lines = merged.stdout.splitlines()
    assert not [line for line in lines if line.lstrip().startswith("{")], lines
    assert any("review.saved" in line for line in lines)
    assert lines[-1].startswith(f"inspection {rows[0]} reviewed as false_alarm by ann")
    apart = _review(db, rows[1], merged=False)
    assert apart.returncode == 0, apart.stderr
    events = [json.loads(line) for line in apart.stderr.splitlines()]
    assert "review.saved" in [e["event"] for e in events]
    assert apart.stdout.startswith(f"inspection {rows[1]} reviewed as false_alarm")


def test_threads_logging_at_once_write_whole_lines(tmp_path: Path) -> None:
    """The daemon logs from several threads: each event is one JSON line, never two run
    into each other (``{...}{...}`` on one line, which the chaos benchmark met waiting
    for ``daemon.ready``). In a child process, its stderr a real file."""
    script = (
        "import threading\n"
        "from padformer_edge.reporting.log import configure_logging, get_logger\n"
        "configure_logging('json')\n"
        "log = get_logger('t')\n"
        "def burst(n):\n"
        "    for i in range(300):\n"
        "        log.info('tick', thread=n, i=i, pad='x' * (i % 50))\n"
        "threads = [threading.Thread(target=burst, args=(n,)) for n in range(6)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
    )
    err = tmp_path / "stderr.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(err, "wb") as handle:
        subprocess.run([sys.executable, "-c", script], stderr=handle, env=env, timeout=120,
                       check=True)  # fmt: skip
    lines = err.read_text().splitlines()
    events = [json.loads(line) for line in lines]  # a run-together line fails here
    assert sorted((e["thread"], e["i"]) for e in events) == [
        (n, i) for n in range(6) for i in range(300)
    ]
