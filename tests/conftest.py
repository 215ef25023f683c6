"""Shared pytest set-up: keep torch to one thread so tests behave the same on 2 cores,
mark the slow tests (``-m "not slow"``: the quick subset), fail a run that changed the
checkout, and the one fixture every package's tests use for a migrated SQLite file."""

import compileall
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import padformer_edge.methods  # noqa: F401  # registers the methods' settings sections
from tests.checkout_guard import changes, checkout_status

os.environ.setdefault("OMP_NUM_THREADS", "1")


def earlier_comparator() -> Path:
    """The 192-px comparator shipped before the default: what the suite scores ``compare``
    with (a fifth of the default's CPU per image, and the scores its expectations were set
    on); the tests of the default and of choosing between comparators unset the variable."""
    from padformer_edge.weights import EARLIER_COMPARATORS, package_folder

    return package_folder() / EARLIER_COMPARATORS[0]


os.environ.setdefault("PADFORMER_EDGE_COMPARATOR", str(earlier_comparator()))

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # the foundation tests do not need torch
    pass


TERMINAL_SIZE_VARIABLES = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # xdist's WorkerController
    """Hand each pytest-xdist worker the terminal-size variables this process has (or not).

    A worker starts with COLUMNS=80 and LINES=24 in its environment whatever the suite's
    own, and the CLI's tables read COLUMNS off a terminal: a 400-column table turned 80."""
    node.workerinput["terminal_size"] = {k: os.environ.get(k) for k in TERMINAL_SIZE_VARIABLES}


def pytest_configure(config: pytest.Config) -> None:
    sizes = getattr(config, "workerinput", {}).get("terminal_size")
    for name, value in (sizes or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


SLOW_PATHS = (
    "web/", "daemon/", "deploy/", "demo/", "line/", "synth/", "comparator/", "evaluation/",
    "training/test_train_", "test_edge_end_to_end.py", "test_services.py", "test_quick_subset.py",
    # over 10 s each in a one-process run of the rest on the shared 2-core machine
    # (2026-11-29): CLI and benchmark subprocesses, the shipped models loaded and run
    "profiles/test_refresh.py", "profiles/test_cli_process.py", "profiles/test_doctor.py",
    "profiles/test_cli.py", "profiles/test_cli_light.py", "store/test_calibrate_from_reviews.py",
    "store/test_results_cli.py", "store/test_users_cli.py", "test_benchmark_tools.py",
    "detect/test_detect_cli.py", "methods/compare/test_compare_profiles.py",
    "research/",
    "cli/test_cli_usage.py",
    "methods/padformer/test_fused_scoring.py", "weights/test_shipped_model.py",
    "test_growth_benchmark.py",
)  # fmt: skip
"""Tests under these paths (relative to tests/; a folder, a file, or a file name's start)
are marked ``slow``: they start daemons, browsers, nginx, the CLI or other pytest processes,
render parts, train models, export graphs or run the shipped models. ``pytest -m "not
slow"`` runs the rest, the quick subset README names; the whole suite stays the default."""


def is_slow(relative: str) -> bool:
    """Whether a test file at ``relative`` (a POSIX path under tests/) is in ``SLOW_PATHS``."""
    return relative.startswith(SLOW_PATHS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).resolve().parent
    for item in items:
        path = Path(item.path).resolve()
        if path.is_relative_to(tests) and is_slow(path.relative_to(tests).as_posix()):
            item.add_marker(pytest.mark.slow)


CHECKOUT_BEFORE = pytest.StashKey[frozenset[str] | None]()


BYTE_COMPILED = ("padformer_edge", "tests", "benchmarks", "research", "training")
"""The folders whose modules the suite's subprocesses import (the CLI, daemons, benchmark
and research scripts): compiled once before the workers start."""


def compile_byte_code(repo: Path) -> None:
    """Write the byte code of the checkout's modules, as installing a wheel does.

    An editable install compiles nothing, and where ``PYTHONDONTWRITEBYTECODE`` is set
    (as on the CI machine) no import writes a cache either, so every CLI or daemon
    subprocess would compile each module it imports from source again: 0.7 s of CPU
    per process here, which the refusal tests (``tests/daemon/test_claims.py``) count
    against a target a line PC meets with its installed byte code. ``compileall`` writes
    whatever the variable says, and atomically, so a reader never sees half a file."""
    for folder in BYTE_COMPILED:
        if (repo / folder).is_dir():
            compileall.compile_dir(repo / folder, quiet=1, workers=1)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the checkout's state once, in the process that runs the session (never in an
    xdist worker: two workers would each see the other's files come and go), after
    compiling its byte code (the guard leaves ``__pycache__`` out)."""
    if not hasattr(session.config, "workerinput"):
        compile_byte_code(Path(__file__).resolve().parent.parent)
        session.config.stash[CHECKOUT_BEFORE] = checkout_status()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a test wrote, changed or removed a file in the checkout (tests
    write under tmp_path; see tests/checkout_guard.py for what is compared)."""
    before = session.config.stash.get(CHECKOUT_BEFORE, None)
    if hasattr(session.config, "workerinput") or before is None:
        return
    after = checkout_status()
    found = changes(before, after) if after is not None else []
    if not found:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [
        "this test run changed the checkout (git status --ignored --porcelain, before "
        "and after); a test must write under tmp_path:",
        *found,
    ]
    if reporter is not None:
        reporter.write_line("")  # after the progress dots
        reporter.write_sep("=", "checkout changed", red=True)
        for line in lines:
            reporter.write_line(line)
    else:
        print("\n".join(lines))
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


SIGNALS_A_TEST_MAY_HANDLE = (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT)


@pytest.fixture(autouse=True)
def restore_signal_handlers() -> Iterator[None]:
    """Put back any signal handler a test installed in this process.

    A training run in the test process leaves handlers behind: PyTorch's DataLoader sets
    a SIGCHLD handler for its workers once and never removes it. With that handler still
    set, every later child of the test process that exited (a daemon subprocess, the
    browser's driver) interrupted this process with a handled signal, and on the CI
    machine one such delivery killed the whole run with SIGSEGV (si_code SI_KERNEL, the
    handler never entered: the kernel could not set up the signal frame). Without
    leftover handlers SIGCHLD is not delivered at all.
    """
    before = {number: signal.getsignal(number) for number in SIGNALS_A_TEST_MAY_HANDLE}
    yield
    for number, handler in before.items():
        if signal.getsignal(number) is not handler and handler is not None:
            signal.signal(number, handler)


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Iterator[Path]:
    """A migrated SQLite file, for tests about files, processes and locks."""
    from padformer_edge.store.engine import open_engine
    from padformer_edge.store.migrations import upgrade

    path = tmp_path / "results.sqlite3"
    writer = open_engine(str(path))
    upgrade(writer)
    writer.dispose()
    yield path
