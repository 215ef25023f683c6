"""Learning-rate schedule: linear warmup to the peak, then a cosine down to a floor."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class WarmupCosine:
    """Multiplier of the peak rate at optimizer step ``step`` (for ``LambdaLR``).

    A dataclass rather than a closure so that ``LambdaLR.state_dict`` can record it and a
    resumed run continues on the same curve.
    """

    total_steps: int
    warmup_steps: int
    floor: float = 0.0  # min_lr / lr

    def __call__(self, step: int) -> float:
        if self.warmup_steps > 0 and step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        span = max(self.total_steps - self.warmup_steps, 1)
        progress = min((step - self.warmup_steps) / span, 1.0)
        return self.floor + (1 - self.floor) * 0.5 * (1 + math.cos(math.pi * progress))
