"""Reference candidates in a real, migrated database (SQLite, and PostgreSQL where set):
a false-alarm review makes one from a copy of the picture, a true-defect review withdraws
it, only existing ids of the right profile are decided, and a withdrawn one cannot be
approved."""

from __future__ import annotations

import hashlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from sqlalchemy import Engine

from padformer_edge.errors import UserError
from padformer_edge.store.candidates import decide, list_candidates, pending_count, propose
from padformer_edge.store.locations import stored_path
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from padformer_edge.store.reviews import save_review
from padformer_edge.store.vocabulary import CandidateOrigin, CandidateState


def _picture(path: Path, seed: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 255, (16, 16, 3), dtype=np.uint8)
    assert cv2.imwrite(str(path), pixels)
    return path


def _inspected(engine: Engine, path: Path, product: str = "bolt", score: float = 1.0) -> int:
    data = path.read_bytes()
    row = enqueue(engine, camera="cam", product=product, source_path=stored_path(path),
                  sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))  # fmt: skip
    claim_batch(engine, 10)
    complete(engine, row.id, DetectionOutcome(score=score, threshold=2.0, heatmap_path=None,
                                              model_sha256="0" * 64, detect_ms=1.0,
                                              profile_version=3))  # fmt: skip
    return row.id


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def test_a_false_alarm_review_makes_a_candidate_from_a_copy(
    engine: Engine, tmp_path: Path, state: Path
) -> None:
    camera = _picture(tmp_path / "camera" / "a.png", 0)
    inspection = _inspected(engine, camera, score=2.5)
    saved = save_review(engine, inspection, ReviewVerdict.false_alarm, reviewer="ann")
    assert saved.candidate is not None
    camera.unlink()  # the line cleans its camera folder; the candidate keeps its copy
    [candidate] = list_candidates(engine, "bolt", CandidateState.pending)
    assert candidate.id == saved.candidate and candidate.origin is CandidateOrigin.reviewed
    assert candidate.path.is_relative_to(state / "candidates" / "bolt")
    assert hashlib.sha256(candidate.path.read_bytes()).hexdigest() == candidate.sha256
    assert (candidate.score, candidate.proposed_by) == (2.5, "ann")
    # the same picture again (a second review, or the same file inspected twice) adds none
    assert save_review(engine, inspection, ReviewVerdict.false_alarm, reviewer="bob").candidate \
        is None  # fmt: skip
    assert pending_count(engine, "bolt") == 1


def test_a_true_defect_review_withdraws_the_candidate_and_blocks_approval(
    engine: Engine, tmp_path: Path, state: Path
) -> None:
    inspection = _inspected(engine, _picture(tmp_path / "camera" / "b.png", 1))
    made = save_review(engine, inspection, ReviewVerdict.false_alarm, reviewer="ann").candidate
    assert made is not None
    decide(engine, [made], CandidateState.approved, "eve", product="bolt")
    saved = save_review(engine, inspection, ReviewVerdict.true_defect, reviewer="bob")
    assert saved.withdrawn == 1
    [candidate] = list_candidates(engine, "bolt")
    assert candidate.state is CandidateState.rejected
    assert candidate.note == "reviewed as a true defect by bob"
    with pytest.raises(UserError, match=r"reviewed as a true defect; a defect cannot become"):
        decide(engine, [made], CandidateState.approved, "eve", product="bolt")


def test_decisions_name_existing_candidates_of_the_profile(
    engine: Engine, tmp_path: Path, state: Path
) -> None:
    first = propose(engine, _inspected(engine, _picture(tmp_path / "c.png", 2)),
                    CandidateOrigin.confident)  # fmt: skip
    other = propose(engine, _inspected(engine, _picture(tmp_path / "d.png", 3), "nut"),
                    CandidateOrigin.confident)  # fmt: skip
    assert first is not None and other is not None and first.proposed_by is None
    with pytest.raises(UserError, match=rf"there is no candidate {other.id} of profile 'bolt'"):
        decide(engine, [first.id, other.id], CandidateState.approved, "eve", product="bolt")
    assert list_candidates(engine, "bolt")[0].state is CandidateState.pending  # all or none
    [done] = decide(engine, [first.id], CandidateState.rejected, "eve", product="bolt",
                    note="blurred")  # fmt: skip
    assert (done.state, done.decided_by, done.note) == (CandidateState.rejected, "eve", "blurred")


def test_a_picture_changed_since_it_was_scored_is_no_candidate(
    engine: Engine, tmp_path: Path, state: Path
) -> None:
    camera = _picture(tmp_path / "e.png", 4)
    inspection = _inspected(engine, camera)
    _picture(camera, 5)  # the camera wrote another picture under the same name
    assert save_review(engine, inspection, ReviewVerdict.false_alarm,
                       reviewer="ann").candidate is None  # fmt: skip
    assert list_candidates(engine, "bolt") == []
    assert not any((state / "candidates").rglob("*.png"))
