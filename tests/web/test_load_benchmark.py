"""``benchmarks/web_load.py`` runs end to end with tiny options: it fills a store, starts
``padformer-edge serve`` as a process, loads pages from several clients at once and
reports every load, then hangs up on it the ways a killed browser does and reports that
the server printed no traceback and still answers. A smoke test of the tool, not a
timing: no latency figure is checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import current_revision
from tests.cli_process import REPO
from tests.pg_cluster import own_cluster


def test_the_load_benchmark_runs_and_reports_every_load() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "web_load.py"), "--rows", "300",
         "--clients", "4", "--requests", "3", "--think-ms", "5"],
        capture_output=True, text=True, timeout=300, cwd=REPO, check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["benchmark"] == "web_load" and report["errors"] == 0
    assert set(report["p95_ms"]) == {
        "live view /", "history, newest 50", "history --review reviewed",
        "detail /inspections/ID",
    }  # fmt: skip
    assert "| all pages | 12 |" in result.stdout  # 4 clients x 3 loads, all counted
    assert report["rss_mib"] > 0 and report["server_cpu_s"] >= 0
    assert report["hangups"] >= 12 and report["answers_after_hangups"] is True
    assert report["server_tracebacks"] == 0 and report["server_error_lines"] == 0
    assert "hang-ups after the load" in result.stdout and "0 tracebacks" in result.stdout


def test_the_load_benchmark_runs_on_a_plant_database() -> None:
    """``--db``: a PostgreSQL instance of the test's own, filled with two small lines,
    loaded with different pages per client (the plant view among them), and emptied
    afterwards."""
    with own_cluster() as cluster:
        result = subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "web_load.py"), "--db", cluster.url,
             "--lines", "2", "--rows", "150", "--clients", "4", "--requests", "6"],
            capture_output=True, text=True, timeout=300, cwd=REPO, check=False,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        engine = open_engine(cluster.url)
        try:
            assert current_revision(engine) is None  # emptied: a second run may follow
        finally:
            engine.dispose()
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["database"] == "postgresql" and report["lines"] == 2
    assert report["errors"] == 0 and report["server_tracebacks"] == 0
    assert "plant view /plant" in report["p95_ms"] and len(report["p95_ms"]) == 6
    assert "| all pages | 24 |" in result.stdout  # 4 clients x 6 loads, all counted
    assert "2 lines x 150 rows" in result.stdout
