"""How a run reports itself: a rich progress bar on a terminal, structlog events always.

The trainer only calls ``Reporter`` methods, so it does not care whether a person, a
journal or a test is watching.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from padformer_edge.reporting.log import get_logger


@dataclass
class StepInfo:
    """What happened in one optimizer step. A loss term a run does not have is None and is
    left out of the logged event; ``parts`` holds the terms of a loss without an MSE (the
    comparator's focal, dice and image terms)."""

    stage: str
    step: int  # optimizer steps done in this stage
    total: int  # optimizer steps in this stage
    global_step: int
    epoch: int
    loss: float
    mse: float | None
    perceptual: float | None
    lr: float
    samples_per_s: float
    feature: float | None = None  # the masked-feature term (models with CNN tokens)
    match: float | None = None  # the pointer's match term (loss.match_weight > 0)
    gpu_utilization: int | None = None  # percent, on CUDA where the driver reports it
    parts: dict[str, float] = field(default_factory=dict)


OPTIONAL_TERMS = ("mse", "perceptual", "feature", "match", "gpu_utilization")


class Reporter:
    """Logs a structured event every ``log_every`` steps, at least every ``interval_s``
    seconds, and at stage boundaries.

    The interval matters where no progress bar is drawn (systemd, nohup, CI): on a slow
    CPU fifty steps can take minutes, and a silent job looks like a hung one.
    """

    def __init__(
        self,
        log_every: int = 50,
        interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log_every, self.interval_s, self.clock = log_every, interval_s, clock
        self.last_line = clock()

    def stage_started(self, stage: str, total: int, start: int, **fields: Any) -> None:
        self.last_line = self.clock()
        get_logger("train").info(
            "stage_started", stage=stage, steps=total, start_step=start, **fields
        )

    def step(self, info: StepInfo) -> None:
        now = self.clock()
        due = info.step % self.log_every == 0 or info.step == info.total
        if due or now - self.last_line >= self.interval_s:
            self.last_line = now
            values = {k: v for k, v in vars(info).items() if k != "parts"} | info.parts
            # a term the run has not (no perceptual net, the CPU's GPU figure): no such field
            fields = {
                k: round(v, 6) if isinstance(v, float) else v
                for k, v in values.items()
                if v is not None or k not in OPTIONAL_TERMS
            }
            get_logger("train").info("train_step", **fields)

    def stage_finished(self, stage: str, **fields: Any) -> None:
        get_logger("train").info("stage_finished", stage=stage, **fields)

    def close(self) -> None:
        """Release the terminal (nothing to do without a progress bar)."""


class RichReporter(Reporter):
    """Adds a live bar per stage: step, loss, samples/s, the GPU's utilisation and ETA."""

    def __init__(self, console: Console | None = None, log_every: int = 50) -> None:
        super().__init__(log_every)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]:.4f}"),
            TextColumn("{task.fields[rate]:.1f} samples/s"),
            TextColumn("{task.fields[gpu]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.progress.start()

    def stage_started(self, stage: str, total: int, start: int, **fields: Any) -> None:
        super().stage_started(stage, total, start, **fields)
        self.tasks[stage] = self.progress.add_task(
            stage.replace("_", "-"),
            total=total,
            completed=start,
            loss=float("nan"),
            rate=0.0,
            gpu="",
        )

    def step(self, info: StepInfo) -> None:
        super().step(info)
        gpu = "" if info.gpu_utilization is None else f"GPU {info.gpu_utilization}%"
        self.progress.update(
            self.tasks[info.stage],
            completed=info.step,
            loss=info.loss,
            rate=info.samples_per_s,
            gpu=gpu,
        )

    def close(self) -> None:
        self.progress.stop()


class QuietReporter(Reporter):
    """For ranks other than 0: they train but say nothing."""

    def stage_started(self, stage: str, total: int, start: int, **fields: Any) -> None:
        pass

    def step(self, info: StepInfo) -> None:
        pass

    def stage_finished(self, stage: str, **fields: Any) -> None:
        pass
