"""Claims on lines and camera folders: held while renewed, refused in one sentence naming
the holder, free once expired or once the holder's process is gone from this host."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from padformer_edge.errors import UserError
from padformer_edge.store.claims import (
    Claimant,
    acquire,
    folder_resource,
    line_resource,
    list_claims,
    process_exists,
    release,
    renew,
)

T0 = datetime(2026, 11, 29, 6, 0, tzinfo=UTC)
TTL_S = 30.0


def dead_pid() -> int:
    """The id of a process that ran and was reaped: no process has it now."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def here(line: str, pid: int) -> Claimant:
    return Claimant(line=line, host="this-pc", pid=pid, started_at=T0)


def test_a_live_holder_refuses_its_line_and_folder_naming_itself(engine: Engine) -> None:
    holder = here("press-1", os.getppid())  # a live process on this machine: the test's parent
    acquire(engine, holder, ["/srv/cam1", "/srv/cam2"], TTL_S, now=T0)
    assert [c.resource for c in list_claims(engine)] == [
        folder_resource("this-pc", "/srv/cam1"),
        folder_resource("this-pc", "/srv/cam2"),
        line_resource("press-1"),
    ]
    later = T0 + timedelta(seconds=10)
    with pytest.raises(UserError) as same_line:
        acquire(engine, here("press-1", os.getpid()), ["/srv/cam9"], TTL_S, now=later)
    message = str(same_line.value)
    assert message.startswith("line 'press-1' is held by the daemon of line 'press-1'")
    assert f"on host this-pc (PID {os.getppid()}, since 2026-11-29T06:00:00+00:00)" in message
    with pytest.raises(UserError, match=r"camera folder this-pc:/srv/cam2 is held by the "
                       r"daemon of line 'press-1'"):  # fmt: skip
        acquire(engine, here("press-2", os.getpid()), ["/srv/cam2"], TTL_S, now=later)
    # Refused: nothing changed.
    assert {c.pid for c in list_claims(engine)} == {os.getppid()}
    # The holder itself may claim again (the daemon's own start, after `watch` claimed).
    acquire(engine, holder, ["/srv/cam1"], TTL_S, now=later)
    assert len(list_claims(engine)) == 2  # the folder it no longer watches was let go


def test_the_same_path_on_another_pc_is_another_folder(engine: Engine) -> None:
    acquire(engine, Claimant("a", "pc-a", os.getppid(), T0), ["/srv/camera"], TTL_S, now=T0)
    acquire(engine, Claimant("b", "pc-b", os.getpid(), T0), ["/srv/camera"], TTL_S, now=T0)
    assert len(list_claims(engine)) == 4


def test_another_pcs_claim_holds_until_it_expires(engine: Engine) -> None:
    """A holder on another PC cannot be asked whether it lives: its claim holds while it
    is renewed and expires ``ttl_s`` after the last renewal."""
    other = Claimant("press-1", "other-pc", 4242, T0)
    acquire(engine, other, ["/srv/cam"], TTL_S, now=T0)
    renew_at = T0 + timedelta(seconds=20)
    assert renew(engine, other, ["/srv/cam"], now=renew_at) == 2
    mine = here("press-1", os.getpid())
    with pytest.raises(UserError, match=r"on host other-pc \(PID 4242"):
        acquire(engine, mine, ["/srv/mine"], TTL_S, now=renew_at + timedelta(seconds=TTL_S))
    acquire(engine, mine, ["/srv/mine"], TTL_S, now=renew_at + timedelta(seconds=TTL_S + 1))
    claims = list_claims(engine)
    assert {(c.host, c.pid) for c in claims} == {("this-pc", os.getpid())}
    # The old holder, back from the dead, finds it holds nothing any more.
    assert renew(engine, other, ["/srv/cam"], now=renew_at + timedelta(seconds=40)) == 0


def test_a_holder_gone_from_this_host_frees_its_claims_at_once(engine: Engine) -> None:
    gone = dead_pid()
    assert not process_exists(gone) and process_exists(os.getpid())
    acquire(engine, Claimant("press-1", "this-pc", gone, T0), ["/srv/cam"], TTL_S, now=T0)
    acquire(engine, here("press-1", os.getpid()), ["/srv/cam"], TTL_S, now=T0)
    assert {c.pid for c in list_claims(engine)} == {os.getpid()}


def test_release_lets_the_next_daemon_in(engine: Engine) -> None:
    holder = here("press-1", os.getppid())
    acquire(engine, holder, ["/srv/cam"], TTL_S, now=T0)
    assert release(engine, holder) == 2
    assert list_claims(engine) == []
    acquire(engine, here("press-1", os.getpid()), ["/srv/cam"], TTL_S, now=T0)


def _claim(
    engine: Engine, pid: int, line: str, barrier: threading.Barrier, outcomes: dict[int, str]
) -> None:
    barrier.wait()
    try:
        acquire(engine, here(line, pid), [f"/srv/{line}"], TTL_S, now=T0)
        outcomes[pid] = "held"
    except UserError:
        outcomes[pid] = "refused"


def test_two_daemons_claiming_at_once_cannot_both_win(engine: Engine) -> None:
    """Both ask in the same instant, many times over: each time exactly one holds the
    line afterwards and the other was refused."""
    pids = (os.getpid(), os.getppid())  # two live processes of this machine
    for round_ in range(10):
        line, barrier, outcomes = f"press-{round_}", threading.Barrier(2), {}
        threads = [
            threading.Thread(target=_claim, args=(engine, pid, line, barrier, outcomes))
            for pid in pids
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes.values()) == ["held", "refused"]
        winner = next(pid for pid, outcome in outcomes.items() if outcome == "held")
        assert {c.pid for c in list_claims(engine) if c.line == line} == {winner}
