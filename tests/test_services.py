"""A test that needs a service skips on a developer's machine and fails in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NEEDS_A_BROKER = """
from tests.services import import_or_missing, service_missing

def test_needs_a_broker():
    service_missing("no broker on 127.0.0.1:1")

def test_needs_a_missing_module():
    import_or_missing("padformer_edge_no_such_module", "the no-such extra is missing")
"""


@pytest.mark.parametrize(("ci", "outcome"), [("true", "2 failed"), ("", "2 skipped")])
def test_a_missing_service_fails_only_in_ci(tmp_path: Path, ci: str, outcome: str) -> None:
    (tmp_path / "test_probe.py").write_text(NEEDS_A_BROKER)
    env = {**os.environ, "PYTHONPATH": str(REPO), "CI": ci}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert outcome in result.stdout, result.stdout
    assert "no broker on 127.0.0.1:1" in result.stdout
    if ci:
        assert "CI=true: .ci/run starts this service" in result.stdout


NEEDS_A_CLUSTER = """
from tests.pg_cluster import own_cluster

def test_needs_a_cluster():
    with own_cluster():
        pass
"""
NO_DRIVER = "raise ModuleNotFoundError(\"No module named 'psycopg2'\", name='psycopg2')\n"


@pytest.mark.parametrize(("ci", "outcome"), [("true", "1 failed"), ("", "1 skipped")])
def test_a_server_without_its_driver_skips_saying_so(tmp_path: Path, ci: str, outcome: str):
    """PostgreSQL installed, psycopg2 not (an install without the postgresql extra): the
    plant tests skip naming the extra, where they used to error in the driver's import."""
    from tests.pg_cluster import server_programs
    from tests.services import service_missing

    if server_programs() is None:
        service_missing("PostgreSQL's server programs are not installed; run .ci/services")
    blocked = tmp_path / "blocked" / "psycopg2"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text(NO_DRIVER)
    (tmp_path / "test_probe.py").write_text(NEEDS_A_CLUSTER)
    env = {**os.environ, "PYTHONPATH": f"{blocked.parent}{os.pathsep}{REPO}", "CI": ci}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs", "-n", "0",
         str(tmp_path / "test_probe.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False,
    )  # fmt: skip
    assert outcome in result.stdout, result.stdout
    assert "pip install -e '.[postgresql]'" in result.stdout
    if not ci:  # skipped for its reason, not errored in the import
        assert "ModuleNotFoundError" not in result.stdout
