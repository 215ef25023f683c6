"""Who signs what a command changes: one rule for every command that records a name
(``results review --by``, ``alerts ack --by``, ``profile calibrate --from-reviews --yes``,
``profile approve / reject / refresh / rollback / publish / assign --yes``).

The shell is trusted: whoever can run these commands can open the database file, so no
token is asked. What the rule settles is what the record says:

- Once the database has users, the name given must be one of them (and an engineer for
  the commands that change a profile); leaving it out is refused, never guessed from the
  login name, which is an account on the machine, not a person of the line.
- While no user exists nothing can be checked, so the record says where the name came
  from: ``shell:LOGIN`` (the shell account) when no name, or the login name, is given;
  ``NAME (shell:LOGIN)`` when another name is typed. A user name never holds ``:``, so
  neither form can pass for a user added later.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass

from sqlalchemy import Connection

from padformer_edge.errors import UserError
from padformer_edge.store.users import LIST_FIX, any_users, find_user
from padformer_edge.store.vocabulary import Role

SHELL_MARK = "shell:"
MAX_SIGNATURE_CHARS = 128  # the reviewer, acknowledged_by and decided_by columns' size
MAX_ACCOUNT_CHARS = 48  # with a 64-character name and the marks, within the 128


@dataclass(frozen=True)
class Signing:
    """What a command signs: its option (``--by`` or ``--yes``), the act in words for
    a refusal ("acknowledges a drift"), and whether only an engineer may do it."""

    option: str
    act: str
    engineer: bool = False


REVIEW = Signing("--by", "reviews an inspection")
ACKNOWLEDGE = Signing("--by", "acknowledges a drift")
RECALIBRATE = Signing("--yes", "applies a recalibration", engineer=True)
APPROVE = Signing("--yes", "approves candidates", engineer=True)
REJECT = Signing("--yes", "rejects candidates", engineer=True)
INSTALL = Signing("--yes", "installs a profile version", engineer=True)
ROLLBACK = Signing("--yes", "rolls a profile back", engineer=True)
PUBLISH = Signing("--yes", "publishes a profile version", engineer=True)
ASSIGN = Signing("--yes", "assigns a profile version to a line", engineer=True)


def shell_account() -> str:
    """The login name of the account running the command (``unknown`` in a bare
    container with neither a password entry nor ``$USER``)."""
    try:
        account = getpass.getuser() or "unknown"
    except (OSError, KeyError):
        return "unknown"
    return account[:MAX_ACCOUNT_CHARS]


def check_given(given: str | None, signing: Signing) -> str | None:
    """``given`` stripped, refused in one sentence when empty or too long; checked before
    any database is read, so a slip costs nothing."""
    if given is None:
        return None
    name = given.strip()
    if not name:
        raise UserError(f"{signing.option} needs a name: who {signing.act}.")
    if len(name) > MAX_SIGNATURE_CHARS // 2:  # room for the shell mark beside it
        raise UserError(
            f"the name given to {signing.option} has {len(name)} characters; keep it to "
            f"{MAX_SIGNATURE_CHARS // 2}."
        )
    return name


def signer(conn: Connection, given: str | None, signing: Signing) -> str:
    """The name to record for ``signing`` done by ``given`` (None: not given), by the
    rule in this module's docstring; refused in one sentence when it does not hold."""
    name = check_given(given, signing)
    if any_users(conn):
        if name is None:
            raise UserError(
                f"this database has users: name who {signing.act} with {signing.option} "
                f"USER ({LIST_FIX})."
            )
        user = find_user(conn, name)
        if user is None:
            raise UserError(
                f"'{name}' is not a user of this database; {signing.option} must name one "
                f"({LIST_FIX})."
            )
        if signing.engineer and user.role is not Role.engineer:
            raise UserError(
                f"user '{user.name}' is an {user.role.value}; only an engineer "
                f"{signing.act}: name one with {signing.option} ({LIST_FIX})."
            )
        return user.name
    account = f"{SHELL_MARK}{shell_account()}"
    if name is None or name == shell_account():
        return account
    return f"{name} ({account})"
