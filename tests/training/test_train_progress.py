"""The terminal progress bar shows stage, step, loss and samples/s."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from padformer_edge.reporting.log import configure_logging
from padformer_edge_training.progress import Reporter, RichReporter, StepInfo


def test_rich_reporter_draws_stage_step_loss_and_rate() -> None:
    buffer = io.StringIO()
    reporter = RichReporter(Console(file=buffer, force_terminal=True, width=120), log_every=10**9)
    reporter.stage_started("cross_view", total=10, start=4)
    reporter.step(StepInfo("cross_view", 5, 10, 25, 1, 0.1234, 0.1, 0.0468, 1e-4, 12.5))
    reporter.close()
    text = buffer.getvalue()
    assert "cross-view" in text and "5/10" in text
    assert "loss 0.1234" in text and "12.5 samples/s" in text


def test_without_a_terminal_a_step_is_logged_at_least_every_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Fifty slow steps must not mean minutes of silence in a journal: a line is due once
    ``interval_s`` passed since the last one, whatever the step count."""
    configure_logging("json", "INFO")
    now = [0.0]
    reporter = Reporter(log_every=1000, interval_s=30.0, clock=lambda: now[0])
    reporter.stage_started("within_view", total=5000, start=0)
    for step in range(1, 21):  # 20 steps of 4 s: lines at 32 s and 64 s, none between
        now[0] += 4.0
        reporter.step(StepInfo("within_view", step, 5000, step, 0, 0.5, 0.5, None, 1e-4, 2.0))
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    steps = [line["step"] for line in lines if line["event"] == "train_step"]
    assert steps == [8, 16]
