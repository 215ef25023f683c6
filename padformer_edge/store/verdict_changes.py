"""Which stored inspections a new threshold would judge otherwise than they were judged.

A recalibration is shown before it is applied: an engineer must see every part whose
stored verdict the new threshold contradicts, not a summary rate. Only scores computed
by the profile's own model count (another checkpoint's scores are on another scale), and
the comparison is with the verdict stored with each row, which is what the line acted on.
Apart from those, ``unreviewed_cleared`` finds the parts nobody looked at that the
current threshold flags and the new one would pass: each may be a real defect.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, Select, and_, or_, select

from padformer_edge.store.engine import reading
from padformer_edge.store.models import Inspection, Review, ReviewVerdict, Status


@dataclass(frozen=True)
class VerdictChange:
    """One stored inspection whose verdict flips under the new threshold."""

    inspection_id: int
    camera: str
    score: float
    was_anomaly: bool
    review: ReviewVerdict | None

    @property
    def newly_passing(self) -> bool:
        return self.was_anomaly


def _rows(statement: Select, engine: Engine) -> list[VerdictChange]:
    with reading(engine) as conn:
        return [
            VerdictChange(
                int(i), camera, float(score), bool(was), None if v is None else ReviewVerdict(v)
            )
            for i, camera, score, was, v in conn.execute(statement)
        ]


def _scored(product: str, model_sha256: str) -> Select:
    """Finished, scored inspections of ``product`` by ``model_sha256``, with their review."""
    columns = (
        Inspection.id, Inspection.camera, Inspection.score, Inspection.is_anomaly, Review.verdict
    )
    return (
        select(*columns)
        .outerjoin(Review, Review.inspection_id == Inspection.id)
        .where(
            Inspection.product == product,
            Inspection.model_sha256 == model_sha256,
            Inspection.status == Status.done,
            Inspection.score.is_not(None),
        )
    )


def unreviewed_cleared(
    engine: Engine, product: str, model_sha256: str, current: float, new: float
) -> list[VerdictChange]:
    """Unreviewed inspections that threshold ``current`` flags (``score > current``) and
    ``new`` would pass (``score <= new``), highest score first: the parts most like a
    defect first. Judged on the score, not the stored verdict, so rows stored under an
    older threshold count by what the profile says today. Empty when ``new <= current``."""
    statement = (
        _scored(product, model_sha256)
        .where(Review.verdict.is_(None), Inspection.score > current, Inspection.score <= new)
        .order_by(Inspection.score.desc(), Inspection.id)
    )
    return _rows(statement, engine)


def verdict_changes(
    engine: Engine, product: str, model_sha256: str, threshold: float
) -> list[VerdictChange]:
    """Finished inspections of ``product`` scored by ``model_sha256`` whose stored
    ``is_anomaly`` differs from ``score > threshold`` (the one verdict rule,
    ``anomaly.is_anomalous``), in id order."""
    statement = (
        _scored(product, model_sha256)
        .where(
            or_(
                and_(Inspection.is_anomaly.is_(True), Inspection.score <= threshold),
                and_(Inspection.is_anomaly.is_(False), Inspection.score > threshold),
            ),
        )
        .order_by(Inspection.id)
    )
    return _rows(statement, engine)
