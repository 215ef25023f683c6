"""Named users and signed reviews in the store, on every configured backend: tokens kept
only as salted hashes, names unique whatever their case, reviews signed by a user once
one exists, and every verdict kept (who signs what: test_signers)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, insert, select, text

from padformer_edge.errors import UserError
from padformer_edge.store.engine import reading
from padformer_edge.store.history import prune
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.models import Review, ReviewVerdict
from padformer_edge.store.reviews import reviews_of, save_review
from padformer_edge.store.tables import review_history, reviews
from padformer_edge.store.tokens import hash_token, token_matches
from padformer_edge.store.users import (
    add_user,
    authenticate,
    list_users,
    remove_user,
    reset_token,
)
from padformer_edge.store.vocabulary import Role

from .seed import seed_history

TD, FA = ReviewVerdict.true_defect, ReviewVerdict.false_alarm


@pytest.fixture
def seeded(engine: Engine, tmp_path: Path):
    return seed_history(engine, tmp_path / "heatmaps")


def test_a_token_is_stored_salted_and_checked_exactly() -> None:
    token = "a-personal-token-0123456789abcdef"
    first, second = hash_token(token), hash_token(token)
    assert first != second  # a salt of each hash's own
    assert token not in first and first.startswith("scrypt$")
    assert token_matches(token, first) and token_matches(token, second)
    assert not token_matches(token + "x", first)
    assert not token_matches(token, "plain-text")
    assert not token_matches(token, first.replace("scrypt$", "md5$"))


def test_users_are_added_listed_reset_and_removed(engine: Engine) -> None:
    ann, ann_token = add_user(engine, "Ann", Role.operator)
    bob, _ = add_user(engine, "bob", Role.engineer)
    assert (ann.name, ann.role, bob.role) == ("ann", Role.operator, Role.engineer)
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT token_hash FROM users WHERE name = 'ann'")).scalar()
    assert ann_token not in stored and token_matches(ann_token, stored)
    with pytest.raises(UserError, match=r"user 'ann' already exists.*reset-token ann"):
        add_user(engine, "ANN", Role.engineer)
    with pytest.raises(UserError, match="'a b' is not a user name"):
        add_user(engine, "a b", Role.operator)
    assert [(u.name, u.role) for u in list_users(engine)] == [
        ("ann", Role.operator),
        ("bob", Role.engineer),
    ]
    with reading(engine) as conn:
        assert authenticate(conn, "ANN", ann_token).name == "ann"
        assert authenticate(conn, "ann", "wrong") is None
        assert authenticate(conn, "nobody", ann_token) is None
    changed, new_token = reset_token(engine, "ann")
    assert changed.token_hash != ann.token_hash and new_token != ann_token
    with reading(engine) as conn:
        assert authenticate(conn, "ann", ann_token) is None
        assert authenticate(conn, "ann", new_token) is not None
    assert remove_user(engine, "ann").name == "ann"
    with pytest.raises(UserError, match="there is no user 'ann'; 'padformer-edge users list'"):
        remove_user(engine, "ann")
    assert [u.name for u in list_users(engine)] == ["bob"]


def test_once_a_user_exists_reviews_are_signed_by_one(engine: Engine, seeded) -> None:
    row = seeded.anomaly_ids[0]
    assert save_review(engine, row, FA, reviewer="anyone at all").reviewer == "anyone at all"
    add_user(engine, "ann", Role.operator)
    add_user(engine, "bob", Role.engineer)
    with pytest.raises(UserError, match="reviewer 'anyone' is not a user of this database"):
        save_review(engine, row, TD, reviewer="anyone")
    assert save_review(engine, row, TD, reviewer="Ann").reviewer == "ann"
    assert save_review(engine, row, FA, reviewer="bob").reviewer == "bob"  # engineers review
    remove_user(engine, "ann")  # what she signed keeps her name
    with reading(engine) as conn:
        history = reviews_of(conn, row)
    assert [(r.verdict, r.reviewer) for r in history] == [
        (FA, "bob"),
        (TD, "ann"),
        (FA, "anyone at all"),
    ]


def test_a_changed_verdict_is_a_new_row_and_the_latest_is_shown(engine: Engine, seeded) -> None:
    row = seeded.anomaly_ids[1]
    first, later = datetime(2026, 3, 2, 8, tzinfo=UTC), datetime(2026, 3, 2, 9, tzinfo=UTC)
    save_review(engine, row, FA, reviewer="ann", note="dust", now=first)
    save_review(engine, row, TD, reviewer="bob", note="a real crack", now=later)
    with reading(engine) as conn:
        history = reviews_of(conn, row)
        latest = conn.execute(select(Review.verdict, Review.reviewer)
                              .where(Review.inspection_id == row)).one()  # fmt: skip
        kept = conn.execute(select(func.count()).select_from(Review)).scalar()
        other = reviews_of(conn, seeded.anomaly_ids[0])
    assert [(r.verdict, r.reviewer, r.note, r.reviewed_at) for r in history] == [
        (TD, "bob", "a real crack", later),
        (FA, "ann", "dust", first),
    ]
    assert tuple(latest) == (TD, "bob") and kept == 1 and other == []
    prune(engine, datetime(2027, 1, 1, tzinfo=UTC))  # the history goes with its inspection
    with reading(engine) as conn:
        assert reviews_of(conn, row) == []
        assert conn.execute(select(func.count()).select_from(review_history)).scalar() == 0


def test_the_users_migration_keeps_every_review_as_history(db_url: str, tmp_path: Path) -> None:
    """A database at 0005 with reviews upgrades with each review as its first history
    row, takes users at head, and goes back to 0005 with the reviews intact."""
    from padformer_edge.store import migrations
    from padformer_edge.store.engine import open_engine

    engine = open_engine(db_url)
    upgrade(engine)
    seeded = seed_history(engine, tmp_path / "heatmaps")  # the current tables: seed at head
    migrations.downgrade(engine, "0005")
    at = datetime(2026, 3, 2, 8, tzinfo=UTC)
    with engine.begin() as conn:
        for n, row in enumerate(seeded.anomaly_ids[:2]):
            # reviews has the same columns at 0005 as at head
            conn.execute(insert(reviews).values(inspection_id=row, verdict=FA,
                                                note=f"note {n}", reviewer="ann",
                                                reviewed_at=at))  # fmt: skip
    upgrade(engine)
    with reading(engine) as conn:
        copied = {row: reviews_of(conn, row) for row in seeded.anomaly_ids[:3]}
    shown = {row: [(r.verdict, r.note, r.reviewer, r.reviewed_at) for r in found]
             for row, found in copied.items()}  # fmt: skip
    assert shown == {
        seeded.anomaly_ids[0]: [(FA, "note 0", "ann", at)],
        seeded.anomaly_ids[1]: [(FA, "note 1", "ann", at)],
        seeded.anomaly_ids[2]: [],
    }
    add_user(engine, "ann", Role.operator)
    migrations.downgrade(engine, "0005")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM reviews")).scalar() == 2
    engine.dispose()
