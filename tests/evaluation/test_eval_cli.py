"""`padformer-edge eval` end to end, as a user runs it: a subprocess on rendered files."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from padformer_edge.cli.app import app
from padformer_edge.errors import UserError
from tests.cli_process import run_cli


def test_eval_writes_metrics_and_report(tiny_data: Path, tiny_checkpoint: Path, tmp_path: Path):
    # no --out: under the state directory, nothing in the folder it runs in
    here, state = tmp_path / "here", tmp_path / "state"
    here.mkdir()
    out = state / "eval"
    done = run_cli(
        "eval", "--model", str(tiny_checkpoint), "--data", str(tiny_data),
        "--passes", "3", "--metric", "auto",
        env={"PADFORMER_EDGE_STATE_DIR": str(state)}, cwd=here, timeout=300,
    )  # fmt: skip  (auto: the model's own metric, which draws the reconstruction shown)
    assert done.returncode == 0, done.stderr
    assert list(here.iterdir()) == []
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["classes"]) == {"duck", "lego"}
    duck = metrics["classes"]["duck"]
    assert set(duck["defects"]) == {"Burrs", "Missing", "Stains"}
    assert duck["images"] == 5 and duck["defects"]["Burrs"]["images"] == 3  # 2 good + 1
    for value in (duck["image_auroc"], duck["pixel_auroc"], duck["aupro"]):
        assert 0.0 <= value <= 1.0
    assert metrics["mean"]["images"] == 10
    logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [finished] = [e for e in logged if e["event"] == "progress.done"]
    assert (finished["job"], finished["done"], finished["total"]) == ("evaluating", 10, 10)
    assert "mean" in done.stdout and "pixel AUROC" in done.stdout
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 10 * 4  # query, recon, map, mask per image
    assert page.index("<h2>") > page.index("duck")


def user_error(*args: str) -> str:
    """The UserError message a command raised (main() prints it as one line, exit 2)."""
    result = CliRunner().invoke(app, list(args))
    assert isinstance(result.exception, UserError), result.output
    return str(result.exception)


def test_eval_user_errors(tiny_data: Path, tiny_checkpoint: Path, tmp_path: Path):
    """In-process: the subprocess above already proves the real entry point."""
    base = ["eval", "--model", str(tiny_checkpoint), "--data", str(tiny_data)]
    assert "--shots 7" in user_error(*base, "--shots", "7", "--out", str(tmp_path / "x"))
    bad = user_error(*base, "--ref-strategy", "best", "--out", str(tmp_path / "y"))
    assert "reference strategy 'best' is unknown" in bad
    assert "does not exist" in user_error(*base[:3], "--data", str(tmp_path / "none"))
    assert "--passes 1" in user_error(*base, "--passes", "1", "--out", str(tmp_path / "z"))
