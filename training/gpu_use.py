"""How busy the GPU is while a run trains: utilisation samples, averaged per stage.

A fine-tune on a few dozen photos is only worth a GPU if the GPU is kept busy; the
samples/s figure alone cannot tell a slow model from a starved one, the GPU's own
utilisation can. ``torch.cuda.utilization`` asks the driver (through NVML), which a
machine may lack: then, and on the CPU, nothing is reported rather than a made-up figure.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

Probe = Callable[[], int | None]


def utilization_probe(device: torch.device) -> Probe:
    """A callable giving ``device``'s utilisation in percent, or None where none is known."""
    if device.type != "cuda":
        return lambda: None
    working = [True]  # after the first failure (no NVML), stop asking

    def probe() -> int | None:
        if not working[0]:
            return None
        try:
            return int(torch.cuda.utilization(device))
        except Exception:  # pynvml missing, driver refused: report nothing, once
            working[0] = False
            return None

    return probe


class UtilizationSamples:
    """The percentages seen over a stage; the mean is reported beside samples/s."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.values: list[int] = []

    def sample(self) -> int | None:
        """Ask once; the answer (or None) is also the step's own figure."""
        value = self.probe()
        if value is not None:
            self.values.append(value)
        return value

    def mean(self) -> float | None:
        return round(sum(self.values) / len(self.values), 1) if self.values else None
