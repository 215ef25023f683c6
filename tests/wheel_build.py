"""Build or install this project from a copy of its sources, as pip does for a user.

The copy keeps a build from writing ``build/`` and egg-info into the checkout, and a stale
``build/lib`` there from slipping old files into the wheel.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What an install reads: the metadata files and the folders pyproject maps to packages.
SOURCES = ("pyproject.toml", "README.md", "padformer_edge", "training", "migrations")


def copy_sources(target: Path) -> Path:
    """The files an install reads, copied into ``target`` (made here); returns it."""
    target.mkdir(parents=True)
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target / name)
    return target


def isolation_flags() -> list[str]:
    """``--no-build-isolation`` where this environment's own setuptools can build a wheel
    without downloads; otherwise none, and pip fetches the build backend the way the
    README's own install does (the project's dependencies are never installed)."""
    if importlib.util.find_spec("setuptools") is None:
        return []
    import setuptools

    major, minor = (int(part) for part in setuptools.__version__.split(".")[:2])
    # setuptools builds wheels by itself from 70.1; older releases need the wheel package.
    offline = (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None
    return ["--no-build-isolation"] if offline else []
