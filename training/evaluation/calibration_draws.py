"""Resampling calibrations from scores computed once: what ``profile calibrate`` delivers
against its false-alarm target with ``n`` good images, and how often the rate it promises
holds (issue 51). Each draw is a random calibration set; its threshold comes from
``calibrate``'s own code (``choose_threshold``: the quantile plus its bootstrap margin, or
``--upper-bound``) and its promise from ``fpr_bounds.rate_bounds``, so the benchmark checks
the product's rules rather than a copy of them. ``benchmarks/calibration_draws.py`` renders
and scores the views and writes the table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from padformer_edge.anomaly import is_anomalous
from padformer_edge.errors import UserError
from padformer_edge.profiles.calibrate import Rule, choose_threshold
from padformer_edge.profiles.fpr_bounds import rate_bounds
from padformer_edge.profiles.thresholds import COVERAGE_CONFIDENCE, good_images_needed

RULES: tuple[Rule, ...] = ("quantile", "upper-bound")
TARGET_HOLDS = 0.90  # issue 51: the promised bound holds in at least 90 % of draws
TARGET_MEDIAN_SIZE = 30  # ... and a 30-image calibration's median rate is at most
TARGET_MEDIAN_SLACK = 0.02  # the target plus 2 points (12 % for a 10 % target)


@dataclass(frozen=True)
class Draw:
    """One calibration set's threshold, the rate it promised at most, and the rate the
    good views it was not drawn from delivered."""

    threshold: float
    promised: float
    delivered: float

    @property
    def holds(self) -> bool:
        return self.delivered <= self.promised


@dataclass(frozen=True)
class DrawSummary:
    """What ``draws`` calibrations of ``size`` images by ``rule`` delivered; ``refused``
    when the rule cannot promise the target with so few images (``--upper-bound``)."""

    rule: str
    size: int
    draws: int
    refused: bool
    median: float = float("nan")
    p90: float = float("nan")
    promised_median: float = float("nan")
    holds: float = float("nan")

    def as_json(self) -> dict:
        """The summary for the JSON line: a refused row's figures are null, not NaN."""
        return {k: None if isinstance(v, float) and math.isnan(v) else v
                for k, v in self.__dict__.items()}  # fmt: skip


def draw_indices(count: int, size: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``draws`` rows of ``size`` distinct indices into ``count`` scores, each row a random
    calibration set (the indices not in a row are the views it is tested on)."""
    if not 0 < size < count:
        raise UserError(
            f"a calibration of {size} images needs more than {size} scored good views "
            f"(there are {count}); lower --size or raise --good-views."
        )
    return np.stack([rng.choice(count, size=size, replace=False) for _ in range(draws)])


def calibrate_draw(
    calibration: np.ndarray, tested: np.ndarray, target_fpr: float, rule: Rule
) -> Draw:
    """The threshold ``calibrate`` sets on ``calibration`` by ``rule``, the upper bound it
    promises and the share of ``tested`` scores above it (the verdict rule)."""
    threshold = choose_threshold(calibration, target_fpr, rule).value
    promised = rate_bounds(calibration, threshold, COVERAGE_CONFIDENCE).high
    delivered = float(is_anomalous(tested, threshold).mean())
    return Draw(threshold, promised, delivered)


def resample(
    scores: np.ndarray,
    size: int,
    draws: int,
    target_fpr: float,
    rule: Rule,
    seed: int,
    other: np.ndarray | None = None,
) -> DrawSummary:
    """``draws`` calibrations of ``size`` of ``scores``, each tested on the scores it did not
    draw, or on all of ``other`` (another render's) when given."""
    if rule == "upper-bound" and size < good_images_needed(target_fpr):
        return DrawSummary(rule, size, draws, refused=True)
    rows = draw_indices(scores.size, size, draws, np.random.default_rng(seed))
    found = []
    for row in rows:
        tested = other if other is not None else np.delete(scores, row)
        found.append(calibrate_draw(scores[row], tested, target_fpr, rule))
    delivered = np.array([d.delivered for d in found])
    return DrawSummary(
        rule, size, draws, refused=False,
        median=float(np.median(delivered)), p90=float(np.quantile(delivered, 0.9)),
        promised_median=float(np.median([d.promised for d in found])),
        holds=float(np.mean([d.holds for d in found])),
    )  # fmt: skip


def targets(summaries: Sequence[DrawSummary], target_fpr: float) -> dict[str, bool]:
    """Issue 51's two targets, on the same-render rows."""
    median_cap = target_fpr + TARGET_MEDIAN_SLACK
    plain = [s for s in summaries if s.rule == "quantile" and s.size == TARGET_MEDIAN_SIZE]
    holds = all(s.holds >= TARGET_HOLDS for s in summaries if not s.refused)
    median = bool(plain) and all(s.median <= median_cap for s in plain)
    return {
        f"the promised bound holds in at least {TARGET_HOLDS:.0%} of draws": holds,
        f"a {TARGET_MEDIAN_SIZE}-image calibration's median rate is at most {median_cap:.0%}": (
            median
        ),
    }


def percent(value: float) -> str:
    return f"{100 * value:.1f} %"


def table_rows(summaries: Sequence[DrawSummary], target_fpr: float, tested_on: str) -> list:
    rows = []
    for s in summaries:
        rule = "quantile + margin" if s.rule == "quantile" else "--upper-bound"
        if s.refused:
            needed = good_images_needed(target_fpr)
            rows.append([tested_on, rule, s.size, s.draws, f"refused (needs {needed})",
                         "-", "-", "-"])  # fmt: skip
            continue
        rows.append([tested_on, rule, s.size, s.draws, percent(s.median), percent(s.p90),
                     percent(s.promised_median), percent(s.holds)])  # fmt: skip
    return rows


HEADERS = [
    "tested on", "threshold", "calibration images", "draws", "delivered rate: median",
    "90th percentile", "promised upper bound: median", "draws where the bound holds",
]  # fmt: skip
