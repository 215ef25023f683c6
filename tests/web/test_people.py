"""The users as the page sees them, over a real SQLite file with the real migrations: read
once per ``ttl_s``; while one request reads them again the others go on with the list in
hand; a ``forget`` (a login just checked a new user) during a read makes the next request
read again."""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import Engine

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.users import add_user
from padformer_edge.store.vocabulary import Role
from padformer_edge.web.people import People


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Gated:
    """The reader a ``People`` asks for its engine, held at a gate while ``hold`` is set."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.hold, self.entered, self.release = False, threading.Event(), threading.Event()

    def __call__(self) -> Engine:
        if self.hold:
            self.entered.set()
            assert self.release.wait(10)
        return self.engine


def _people(tmp_path: Path) -> tuple[Engine, Gated, Clock, People]:
    engine = open_engine(str(tmp_path / "results.sqlite3"))
    upgrade(engine)
    reader, clock = Gated(engine), Clock()
    return engine, reader, clock, People(reader, ttl_s=2.0, clock=clock)


def test_the_others_go_on_with_the_list_in_hand_while_one_reads(tmp_path: Path) -> None:
    engine, reader, clock, people = _people(tmp_path)
    assert people.current() == {} and not people.stale()
    add_user(engine, "ola", Role.operator)
    clock.now += 1.0
    assert people.current() == {}  # within the second: the list read before
    clock.now += 1.5
    assert people.stale()
    reader.hold = True
    got: list[set[str]] = []
    first = threading.Thread(target=lambda: got.append(set(people.current())))
    first.start()
    assert reader.entered.wait(10)
    assert not people.stale()  # the gate need not send this request to a thread
    assert people.current() == {}  # at once, not after the read in progress
    reader.release.set()
    first.join(10)
    assert got == [{"ola"}] and set(people.current()) == {"ola"} and not people.stale()
    engine.dispose()


def test_a_forget_during_a_read_makes_the_next_request_read_again(tmp_path: Path) -> None:
    engine, reader, clock, people = _people(tmp_path)
    assert people.current() == {}
    clock.now += 3.0
    reader.hold = True
    first = threading.Thread(target=people.current)
    first.start()
    assert reader.entered.wait(10)
    add_user(engine, "eve", Role.engineer)  # added after the read began: not in it
    people.forget()
    reader.release.set()
    first.join(10)
    reader.hold = False
    assert people.stale()
    assert set(people.current()) == {"eve"}
    engine.dispose()
