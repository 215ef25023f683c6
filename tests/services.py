"""What a test does when a real service it needs (PostgreSQL, an MQTT broker) is absent.

On a developer's machine it skips, saying how to provide the service. In CI (``CI=true``,
which ``.ci/run`` sets after starting every service) it fails: a missing service there
means the set-up broke, and a skip would hide that the suite never ran.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

TRUE = ("1", "true", "yes")


def in_ci() -> bool:
    """True when the ``CI`` variable says this run is CI (GitHub, GitLab and .ci/run set it)."""
    return os.environ.get("CI", "").strip().lower() in TRUE


def service_missing(reason: str) -> NoReturn:
    """Skip with ``reason`` locally; fail with it in CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: .ci/run starts this service, so this is a set-up error)")
    pytest.skip(reason)


def import_or_missing(module: str, reason: str) -> ModuleType:
    """``pytest.importorskip`` that fails instead of skipping in CI."""
    try:
        return importlib.import_module(module)
    except ImportError:
        service_missing(reason)


POSTGRES_DRIVER = "psycopg2"


def postgres_driver_or_missing() -> ModuleType:
    """The PostgreSQL driver the store connects with, for a test that has a server: a
    machine with PostgreSQL installed but an install without the ``postgresql`` extra
    (which ``dev`` brings) skips, saying so, rather than erroring in the driver import."""
    return import_or_missing(
        POSTGRES_DRIVER,
        "psycopg2, PostgreSQL's driver, is not installed; pip install -e '.[postgresql]' "
        "(the dev extra brings it)",
    )
