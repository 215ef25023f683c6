"""Commands that need no model answer without importing torch, each in its own process.

Issue 31 names ``--version``, ``--help``, ``profile list``, ``results list`` and ``config
check``: they stay fast because the CLI imports torch-using modules inside the commands
that need them, not because packages hide their imports.

``profile list`` reads every profile.yaml; before this was guarded it imported torch
through the profile module and took seconds and most of a GiB on a line PC. The module
list of the finished process is the proof, for a real profile made by ``create_profile``.
None of them but ``results list`` (which reads the database) loads SQLAlchemy and Alembic
either, which took most of their start-up while every command imported the store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from padformer_edge.profiles.create import create_profile
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import enqueue
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


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """A migrated SQLite store holding one queued inspection, for ``results list``."""
    path = tmp_path / "results.sqlite3"
    engine = open_engine(str(path))
    upgrade(engine)
    enqueue(
        engine, camera="line-cam", product="duck", source_path="/line-cam/a.png",
        sha256="0" * 64, size_bytes=1,
    )  # fmt: skip
    engine.dispose()
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["profile", "--help"],
        ["profile", "list"],
        ["profile", "list", "--json"],
        ["config", "check", str(DAEMON_CONFIG)],
        ["results", "list", "--db", "{database}"],
    ],
    ids=[
        "version", "help", "profile-help", "profile-list", "profile-list-json", "config-check",
        "results-list",
    ],
)  # fmt: skip
def test_commands_without_a_model_never_import_torch(
    args: list[str], profiles: Path, database: Path, tmp_path: Path
) -> None:
    args = [arg.format(database=database) for arg in args]
    result, modules = run_cli_modules(
        *args, record=tmp_path / "modules", env={"PADFORMER_EDGE_PROFILES": str(profiles)}
    )
    assert result.returncode == 0, result.stderr
    assert not modules & HEAVY, sorted(modules & HEAVY)
    if args[:2] == ["profile", "list"]:
        assert "duck" in result.stdout
    if args[:2] == ["results", "list"]:
        assert "line-cam" in result.stdout  # it really read the database
        return  # reading the history is what SQLAlchemy is for
    assert not modules & DATABASE, sorted(modules & DATABASE)  # nor opens a database


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["profile", "create", "new", "-r", "{tmp}/no-refs"],
         "reference folder {tmp}/no-refs does not exist"),
        (["profile", "create", "new", "-r", "{tmp}", "-m", "{tmp}/no.safetensors"],
         "checkpoint {tmp}/no.safetensors does not exist"),
        (["profile", "calibrate", "duck", "--good", "{tmp}/no-good"],
         "good folder {tmp}/no-good does not exist"),
        (["profile", "calibrate", "duck", "--good", "{tmp}", "-a", "{tmp}/no-bad"],
         "anomalous folder {tmp}/no-bad does not exist"),
        (["profile", "calibrate", "dukc", "--good", "{tmp}"], "profile 'dukc' does not exist"),
        (["profile", "set-model", "duck", "-m", "{tmp}/no.safetensors"],
         "checkpoint {tmp}/no.safetensors does not exist"),
        (["profile", "test", "duck", "{tmp}/no.png"], "image {tmp}/no.png does not exist"),
        (["profile", "set-model", "duck"],
         "needs --model FILE, --metric NAME or both; e.g. padformer-edge profile set-model "
         "duck --metric compare"),
    ],
    ids=["create-references", "create-model", "calibrate-good", "calibrate-anomalous",
         "calibrate-profile", "set-model", "test-image", "set-model-nothing"],
)  # fmt: skip
def test_a_wrong_path_or_name_is_one_line_before_torch_loads(
    args: list[str], says: str, profiles: Path, tmp_path: Path
) -> None:
    """Issue 32 measured seconds of torch loading before a mistyped folder was named;
    the profile commands that run the model check their paths and the profile's name
    first (``profile test`` loads OpenCV to read images, never torch)."""
    filled = [arg.format(tmp=tmp_path) for arg in args]
    result, modules = run_cli_modules(*filled, "--root", str(profiles), record=tmp_path / "modules")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert says.format(tmp=tmp_path) in lines[0]
    assert not modules & {"torch", "timm", "kornia"}, sorted(modules & HEAVY)
