"""The one rule for who signs (issue 51: ``alerts ack`` recorded the shell account while
``results review`` refused non-users), on every configured backend."""

from __future__ import annotations

import getpass

import pytest
from sqlalchemy import Engine

from padformer_edge.errors import UserError
from padformer_edge.store import signers
from padformer_edge.store.engine import reading
from padformer_edge.store.signers import (
    ACKNOWLEDGE,
    APPROVE,
    ASSIGN,
    INSTALL,
    PUBLISH,
    RECALIBRATE,
    REJECT,
    REVIEW,
    ROLLBACK,
    check_given,
    signer,
)
from padformer_edge.store.users import add_user
from padformer_edge.store.vocabulary import Role

ANYONE = (REVIEW, ACKNOWLEDGE)
ENGINEERS = (RECALIBRATE, APPROVE, REJECT, INSTALL, ROLLBACK, PUBLISH, ASSIGN)


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> str:
    """The shell account, fixed for the test: getpass reads $LOGNAME first."""
    monkeypatch.setenv("LOGNAME", "line-pc")
    assert getpass.getuser() == "line-pc"
    return "line-pc"


def _sign(engine: Engine, given: str | None, signing: signers.Signing) -> str:
    with reading(engine) as conn:
        return signer(conn, given, signing)


def test_without_users_the_record_names_the_shell_account(engine: Engine, account: str) -> None:
    for signing in (*ANYONE, *ENGINEERS):
        assert _sign(engine, None, signing) == "shell:line-pc"
        assert _sign(engine, " line-pc ", signing) == "shell:line-pc"  # the account itself
        # a typed name is kept, beside the account it was typed in: nothing checked it
        assert _sign(engine, "Ann", signing) == "Ann (shell:line-pc)"


def test_with_users_the_name_must_be_one_and_an_engineer_where_it_changes_a_profile(
    engine: Engine, account: str
) -> None:
    add_user(engine, "ann", Role.operator)
    add_user(engine, "bob", Role.engineer)
    for signing in (*ANYONE, *ENGINEERS):
        assert _sign(engine, "BOB", signing) == "bob"  # the stored spelling
        with pytest.raises(UserError) as missing:
            _sign(engine, None, signing)  # never the login name, even were it a user
        assert str(missing.value) == (
            f"this database has users: name who {signing.act} with {signing.option} USER "
            "('padformer-edge users list' shows them)."
        )
        with pytest.raises(UserError, match=f"'carl' is not a user of this database; "
                           f"{signing.option} must name one"):  # fmt: skip
            _sign(engine, "carl", signing)
    for signing in ANYONE:
        assert _sign(engine, "ann", signing) == "ann"
    for signing in ENGINEERS:
        with pytest.raises(UserError) as operator:
            _sign(engine, "ann", signing)
        assert str(operator.value) == (
            f"user 'ann' is an operator; only an engineer {signing.act}: name one with "
            "--yes ('padformer-edge users list' shows them)."
        )


def test_an_empty_or_overlong_name_is_refused_before_the_database() -> None:
    assert check_given(None, REVIEW) is None and check_given(" ann ", REVIEW) == "ann"
    with pytest.raises(UserError) as empty:
        check_given("  ", REVIEW)
    assert str(empty.value) == "--by needs a name: who reviews an inspection."
    with pytest.raises(UserError, match="the name given to --yes has 65 characters; keep it to 64"):
        check_given("x" * 65, INSTALL)


def test_a_container_without_a_login_name_signs_as_unknown(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(signers.getpass, "getuser", _no_account)
    assert _sign(engine, None, REVIEW) == "shell:unknown"


def _no_account() -> str:
    raise OSError("No username set in the environment")
