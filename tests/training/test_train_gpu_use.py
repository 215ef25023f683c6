"""The GPU's utilisation beside samples/s: averaged where the driver answers, absent where not."""

from __future__ import annotations

import io
import json

import pytest
import torch
from rich.console import Console

from padformer_edge.reporting.log import configure_logging
from padformer_edge_training.gpu_use import UtilizationSamples, utilization_probe
from padformer_edge_training.progress import Reporter, RichReporter, StepInfo
from padformer_edge_training.trainer import StageReport


def test_the_cpu_has_no_utilisation_figure() -> None:
    samples = UtilizationSamples(utilization_probe(torch.device("cpu")))
    assert samples.sample() is None and samples.mean() is None
    assert "gpu_utilization_pct" not in StageReport(gpu=samples).as_dict()


def test_a_stage_reports_the_mean_of_the_answers_it_got() -> None:
    answers = iter([90, None, 60, 75])
    samples = UtilizationSamples(lambda: next(answers))
    assert [samples.sample() for _ in range(4)] == [90, None, 60, 75]
    assert samples.mean() == 75.0  # (90 + 60 + 75) / 3: a step without a figure is not a 0
    assert StageReport(gpu=samples).as_dict()["gpu_utilization_pct"] == 75.0


def test_a_driver_without_nvml_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    def refuse(device: object) -> int:
        calls.append(device)
        raise ModuleNotFoundError("pynvml")

    monkeypatch.setattr(torch.cuda, "utilization", refuse)
    probe = utilization_probe(torch.device("cuda", 0))
    assert [probe(), probe(), probe()] == [None, None, None] and len(calls) == 1


def test_the_bar_and_the_log_show_the_figure_only_when_there_is_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    buffer = io.StringIO()
    bar = RichReporter(Console(file=buffer, force_terminal=True, width=140), log_every=10**9)
    bar.stage_started("cross_view", total=10, start=0)
    bar.step(StepInfo("cross_view", 1, 10, 1, 0, 0.5, 0.5, None, 1e-4, 80.0, gpu_utilization=87))
    bar.close()
    assert "GPU 87%" in buffer.getvalue()

    configure_logging("json", "INFO")
    log = Reporter(log_every=1)
    log.step(StepInfo("cross_view", 1, 2, 1, 0, 0.5, 0.5, None, 1e-4, 2.0))
    log.step(StepInfo("cross_view", 2, 2, 2, 0, 0.5, 0.5, None, 1e-4, 2.0, gpu_utilization=40))
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    steps = [line for line in lines if line["event"] == "train_step"]
    assert "gpu_utilization" not in steps[0] and steps[1]["gpu_utilization"] == 40
