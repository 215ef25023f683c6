"""Progress off a terminal: log events while a job runs, none for a job refused early;
at a terminal: a bar instead.

In-process with short intervals, so the timing rule (an event at least every interval,
even while one item takes longer than that) is checked in a fraction of a second."""

from __future__ import annotations

import io
import json
import time

import pytest
from rich.console import Console

from padformer_edge.cli.progress import job_progress
from padformer_edge.reporting.log import configure_logging


def events(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_a_slow_item_still_gets_a_line_every_interval(capsys: pytest.CaptureFixture) -> None:
    configure_logging("json")
    piped = Console(file=io.StringIO())  # not a terminal: no bar, log events instead
    with job_progress("scoring", console=piped, interval_s=0.05) as progress:
        progress.update(1, 3)
        time.sleep(0.5)  # one slow item: the ticker must speak meanwhile
        progress.update(3)
    logged = events(capsys.readouterr().err)
    assert logged[0]["event"] == "progress" and (logged[0]["done"], logged[0]["total"]) == (1, 3)
    ticks = [e for e in logged[1:-1] if e["event"] == "progress"]
    assert len(ticks) >= 4, logged  # 0.5 s at one line per 0.05 s, allowing a loaded CPU
    assert {e["job"] for e in logged} == {"scoring"}
    assert logged[-1]["event"] == "progress.done" and logged[-1]["done"] == 3
    assert piped.file.getvalue() == ""


def test_a_job_refused_before_its_first_item_logs_nothing(
    capsys: pytest.CaptureFixture,
) -> None:
    configure_logging("json")
    piped = Console(file=io.StringIO())
    with pytest.raises(ValueError), job_progress("scoring", console=piped, interval_s=10):
        raise ValueError("bad input")
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_a_bar_and_no_log_lines(capsys: pytest.CaptureFixture) -> None:
    """At a terminal the same job draws a bar with items done of total, and logs nothing."""
    configure_logging("json")
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    with job_progress("scoring", console=terminal, interval_s=0.05) as progress:
        progress.update(2, 3)
        time.sleep(0.3)  # a few refreshes of the bar, and would-be ticks of a log line
    drawn = terminal.file.getvalue()
    assert "scoring" in drawn and "2/3" in drawn and "━" in drawn
    assert capsys.readouterr().err == ""


def test_nothing_is_logged_before_the_first_item_however_long_it_takes(capsys) -> None:
    """A job refused before its first item (a broken file found while a model loads on a
    loaded machine) prints only its error: the timed lines start with the first item."""
    import time

    from rich.console import Console

    from padformer_edge.cli.progress import job_progress

    console = Console(file=None, force_terminal=False, stderr=True)
    with job_progress("slow", console=console, interval_s=0.05) as progress:
        time.sleep(0.3)  # six intervals with nothing done
        before = capsys.readouterr().err
        progress.update(1, 2)
        time.sleep(0.3)
    after = capsys.readouterr().err
    assert '"progress"' not in before and "progress" not in before
    assert "progress" in after
