"""Fixtures shared by the daemon tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def line_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The torch-free line profile (``tests.daemon.plant_chaos.line_profile``), exported
    once per test process for every site that copies it in (``make_site(profile=...)``)."""
    from tests.daemon.plant_chaos import line_profile as make

    return make(tmp_path_factory.mktemp("line-profile"))
