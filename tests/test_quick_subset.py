"""README's quick subset, ``pytest -m "not slow"``: the tests under ``SLOW_PATHS`` are marked
slow at collection and left out, every other test stays in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import is_slow

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("relative", "slow"),
    [
        ("web/test_browser.py", True),
        ("daemon/test_reads_and_wakeups.py", True),
        ("training/test_train_cli.py", True),
        ("test_services.py", True),
        ("profiles/test_fpr_bounds.py", False),
        ("store/test_history.py", False),
        ("test_calibration_draws.py", False),
        ("webhooks/test_x.py", False),  # a folder whose name only starts like a slow one
    ],
)
def test_slow_paths_are_folders_files_and_name_starts(relative: str, slow: bool) -> None:
    assert is_slow(relative) is slow


def test_not_slow_deselects_the_slow_files_at_collection() -> None:
    command = [
        sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p",
        "no:cacheprovider", "-m", "not slow", "tests/test_services.py",
        "tests/files/test_digest.py",
    ]  # fmt: skip
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    collected = [line for line in result.stdout.splitlines() if "::" in line]
    assert collected and all(line.startswith("tests/files/test_digest.py::") for line in collected)
    assert "deselected" in result.stdout


def test_every_slow_path_names_tests_that_exist() -> None:
    """A test file moved or renamed must take its slow mark along: every entry of
    ``SLOW_PATHS`` starts the path of at least one test file under tests/."""
    from tests.conftest import SLOW_PATHS

    tests = REPO / "tests"
    files = [path.relative_to(tests).as_posix() for path in tests.rglob("test_*.py")]
    assert [entry for entry in SLOW_PATHS if not any(f.startswith(entry) for f in files)] == []
