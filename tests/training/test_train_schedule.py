"""Warmup + cosine learning-rate curve."""

from __future__ import annotations

from itertools import pairwise

import pytest

from padformer_edge_training.schedule import WarmupCosine


def test_linear_warmup_then_cosine_down_to_the_floor() -> None:
    curve = WarmupCosine(total_steps=110, warmup_steps=10, floor=0.1)
    assert curve(0) == pytest.approx(0.1) and curve(4) == pytest.approx(0.5)
    assert curve(9) == pytest.approx(1.0) and curve(10) == pytest.approx(1.0)
    assert curve(60) == pytest.approx(0.55)  # half-way down the cosine
    assert curve(110) == pytest.approx(0.1) and curve(500) == pytest.approx(0.1)
    values = [curve(s) for s in range(10, 111)]
    assert all(a >= b for a, b in pairwise(values))


def test_no_warmup_starts_at_the_peak() -> None:
    assert WarmupCosine(total_steps=5, warmup_steps=0)(0) == pytest.approx(1.0)
