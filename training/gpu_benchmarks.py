"""Issue 40's GPU measurements as steps of the one prepared GPU session
(``gpu_session.py --gpu-benchmarks``): the daemon on a burst and at a steady rate, then the
shipped model's detection grid with its CPU parity check.

A lent machine is held for minutes, so the steps share one deadline: each gets its share
of what is left (time an earlier step did not use passes on), runs in a process group of
its own, and is stopped with everything it started (the daemon under ``watch``) when its
time is up. Each step's output goes to ``NAME.log`` and its results to ``NAME.json`` in the
session's folder; the detection grid saves its rows as it goes, so even a stopped grid
brings back what it measured. Tables for the docs are rendered from those files on the
workstation (``--from-json ... --write-docs``), never typed.

``tiny`` gives every step the smallest sizes with the same options, so that the CPU tests
run exactly the commands a GPU session runs, only smaller.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Step:
    """One benchmark run: its script under ``benchmarks/``, options, and the share of the
    time left when it starts that it may use (1.0 for the last)."""

    name: str
    script: str
    args: tuple[str, ...]
    share: float


@dataclass
class StepOutcome:
    name: str
    exit: int | None = None
    seconds: float = 0.0
    stopped_at_deadline: bool = False
    results: str | None = None  # the JSON file, when the step wrote one
    notes: list[str] = field(default_factory=list)


def plan(out: Path, render: Path, device: str, tiny: bool = False) -> list[Step]:
    """The steps, with the issue's sizes (``tiny``: the least that runs the same code), on
    the demo part's views in ``render`` (rendered there by the first step unless a finished
    render was sent along: ``benchmarks/rendered_part.py``)."""
    if tiny:
        shipped = ("--metric", "distance", "--references", "2", "--views", "3", "--passes",
                   "2", "--size", "64")  # fmt: skip
        daemon = (*shipped, "--cameras", "2", "--batch", "2", "--burst-max-batch", "4")
        burst, steady = ("--images", "4"), ("--images", "4", "--rate", "4")
        grid = (*shipped, "--per-call", "1,2", "--repeats", "1", "--parity-images", "2")
    else:
        daemon = ("--metric", "compare", "--references", "12", "--batch", "8",
                  "--burst-max-batch", "64", "--max-wait-ms", "20")  # fmt: skip
        burst, steady = ("--images", "2000"), ("--images", "600", "--rate", "100")
        grid = ("--references", "4,12", "--per-call", "1,8,32,64", "--repeats", "3",
                "--parity-images", "8")  # fmt: skip
    common = ("--device", device, "--model", "shipped", "--render", str(render))
    return [
        Step("daemon_burst", "daemon_throughput.py",
             (*common, *daemon, *burst, "--json-out", str(out / "daemon_burst.json")), 0.35),
        Step("daemon_steady", "daemon_throughput.py",
             (*common, *daemon, *steady, "--json-out", str(out / "daemon_steady.json")), 0.3),
        Step("gpu_detect_shipped", "gpu_detect_speed.py",
             (*common, *grid, "--json-out", str(out / "gpu_detect_shipped.json")), 1.0),
    ]  # fmt: skip


def run_steps(
    steps: list[Step],
    repo: Path,
    out: Path,
    env: dict[str, str],
    deadline_s: float,
    say: Callable[[str], None] = print,
) -> list[StepOutcome]:
    """Each step in turn within ``deadline_s`` in all, each with its share of the time
    left when it starts (so what a fast step leaves passes on to the next)."""
    outcomes = []
    began = time.monotonic()
    for step in steps:
        left = deadline_s - (time.monotonic() - began)
        budget = left * step.share
        outcome = StepOutcome(step.name)
        if left <= 0:
            outcome.notes.append("not started: the benchmarks' deadline had passed")
            outcomes.append(outcome)
            continue
        command = [sys.executable, str(repo / "benchmarks" / step.script), *step.args]
        started = time.monotonic()
        with (out / f"{step.name}.log").open("wb") as log:
            process = subprocess.Popen(
                command,
                cwd=repo,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its group: the daemon it starts stops with it
            )
            try:
                outcome.exit = process.wait(timeout=max(budget, 1.0))
            except subprocess.TimeoutExpired:
                outcome.stopped_at_deadline = True
                stop_group(process)
                outcome.exit = process.returncode
        outcome.seconds = round(time.monotonic() - started, 1)
        results = out / f"{step.name}.json"
        outcome.results = results.name if results.is_file() else None
        stopped = " (stopped at its share of the deadline)" if outcome.stopped_at_deadline else ""
        say(f"{step.name}: exit {outcome.exit} after {outcome.seconds:.0f} s{stopped}")
        outcomes.append(outcome)
    return outcomes


def stop_group(process: subprocess.Popen[Any], grace_s: float = 20.0) -> None:
    """SIGTERM to the step's whole group (the daemon stops cleanly), SIGKILL after
    ``grace_s``."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()
