"""Commands that need no model answer without importing torch, each in its own process.

``profile list`` reads every profile.yaml; before this was guarded it imported torch
through the profile module and took seconds and most of a GiB on a line PC. The module
list of the finished process is the proof, for a real profile made by ``create_profile``.
None of them loads SQLAlchemy and Alembic either, which took
most of their start-up while every command imported the store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from padformer_edge.profiles.create import create_profile
from tests.cli_process import run_cli_modules
from tests.profiles.conftest import FAST

HEAVY = {"torch", "timm", "kornia", "cv2"}
DATABASE = {"sqlalchemy", "alembic"}
DAEMON_CONFIG = Path(__file__).resolve().parents[2] / "config" / "daemon.yaml"


@pytest.fixture
def profiles(tmp_path: Path, product: Path, checkpoint: Path) -> Path:
    root = tmp_path / "profiles"
    create_profile(root, "duck", checkpoint, product / "train" / "good", 2, FAST)
    return root


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["profile", "--help"],
        ["profile", "list"],
        ["profile", "list", "--json"],
        ["config", "check", str(DAEMON_CONFIG)],
    ],
    ids=["help", "profile-help", "profile-list", "profile-list-json", "config-check"],
)
def test_commands_without_a_model_never_import_torch(
    args: list[str], profiles: Path, tmp_path: Path
) -> None:
    result, modules = run_cli_modules(
        *args, record=tmp_path / "modules", env={"PADFORMER_EDGE_PROFILES": str(profiles)}
    )
    assert result.returncode == 0, result.stderr
    assert not modules & HEAVY, sorted(modules & HEAVY)
    if args[:2] == ["profile", "list"]:
        assert "duck" in result.stdout
    assert not modules & DATABASE, sorted(modules & DATABASE)  # nor opens a database
