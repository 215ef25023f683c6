"""``Recent``: a read shared by every page, made again only once its second is over; a
failed read is not kept, and while one caller reads again the others keep the old value."""

from __future__ import annotations

import threading

import pytest

from padformer_edge.web.recent import Recent


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_read_per_second_for_every_caller() -> None:
    clock, reads = Clock(), []
    recent = Recent(lambda: reads.append(clock.now) or len(reads), 1.0, clock)
    assert [recent.get() for _ in range(5)] == [1] * 5
    clock.now += 0.99
    assert recent.get() == 1
    clock.now += 0.02
    assert recent.get() == 2 and len(reads) == 2
    recent.forget()  # this server changed the store: read at once
    assert recent.get() == 3


def test_no_ttl_reads_every_time() -> None:
    reads: list[int] = []
    recent = Recent(lambda: reads.append(1) or len(reads), 0.0, Clock())
    assert [recent.get() for _ in range(3)] == [1, 2, 3]


def test_a_failed_read_is_not_kept() -> None:
    clock, answers = Clock(), iter([RuntimeError("database gone"), "back"])

    def read() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    recent = Recent(read, 1.0, clock)
    with pytest.raises(RuntimeError, match="database gone"):
        recent.get()
    assert recent.get() == "back"


def test_others_keep_the_old_value_while_one_reads_again() -> None:
    clock, entered, release = Clock(), threading.Event(), threading.Event()
    values = iter(["old", "new"])

    def read() -> str:
        value = next(values)
        if value == "new":
            entered.set()
            release.wait(10)
        return value

    recent = Recent(read, 1.0, clock)
    assert recent.get() == "old"
    clock.now += 2.0
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(recent.get()))
    reader.start()
    assert entered.wait(10)
    assert recent.get() == "old"  # answered at once, not after the read in progress
    release.set()
    reader.join(10)
    assert got == ["new"] and recent.get() == "new"
