"""The migrations ship inside the installed package: ``pip install .``, not only editable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from padformer_edge.store.migrations import head_revision
from tests.wheel_build import copy_sources, isolation_flags


def test_installed_copy_migrates_without_the_source_tree(tmp_path: Path) -> None:
    source = copy_sources(tmp_path / "src")
    site = tmp_path / "site"
    install = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        *isolation_flags(),
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
            "import padformer_edge_migrations, sys; print(padformer_edge_migrations.__file__); "
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
