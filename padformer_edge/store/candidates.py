"""Reference candidates: good parts from the line offered as new references for their
profile, and an engineer's decision on each.

An inspection becomes a candidate when an operator reviews it as a false alarm (the
part is good), or, on a profile that opted in (``references.auto_candidates``), when the
daemon scores it far below the threshold. The picture is copied at that moment into
``<state>/candidates/<profile>/<inspection id><suffix>``: camera folders are cleaned
while a candidate waits for its engineer, and the copy is checked against the sha256
the inspection recorded, so the candidate is the picture that was scored and reviewed.
The path is recorded relative to the state folder, like heatmaps, so a moved state
folder keeps its candidates.

Only an engineer approves or rejects (``decide``); ``profile refresh`` reads the
approved ones. A later review of the same inspection as a true defect rejects its
candidate at once (``withdraw``), whoever had approved it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import Connection, Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.engine import reading
from padformer_edge.store.locations import resolve_stored, state_dir, stored_path
from padformer_edge.store.tables import inspections, reference_candidates, reviews, utc_now
from padformer_edge.store.vocabulary import (
    CandidateOrigin,
    CandidateState,
    ReviewVerdict,
    Status,
)

CANDIDATES_DIR = "candidates"
RC, IN = reference_candidates.c, inspections.c
log = get_logger("candidates")


def candidates_folder(base: Path | None = None) -> Path:
    """Where candidate pictures are kept: ``<state>/candidates``."""
    return (base or state_dir()) / CANDIDATES_DIR


@dataclass(frozen=True)
class Candidate:
    """One candidate as stored."""

    id: int
    inspection_id: int
    product: str
    image_path: str
    sha256: str
    score: float
    threshold: float | None
    model_sha256: str | None
    origin: CandidateOrigin
    state: CandidateState
    proposed_at: datetime
    proposed_by: str | None
    decided_at: datetime | None
    decided_by: str | None
    note: str | None
    line: str  # the line of the inspection it came from

    @property
    def path(self) -> Path:
        """The copied picture (recorded relative to the state folder)."""
        return resolve_stored(self.image_path)


_COLUMNS = (RC.id, RC.inspection_id, RC.product, RC.image_path, RC.sha256, RC.score,
            RC.threshold, RC.model_sha256, RC.origin, RC.state, RC.proposed_at,
            RC.proposed_by, RC.decided_at, RC.decided_by, RC.note, RC.line)  # fmt: skip


def _candidate(row: Sequence[object]) -> Candidate:
    values = list(row)
    values[8] = CandidateOrigin(values[8])  # type: ignore[arg-type]
    values[9] = CandidateState(values[9])  # type: ignore[arg-type]
    return Candidate(*values)  # type: ignore[arg-type]


def _copy_checked(source: Path, destination: Path, sha256: str) -> bool:
    """Copy ``source`` to ``destination`` (atomically) if its bytes still hash to
    ``sha256``; False, with nothing left behind, when the file is gone or was replaced."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp",
                                     dir=destination.parent)  # fmt: skip
    os.close(fd)
    try:
        shutil.copyfile(source, temporary)
        if file_sha256(Path(temporary)) != sha256:
            os.unlink(temporary)
            return False
        os.replace(temporary, destination)
        return True
    except OSError:
        Path(temporary).unlink(missing_ok=True)
        return False


def propose(
    engine: Engine, inspection_id: int, origin: CandidateOrigin, by: str | None = None
) -> Candidate | None:
    """Make finished inspection ``inspection_id`` a pending candidate of its profile,
    copying its picture into the state folder. ``None`` when it cannot be one: not
    finished, its picture already a candidate of that profile (any state: a rejected
    picture is not offered again), or its file gone or changed since it was scored."""
    with reading(engine) as conn:
        row = conn.execute(
            select(IN.line, IN.product, IN.source_path, IN.sha256, IN.score, IN.threshold,
                   IN.model_sha256, IN.status).where(IN.id == inspection_id)
        ).first()  # fmt: skip
        if row is None or row.status != Status.done or row.score is None:
            return None
        known = conn.execute(
            select(RC.id).where(RC.product == row.product, RC.sha256 == row.sha256)
        ).first()
    if known is not None:
        return None
    source = resolve_stored(row.source_path)
    destination = candidates_folder() / row.product / f"{inspection_id}{source.suffix.lower()}"
    if not _copy_checked(source, destination, row.sha256):
        log.warning("candidate.not_copied", inspection=inspection_id, path=str(source),
                    reason="the file is gone or changed since it was scored")  # fmt: skip
        return None
    try:
        with engine.begin() as conn:
            new_id = conn.execute(insert(reference_candidates).values(
                inspection_id=inspection_id, line=row.line, product=row.product,
                image_path=stored_path(destination), sha256=row.sha256, score=row.score,
                threshold=row.threshold, model_sha256=row.model_sha256, origin=origin,
                state=CandidateState.pending, proposed_at=utc_now(), proposed_by=by,
            ).returning(RC.id)).scalar_one()  # fmt: skip
    except IntegrityError:  # proposed by another process a moment ago
        destination.unlink(missing_ok=True)
        return None
    log.info("candidate.proposed", id=new_id, inspection=inspection_id, product=row.product,
             origin=origin.value, by=by)  # fmt: skip
    return get_candidate(engine, new_id)


