"""``padformer-edge demo --quick`` end to end, as a user runs it: a real child process
that itself renders, takes the shipped model (or trains one with ``--train``), calibrates
and runs the daemon as a grandchild."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import cv2
import pytest
import torch
import yaml

from padformer_edge import weights
from padformer_edge.daemon.alerts.outbox import list_alerts
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge.store.engine import open_engine
from padformer_edge.store.history import Filters, list_inspections
from padformer_edge_training.release.ship import ship
from tests.cli_process import REPO


def _demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "padformer_edge", "--log-format", "json", "demo", *args],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "OMP_NUM_THREADS": "1",
             **(env or {})},
    )  # fmt: skip


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny stand-in for the generic model, shipped with a card that holds the duck out."""
    root = tmp_path_factory.mktemp("generic")
    torch.manual_seed(0)
    save_checkpoint(root / "model.safetensors", build_model("tiny"), {"global_step": 7})
    return ship(root / "model.safetensors", root / "pkg", "1 min", "test CPU", ["builtin:duck"])


def test_quick_demo_runs_the_whole_line_with_the_shipped_model(
    shipped: Path, tmp_path: Path
) -> None:
    out, state = tmp_path / "demo", tmp_path / "user-state"
    env = {weights.ENV_VAR: str(shipped), "PADFORMER_EDGE_STATE_DIR": str(state)}
    result = _demo("--quick", "--shots", "3", "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "the profile took 3 reference views" in result.stdout
    assert "training the" not in result.stdout and "How briefly" not in result.stdout
    assert not (out / "run").exists()  # no training step, no run folder
    # the shipped model's demo shows a line camera: frames of a belt, the part found in each
    assert "rendering builtin:duck in 320x256 camera frames of a belt (a part the generic" in (
        result.stdout
    )
    assert {p.suffix for p in (out / "camera").iterdir()} == {".jpg"}
    # a compare profile reads the comparator, not the generic model: the demo says which
    assert "The model: the compare score's shipped weights comparator" in result.stdout
    assert "a compare profile reads no PADFormer checkpoint" in result.stdout
    assert "What the threshold rests on: " in result.stdout and "confidence)" in result.stdout
    # before anything here reads it: the database alone, no -wal, -shm or migration lock
    assert sorted(p.name for p in out.glob("results.sqlite3*")) == ["results.sqlite3"]
    assert not state.exists()  # the demo and its daemon keep to the demo's folder
    _check_the_line(out, result.stdout)
    profile = yaml.safe_load((out / "profiles" / "demo-part" / "profile.yaml").read_text())
    # the product's metric reads the comparator, which the profile names in place of the
    # shipped checkpoint it never reads (issue 62)
    assert profile["detection"]["metric"] == "compare" and profile["model"] is None
    assert profile["weights"]["sha256"] == profile["detection"]["comparator"]
    assert profile["background"]["file"] == "background.png"  # the belt photo it locates with
    # benchmarks/demo_figures.py's PatchCore row reads the same folder: every camera
    # image once, split by its truth as the result database splits it
    from padformer_edge_training.evaluation.demo_figures import baseline_figures, database_figures

    engine = open_engine(str(out / "results.sqlite3"), read_only=True)
    rows = list_inspections(engine, Filters(), limit=100)
    engine.dispose()
    assert all(r.part_box for r in rows)  # every frame's part found, its box stored
    # the docs' picture of it: the frame at 480 px high with the box, beside the heatmap
    from padformer_edge_training.evaluation.demo_figures import picture

    shown = picture(out, tmp_path / "picture.jpg")
    drawn = cv2.imread(str(tmp_path / "picture.jpg"))
    assert (out / "camera" / shown).is_file() and drawn.shape == (480, 600 + 8 + 480, 3)
    flagged, defects, false_alarms, good = baseline_figures(out, "2@64")
    _, db_defects, _, db_good = database_figures(out / "results.sqlite3")
    assert (defects, good) == (db_defects, db_good) and defects > 0 and good > 0
    assert 0 <= flagged <= defects and 0 <= false_alarms <= good


def test_demo_refuses_more_shots_than_it_renders_views(shipped: Path, tmp_path: Path) -> None:
    env = {weights.ENV_VAR: str(shipped)}
    result = _demo("--quick", "--shots", "7", "--out", str(tmp_path / "d"), env=env)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1
    assert "--shots 7 does not fit the 6 good views the demo renders; give 1 to 6." in errors[0]
    assert not (tmp_path / "d").exists()


def test_demo_without_a_shipped_model_says_so_in_one_line(tmp_path: Path) -> None:
    result = _demo("--out", str(tmp_path / "d"), env={weights.ENV_VAR: str(tmp_path / "none")})
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1
    assert "no generic model is shipped in this install" in errors[0]
    assert "padformer-edge demo --train" in errors[0]
    assert not (tmp_path / "d").exists()


def test_quick_demo_with_train_trains_first(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = _demo("--quick", "--train", "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "How briefly the model was trained:" in result.stdout
    assert re.search(r"\d+ optimizer steps \(\d+ samples", result.stdout)
    assert (out / "run" / "model.safetensors").is_file()
    _check_the_line(out, result.stdout)


def _check_the_line(out: Path, stdout: str) -> None:
    """Every camera file has a stored result and heatmap; printed figures match the DB;
    every anomaly raised one delivered alert per sink."""
    engine = open_engine(str(out / "results.sqlite3"), read_only=True)
    rows = list_inspections(engine, Filters(), limit=100)
    camera_files = sorted(p.name for p in (out / "camera").iterdir())
    assert sorted(Path(r.source_path).name for r in rows) == camera_files
    assert len(camera_files) == 4 and all(r.status.value == "done" for r in rows)
    for row in rows:
        heatmap = Path(row.heatmap_path)
        assert heatmap.is_relative_to(out / "heatmaps") and heatmap.is_file()
        assert heatmap.stem == str(row.id)

    anomalous = {r.id for r in rows if r.is_anomaly}
    defects = [r for r in rows if "-good" not in r.source_path]
    flagged = sum(bool(r.is_anomaly) for r in defects)
    assert f"defective parts flagged: {flagged} of {len(defects)}" in stdout

    # Every anomaly raised one alert per sink, each delivered; nothing else raised any.
    alerts = list_alerts(engine, limit=100)
    assert sorted((a["inspection_id"], a["sink"]) for a in alerts) == sorted(
        (i, sink) for i in anomalous for sink in ("log", "alerts-file")
    )
    assert all(a["state"] == "sent" for a in alerts)
    lines = (out / "alerts.jsonl").read_text().splitlines() if anomalous else []
    delivered = [json.loads(line) for line in lines]
    assert sorted(b["alert_id"] for b in delivered) == sorted(
        a["id"] for a in alerts if a["sink"] == "alerts-file"
    )
    engine.dispose()
