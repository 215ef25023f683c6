"""A user's mistakes on the command line: one line on stderr, status 2, and no torch.

Each case runs the CLI in its own process, as a shell would. Checks of paths and recipes
come before the model stack is imported, so the module list of the finished process
shows that a mistake was reported without loading torch.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import enqueue
from tests.cli_process import run_cli, run_cli_modules

HEAVY = {"torch", "timm", "kornia", "cv2"}
RECIPE = Path(__file__).resolve().parents[2] / "config" / "train" / "small-synth.yaml"


def one_error_line(result) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["train"], "Missing option '--config'"),
        (["detcet"], "No such command 'detcet'. Did you mean 'detect'?"),
        (["results", "list", "--bogus"], "No such option: --bogus"),
        (["results", "list", "--limit", "0"], "Invalid value for '--limit'"),
    ],
    ids=["missing-option", "unknown-command", "unknown-option", "bad-value"],
)
def test_usage_mistakes_are_one_line_with_status_2(args: list[str], says: str) -> None:
    line = one_error_line(run_cli(*args))
    assert says in line
    assert "--help' for its usage" in line or "--help' for its usage" in line.replace("Run", "run")


def test_version_and_results_list_never_import_torch_or_alembic(tmp_path: Path) -> None:
    db = tmp_path / "line.sqlite3"
    engine = open_engine(str(db))
    upgrade(engine)
    row = enqueue(
        engine, camera="cam", product="bolt", source_path="/cam/a.png", sha256="0" * 64,
        size_bytes=1,
    )  # fmt: skip
    engine.dispose()
    version, modules = run_cli_modules("--version", record=tmp_path / "a")
    assert version.returncode == 0 and not modules & HEAVY
    listed, modules = run_cli_modules(
        "results", "list", "--db", str(db), record=tmp_path / "b", env={"COLUMNS": "200"}
    )
    assert listed.returncode == 0, listed.stderr
    when = row.discovered_at.strftime("%Y-%m-%d %H:%M:%S UTC")  # times carry their zone
    assert when in listed.stdout
    assert not modules & HEAVY, sorted(modules & HEAVY)
    # Checking the schema reads the revision files and the version table; Alembic is
    # imported only to migrate.
    assert "alembic" not in modules, sorted(m for m in modules if m.startswith("alembic"))


def test_a_missing_checkpoint_is_reported_before_torch_loads(tmp_path: Path) -> None:
    refs = tmp_path / "refs"
    refs.mkdir()
    image = tmp_path / "x.png"
    image.write_bytes(b"")
    result, modules = run_cli_modules(
        "detect", "--model", "runs/nope.safetensors", "-r", str(refs), str(image),
        record=tmp_path / "m",
    )  # fmt: skip
    assert "checkpoint runs/nope.safetensors does not exist" in one_error_line(result)
    assert not modules & HEAVY, sorted(modules & HEAVY)
    result, modules = run_cli_modules(
        "eval", "--model", "runs/nope.safetensors", "--data", str(refs), record=tmp_path / "e"
    )
    assert "checkpoint runs/nope.safetensors does not exist" in one_error_line(result)
    assert not modules & HEAVY


def test_a_missing_image_is_reported_before_the_model_is_looked_for(tmp_path: Path) -> None:
    """The shipped model is hashed before use (seconds on a slow disk); a mistyped image
    must be named first, and without torch."""
    refs = tmp_path / "refs"
    refs.mkdir()
    env = {"PADFORMER_EDGE_GENERIC_MODEL": str(tmp_path / "absent.safetensors")}
    result, modules = run_cli_modules(
        "detect", "-r", str(refs), str(tmp_path / "nope.png"), record=tmp_path / "m", env=env
    )
    assert f"image {tmp_path / 'nope.png'} does not exist" in one_error_line(result)
    assert not modules & HEAVY, sorted(modules & HEAVY)


def test_a_mistyped_recipe_key_is_reported_before_torch_loads(tmp_path: Path) -> None:
    recipe = yaml.safe_load(RECIPE.read_text())
    recipe["optimiser"] = recipe.pop("optim")  # not the recipe's key
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    result, modules = run_cli_modules("train", "--config", str(path), record=tmp_path / "m")
    assert "optimiser" in one_error_line(result)
    assert not modules & HEAVY, sorted(modules & HEAVY)


def test_training_on_an_empty_folder_leaves_no_run_folder(tmp_path: Path) -> None:
    empty, run = tmp_path / "empty", tmp_path / "runs" / "first"
    empty.mkdir()
    result, modules = run_cli_modules(
        "train", "--config", str(RECIPE), "--data", str(empty), "--out", str(run),
        record=tmp_path / "m",
    )  # fmt: skip
    assert f"data folder {empty} is empty" in one_error_line(result)
    assert not run.exists() and not run.parent.exists()
    assert not modules & HEAVY


def test_a_run_that_fails_after_creating_its_folder_removes_it(tmp_path: Path) -> None:
    """Past the early checks (the folder holds something, just not a dataset), training
    creates the run folder, then finds no layout: the folder goes again."""
    junk, run = tmp_path / "junk", tmp_path / "runs" / "first"
    junk.mkdir()
    (junk / "notes.txt").write_text("not a dataset")
    result = run_cli(  # loads torch and the trainer: allow a loaded machine its minutes
        "train", "--config", str(RECIPE), "--data", str(junk), "--out", str(run), timeout=600
    )
    one_error_line(result)
    assert not run.exists() and not run.parent.exists()


def test_help_has_no_type_tags_on_flags_and_whole_sentences() -> None:
    wide = {"COLUMNS": "200"}
    root = run_cli("--help", env=wide)
    assert root.returncode == 0
    assert "<bool>" not in root.stdout and "--version" in root.stdout
    assert "<bool>" not in run_cli("results", "list", "--help", env=wide).stdout
    train = run_cli("train", "--help", env=wide).stdout
    assert "with --resume continues exactly." in train  # one line in the source was two