def withdraw(conn: Connection, inspection_id: int, by: str) -> int:
    """Reject every candidate made from ``inspection_id`` that is not rejected yet: the
    part was reviewed as a true defect, so it must never become a reference. Returns how
    many were withdrawn."""
    result = conn.execute(
        update(reference_candidates)
        .where(RC.inspection_id == inspection_id, RC.state != CandidateState.rejected)
        .values(state=CandidateState.rejected, decided_at=utc_now(), decided_by=by,
                note=f"reviewed as a true defect by {by}")
    )  # fmt: skip
    return int(result.rowcount or 0)


def get_candidate(engine: Engine, candidate_id: int) -> Candidate | None:
    with reading(engine) as conn:
        row = conn.execute(select(*_COLUMNS).where(RC.id == candidate_id)).first()
    return None if row is None else _candidate(row)


def list_candidates(
    engine: Engine,
    product: str | None = None,
    state: CandidateState | None = None,
    limit: int | None = None,
    lines: frozenset[str] | None = None,
) -> list[Candidate]:
    """Candidates, newest first, of ``product``, in ``state`` and of ``lines`` when given."""
    statement = select(*_COLUMNS).order_by(RC.id.desc())
    if lines is not None:
        statement = statement.where(RC.line.in_(sorted(lines)))
    if product is not None:
        statement = statement.where(RC.product == product)
    if state is not None:
        statement = statement.where(RC.state == state)
    if limit is not None:
        statement = statement.limit(limit)
    with reading(engine) as conn:
        return [_candidate(r) for r in conn.execute(statement)]


def pending_count(engine: Engine, product: str) -> int:
    """Candidates of ``product`` waiting for a decision (the daemon's cap on the ones it
    proposes by itself)."""
    with reading(engine) as conn:
        query = select(func.count()).where(
            RC.product == product, RC.state == CandidateState.pending
        )
        return int(conn.execute(query.select_from(reference_candidates)).scalar() or 0)


def decide(
    engine: Engine,
    ids: Sequence[int],
    state: CandidateState,
    by: str,
    product: str | None = None,
    note: str | None = None,
) -> list[Candidate]:
    """Approve or reject candidates ``ids`` (of ``product`` when given) as ``by``, who
    the caller checked is an engineer. All or none: an unknown id, or one of another
    profile, is refused before anything changes, and so is approving a candidate whose
    inspection's latest review says true defect. A decision may be changed later."""
    if state is CandidateState.pending:
        raise UserError("a candidate is approved or rejected, not set back to pending.")
    wanted = sorted(set(ids))
    if not wanted:
        raise UserError("name at least one candidate id; 'profile candidates NAME' lists them.")
    with engine.begin() as conn:
        rows = {r.id: _candidate(r) for r in
                conn.execute(select(*_COLUMNS).where(RC.id.in_(wanted)))}  # fmt: skip
        for candidate_id in wanted:
            found = rows.get(candidate_id)
            if found is None or (product is not None and found.product != product):
                where = f" of profile '{product}'" if product is not None else ""
                raise UserError(
                    f"there is no candidate {candidate_id}{where}; 'padformer-edge profile "
                    "candidates NAME' lists them."
                )
        if state is CandidateState.approved:
            defects = conn.execute(
                select(reviews.c.inspection_id).where(
                    reviews.c.inspection_id.in_([c.inspection_id for c in rows.values()]),
                    reviews.c.verdict == ReviewVerdict.true_defect,
                )
            ).scalars().all()
            for candidate in rows.values():
                if candidate.inspection_id in defects:
                    raise UserError(
                        f"candidate {candidate.id} comes from inspection "
                        f"{candidate.inspection_id}, reviewed as a true defect; a defect "
                        "cannot become a reference (reject the candidate instead)."
                    )
        conn.execute(
            update(reference_candidates).where(RC.id.in_(wanted))
            .values(state=state, decided_at=utc_now(), decided_by=by, note=note)
        )  # fmt: skip
    log.info("candidate.decided", ids=wanted, state=state.value, by=by)
    return [c for c in (get_candidate(engine, i) for i in wanted) if c is not None]
