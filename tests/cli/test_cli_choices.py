"""Options with a fixed set of words list them in ``--help`` and refuse others at parse time."""

from __future__ import annotations

import re

import pytest

from tests.cli_process import run_cli


@pytest.mark.parametrize(
    ("command", "listing"),
    [
        (["results", "list"], "[pending|processing|done|failed|skipped|no_part]"),
        (["results", "stats"], "[all|line|camera|product|hour|day]"),
        (["results", "export"], "[csv|jsonl]"),
        (["alerts", "list"], "[pending|sent|dead]"),
        (["eval"], "[random|nearest|farthest]"),
    ],
)
def test_help_lists_the_choices(command: list[str], listing: str) -> None:
    done = run_cli(*command, "--help", env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    assert listing in re.sub(r"\s+", "", done.stdout).replace("│", "")  # rich may wrap


def test_a_wrong_word_is_one_line_before_anything_opens(tmp_path) -> None:
    missing_db = tmp_path / "never" / "made.sqlite3"
    done = run_cli("alerts", "list", "--db", str(missing_db), "--state", "lost")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "--state 'lost' is not an alert state; choose one of pending, sent, dead." in lines[0]
    assert not missing_db.parent.exists()
