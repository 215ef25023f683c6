"""The migrations ship inside the installed package: ``pip install .``, not only editable."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from padformer_edge.store.schema import head_revision

ROOT = Path(__file__).resolve().parents[2]


def _can_build_offline() -> bool:
    """Whether this environment's own setuptools can build a wheel without downloads."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    import setuptools

    major, minor = (int(part) for part in setuptools.__version__.split(".")[:2])
    # setuptools builds wheels by itself from 70.1; older releases need the wheel package.
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


def test_installed_copy_migrates_without_the_source_tree(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("padformer_edge", "migrations", "training"):
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    site = tmp_path / "site"
    # Without an offline-capable setuptools, pip fetches the build backend the way the
    # README's own install does; the project's dependencies are never installed here.
    isolation = ["--no-build-isolation"] if _can_build_offline() else []
    install = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        *isolation,
        "--target",
        str(site),
        str(source),
    ]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    shutil.rmtree(source)  # nothing may be read from a checkout any more
    db = tmp_path / "results.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import migrations, sys; print(padformer_edge_migrations.__file__); "
            "from padformer_edge.cli.app import main; sys.argv[1:] = ['db', 'upgrade', '--db', "
            f"{str(db)!r}]; main()",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(str(site))
    assert f"at schema {head_revision()} (was empty)" in result.stdout
    bundled = subprocess.run(
        [
            sys.executable,
            "-c",
            "from padformer_edge.daemon.settings import BUNDLED_CONFIG, load_daemon_config; "
            "print(BUNDLED_CONFIG); load_daemon_config(None, [])",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bundled.returncode == 0, bundled.stderr
    assert bundled.stdout.startswith(str(site)), "the bundled daemon config must ship in the wheel"
