"""The line site every test here runs on.

In the torch-free venv (CI's line install) the site comes ready-made from
``$PADFORMER_LINE_SITE`` (``tests.line.make_fixture``, run in the main venv); where torch
is installed the fixture makes it itself. Either way the commands under test run in a
subprocess that cannot import torch (``tests.line.no_torch``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

SITE_ENV = "PADFORMER_LINE_SITE"


@pytest.fixture(scope="session")
def line_site_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if given := os.environ.get(SITE_ENV):
        return Path(given)
    from tests.line.make_fixture import make_site

    return make_site(tmp_path_factory.mktemp("line-site-source"))


@pytest.fixture
def line_site(line_site_source: Path, tmp_path: Path) -> Path:
    """A private copy, so a test may change the profile or write results."""
    return Path(shutil.copytree(line_site_source, tmp_path / "site"))
