"""The terminal progress bar shows stage, step, loss and samples/s."""

from __future__ import annotations

import io

from rich.console import Console

from training.progress import RichReporter, StepInfo


def test_rich_reporter_draws_stage_step_loss_and_rate() -> None:
    buffer = io.StringIO()
    reporter = RichReporter(Console(file=buffer, force_terminal=True, width=120), log_every=10**9)
    reporter.stage_started("cross_view", total=10, start=4)
    reporter.step(StepInfo("cross_view", 5, 10, 25, 1, 0.1234, 0.1, 0.0468, 1e-4, 12.5))
    reporter.close()
    text = buffer.getvalue()
    assert "cross-view" in text and "5/10" in text
    assert "loss 0.1234" in text and "12.5 samples/s" in text
