"""``padformer-edge users`` as a person runs it, in a subprocess on a migrated database
of every configured backend: the token printed once on stdout alone (a script can
capture it) and only its hash stored, the list without tokens, removal asked for, and
``results review`` signed by a user once users exist."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

from sqlalchemy import Engine, select

from padformer_edge.store.drift import record_drift
from padformer_edge.store.engine import reading
from padformer_edge.store.tables import drift_events
from padformer_edge.store.users import authenticate, find_user
from tests.cli_process import run_cli

from .seed import seed_history


def test_users_add_list_reset_and_remove(db_url: str, engine: Engine, tmp_path: Path) -> None:
    db = ("--db", db_url)
    added = run_cli("users", "add", "Ann", *db)
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert len(added.stdout.splitlines()) == 1 and len(token) >= 32
    assert "added ann (operator, every line)" in added.stderr and "shown only now" in added.stderr
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


def test_users_limited_to_lines(db_url: str, engine: Engine) -> None:
    """``--line`` on ``add`` and ``users lines`` set the lines a user sees; the list
    shows them; a name that is no line name, or neither --line nor --all-lines, is one
    sentence."""
    db = ("--db", db_url)
    added = run_cli("users", "add", "ola", "--line", "press-1", "--line", "press-2", *db)
    assert added.returncode == 0, added.stderr
    assert "added ola (operator, press-1, press-2)" in added.stderr
    with reading(engine) as conn:
        assert find_user(conn, "ola").lines == {"press-1", "press-2"}
    listed = json.loads(run_cli("users", "list", "--json", *db).stdout)
    assert listed[0]["lines"] == ["press-1", "press-2"]
    narrowed = run_cli("users", "lines", "ola", "--line", "press-2", *db)
    assert narrowed.returncode == 0 and narrowed.stdout.strip() == "ola (operator) sees press-2."
    table = run_cli("users", "list", *db).stdout
    assert "press-2" in table and "press-1" not in table
    bad = run_cli("users", "lines", "ola", "--line", "press 1", *db)
    assert bad.returncode == 2 and "'press 1' is not a line name" in bad.stderr
    neither = run_cli("users", "lines", "ola", *db)
    assert neither.returncode == 2 and "--all-lines for every line; not both" in neither.stderr
    every = run_cli("users", "lines", "ola", "--all-lines", *db)
    assert every.returncode == 0 and every.stdout.strip() == "ola (operator) sees every line."
    with reading(engine) as conn:
        assert find_user(conn, "ola").lines == frozenset()
    assert run_cli("users", "lines", "nobody", "--all-lines", *db).returncode == 2
    assert run_cli("users", "lines", "ola", "--line", "press-3", *db).returncode == 0
    assert run_cli("users", "remove", "ola", "--yes", *db).returncode == 0  # lines and all
    assert json.loads(run_cli("users", "list", "--json", *db).stdout) == []


def test_results_review_is_signed_by_a_user_once_users_exist(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    row = seed_history(engine, tmp_path / "heatmaps").anomaly_ids[0]
    db = ("--db", db_url)
    assert run_cli("users", "add", "ann", *db).returncode == 0
    stranger = run_cli("results", "review", str(row), "--false-alarm", "--by", "someone", *db)
    assert stranger.returncode == 2
    assert "'someone' is not a user of this database; --by must name one" in stranger.stderr
    unnamed = run_cli("results", "review", str(row), "--false-alarm", *db)  # never the login
    assert unnamed.returncode == 2
    assert "this database has users: name who reviews an inspection with --by USER" in (
        unnamed.stderr
    )
    signed = run_cli("results", "review", str(row), "--false-alarm", "--by", "Ann", *db)
    assert signed.returncode == 0, signed.stderr
    assert signed.stdout.strip() == f"inspection {row} reviewed as false_alarm by ann"


def test_alerts_ack_signs_by_the_same_rule_as_a_review(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    """Issue 51: ``alerts ack`` recorded the login name (``root``, no user) where
    ``results review`` refused anyone but a user. Both now follow store.signers."""
    row = seed_history(engine, tmp_path / "heatmaps").anomaly_ids[0]
    first, second = (_drift(engine, row) for _ in range(2))
    db = ("--db", db_url)
    acked = run_cli("alerts", "ack", str(first), *db)  # no users: the shell account, marked
    assert acked.returncode == 0, acked.stderr
    assert acked.stdout.strip().endswith(f"as shell:{getpass.getuser()}.")
    assert run_cli("users", "add", "ola", *db).returncode == 0  # an operator acknowledges
    for args, refusal in (
        ((), "this database has users: name who acknowledges a drift with --by USER"),
        (("--by", "root"), "'root' is not a user of this database; --by must name one"),
    ):
        refused = run_cli("alerts", "ack", str(second), *args, *db)
        assert refused.returncode == 2 and refusal in refused.stderr, refused.stderr
    signed = run_cli("alerts", "ack", str(second), "--by", "OLA", *db)
    assert signed.returncode == 0, signed.stderr
    with reading(engine) as conn:
        by = dict(conn.execute(select(drift_events.c.id, drift_events.c.acknowledged_by)).all())
    assert by == {first: f"shell:{getpass.getuser()}", second: "ola"}


def test_an_operator_is_refused_each_engineers_act_in_its_own_words(
    db_url: str, engine: Engine
) -> None:
    db = ("--db", db_url)
    assert run_cli("users", "add", "ann", *db).returncode == 0
    for command, act in (
        (("profile", "approve", "duck", "1"), "approves candidates"),
        (("profile", "reject", "duck", "1"), "rejects candidates"),
    ):  # (calibrate --from-reviews: test_calibrate_from_reviews; the rest: test_signers)
        refused = run_cli(*command, "--yes", "ann", *db)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.strip() == (
            f"error: user 'ann' is an operator; only an engineer {act}: name one with "
            "--yes ('padformer-edge users list' shows them)."
        )


def _drift(engine: Engine, inspection: int) -> int:
    return record_drift(
        engine, camera="cam0", product="bolt", kind="binomial", statistic=9.0, p_value=1e-4,
        level=1e-3, window_size=10, reason="planted", inspection_id=inspection, requests=[],
    )  # fmt: skip
