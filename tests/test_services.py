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
