"""``padformer-edge users`` as a person runs it, in a subprocess on a migrated database
of every configured backend: the token printed once on stdout alone (a script can
capture it) and only its hash stored, the list without tokens, removal asked for, and
``results review`` signed by a user once users exist."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import Engine

from padformer_edge.store.engine import reading
from padformer_edge.store.users import authenticate
from tests.cli_process import run_cli

from .seed import seed_history


def test_users_add_list_reset_and_remove(db_url: str, engine: Engine, tmp_path: Path) -> None:
    db = ("--db", db_url)
    added = run_cli("users", "add", "Ann", *db)
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert len(added.stdout.splitlines()) == 1 and len(token) >= 32
    assert "added ann (operator)" in added.stderr and "shown only now" in added.stderr
    with reading(engine) as conn:
        assert authenticate(conn, "ann", token) is not None
    assert run_cli("users", "add", "eve", "--role", "engineer", *db).returncode == 0
    listed = json.loads(run_cli("users", "list", "--json", *db).stdout)
    assert [(u["name"], u["role"]) for u in listed] == [("ann", "operator"), ("eve", "engineer")]
    assert token not in json.dumps(listed)
    again = run_cli("users", "add", "ann", *db)
    assert again.returncode == 2 and "user 'ann' already exists" in again.stderr
    reset = run_cli("users", "reset-token", "ann", *db)
    new_token = reset.stdout.strip()
    with reading(engine) as conn:
        assert authenticate(conn, "ann", token) is None
        assert authenticate(conn, "ann", new_token) is not None
    asked = run_cli("users", "remove", "ann", *db)  # no terminal: nobody to ask
    assert asked.returncode == 2 and "needs confirmation; add --yes" in asked.stderr
    assert run_cli("users", "remove", "ann", "--yes", *db).returncode == 0
    listed = json.loads(run_cli("users", "list", "--json", *db).stdout)
    assert [u["name"] for u in listed] == ["eve"]


def test_results_review_is_signed_by_a_user_once_users_exist(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    row = seed_history(engine, tmp_path / "heatmaps").anomaly_ids[0]
    db = ("--db", db_url)
    assert run_cli("users", "add", "ann", *db).returncode == 0
    stranger = run_cli("results", "review", str(row), "--false-alarm", "--by", "someone", *db)
    assert stranger.returncode == 2
    assert "reviewer 'someone' is not a user of this database" in stranger.stderr
    signed = run_cli("results", "review", str(row), "--false-alarm", "--by", "Ann", *db)
    assert signed.returncode == 0, signed.stderr
    assert signed.stdout.strip() == f"inspection {row} reviewed as false_alarm by ann"
