"""Shared pytest set-up: keep torch to one thread so tests behave the same on 2 cores, and
the one fixture every package's tests use for a migrated SQLite file."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # the foundation tests do not need torch
    pass


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Iterator[Path]:
    """A migrated SQLite file, for tests about files, processes and locks."""
    from padformer_edge.store.engine import open_engine
    from padformer_edge.store.schema import upgrade

    path = tmp_path / "results.sqlite3"
    writer = open_engine(str(path))
    upgrade(writer)
    writer.dispose()
    yield path
