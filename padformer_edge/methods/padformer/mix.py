"""The ``fused`` mix, written once for torch tensors and numpy arrays: what one job adds
up per pass (``Mix``) and the formula that adds it (``mix_errors``), which the torch
metric (``fused_metric``), the validation sweep and the line's numpy scoring all call, so a
profile scores on a line with the very arithmetic it was calibrated with. No torch is
imported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from padformer_edge.detect.array_ops import Array, ops_of
from padformer_edge.methods.padformer.fused_scoring import JobScoring


@dataclass(frozen=True)
class Mix:
    """What one ``fused`` job adds up per pass: the LAB weight (the feature error takes the
    rest), the nearest-reference term's weight, the zoom its distance is averaged to, and
    whether the references are also matched turned by quarter turns."""

    lab_weight: float
    reference_weight: float = 0.0
    zoom: int = 1
    turns: bool = False

    @classmethod
    def of(cls, lab_weight: float, reference_weight: float, zoom: int, turns: bool) -> Mix:
        """The mix, with zoom 1 and no turns where there is no reference term for them to
        change."""
        if reference_weight > 0:
            return cls(lab_weight, reference_weight, zoom, turns)
        return cls(lab_weight, reference_weight)

    @classmethod
    def of_job(cls, job: JobScoring) -> Mix:
        """The mix a complete job's settings describe."""
        assert job.is_complete
        return cls.of(
            float(job.lab_weight),  # type: ignore[arg-type]
            float(job.reference_weight),  # type: ignore[arg-type]
            int(job.reference_zoom),  # type: ignore[arg-type]
            bool(job.reference_turns),
        )

    def signature(self, reads_reconstruction: bool) -> dict[str, Any]:
        """The mix as a scoring signature's job holds it (``padformer.metrics``); the
        ``distance`` metric weighs the reconstruction out, so it records no LAB weight."""
        values: dict[str, Any] = {
            "reference_weight": float(self.reference_weight),
            "reference_zoom": self.zoom,
            "reference_turns": self.turns,
        }
        if reads_reconstruction:
            values = {"lab_weight": float(self.lab_weight), **values}
        return values


def mix_errors(
    lab: Array,
    feature: Array,
    scales: tuple[float, float],
    lab_weight: float,
    reference: Array | None = None,
    reference_weight: float = 0.0,
    reconstruction_weight: float = 1.0,
) -> Array:
    """The ``fused`` mix of ``[P, H, W]`` LAB and feature errors, each divided by its
    spread on good views, plus ``reference_weight`` times the ``[H, W]`` nearest-reference
    distance: the one formula the detector and the validation sweep share.
    ``reconstruction_weight`` 0 weighs the reconstruction out (the ``distance`` metric)."""
    lab_part = lab_weight / scales[0] * reconstruction_weight
    feature_part = (1.0 - lab_weight) / scales[1] * reconstruction_weight
    mixed = lab * lab_part + feature * feature_part
    if reference_weight > 0:
        if reference is None:
            raise ValueError("a reference weight above 0 needs the reference distance map.")
        mixed = mixed + reference_weight * reference
    return mixed


def mix_jobs(
    lab: Array,
    feature: Array,
    scales: tuple[float, float],
    mixes: Sequence[Mix],
    references: Sequence[Array | None],
    reconstruction_weight: float,
) -> Array:
    """Each job's mix (``mixes``, with each one's ``[H, W]`` reference distance or None):
    ``[P, H, W]`` for one mix, else ``[P, jobs, H, W]``."""
    mixed = [
        mix_errors(
            lab,
            feature,
            scales,
            mix.lab_weight,
            reference,
            mix.reference_weight,
            reconstruction_weight,
        )
        for mix, reference in zip(mixes, references, strict=True)
    ]
    return mixed[0] if len(mixed) == 1 else ops_of(lab).stack(mixed, 1)
