"""The one GPU session script, ``python3 training/gpu_session.py``, checked on
the CPU.

A GPU machine is lent once and briefly: a candidate that the trainer refuses there, or
weights that do not come back, cost the whole call. So the recipes it writes are loaded
by the trainer's own validation here, and a whole session of two tiny candidates runs
here on the CPU exactly as it runs there, in parallel, into one output folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from datetime import datetime
from pathlib import Path

import pytest
import torch
import yaml

from padformer_edge.config import load_config
from padformer_edge.errors import UserError
from padformer_edge.methods.compare.checkpoint import load_comparator
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.gpu_session import (
    Candidate,
    CandidateError,
    parse_candidate,
    write_recipe,
)
from tests.benchmark_process import run_benchmark
from tests.train_helpers import mvtec_like_tree
from tests.training.test_train_edge import TINY_EDGE

REPO = Path(__file__).resolve().parents[2]
GPU_RECIPE = REPO / "config" / "train" / "edge-synth-gpu.yaml"
TINY = """\
model: {preset: tiny}
data: {num_refs: 2, num_workers: 0}
loss: {perceptual: none}
optim: {batch_size: 2, warmup_steps: 1}
stages: {within_view: {epochs: 1}, cross_view: {epochs: 1}}
checkpoint: {every_steps: 100}
"""

TINY_COMPARATOR = """\
kind: comparator
data: {min_good: 4, max_good: 6}
model: {input_size: 64, dim: 32, depth: 1, heads: 2, top_k: 4}
episodes: {reference_counts: [2, 3]}
optim: {steps: 40, batch_size: 3, warmup_steps: 1, window: 4}
cpu_threads: 1
"""


def test_a_comparator_recipe_takes_steps_and_refuses_the_padformer_options(tmp_path) -> None:
    source = REPO / "config" / "train" / "comparator.yaml"
    target = tmp_path / "recipe.yaml"
    write_recipe(Candidate("c", source, steps=7), target)
    written = yaml.safe_load(target.read_text())
    assert written["optim"]["steps"] == 7 and written["kind"] == "comparator"
    with pytest.raises(CandidateError, match="epochs= is for PADFormer recipes"):
        write_recipe(Candidate("c", source, epochs=(1, 2)), target)
    with pytest.raises(CandidateError, match="steps= is for comparator recipes"):
        write_recipe(Candidate("p", GPU_RECIPE, steps=7), target)


def test_a_candidate_names_its_recipe_and_what_it_changes() -> None:
    spec = "no_aat=config/train/edge-synth-gpu.yaml,data=s0,epochs=3/9,workers=3,off=use_aat"
    assert parse_candidate(spec) == Candidate(
        "no_aat", Path("config/train/edge-synth-gpu.yaml"), "s0", (3, 9), 3, ("use_aat",)
    )
    assert parse_candidate("a=r.yaml") == Candidate("a", Path("r.yaml"))
    assert parse_candidate("p=r.yaml,init=generic,epochs=0/20").init == "generic"
    with pytest.raises(CandidateError, match="needs NAME=RECIPE first"):
        parse_candidate("config/train/edge-synth-gpu.yaml")
    with pytest.raises(CandidateError, match="cannot read 'epochs=30'; give data="):
        parse_candidate("a=r.yaml,epochs=30")
    assert parse_candidate("c=config/train/comparator.yaml,steps=9").steps == 9
    with pytest.raises(CandidateError, match="cannot read 'steps=0'"):
        parse_candidate("a=r.yaml,steps=0")
    with pytest.raises(CandidateError, match="cannot read 'size=9'"):
        parse_candidate("a=r.yaml,size=9")


def test_the_recipe_scales_the_stages_and_switches_a_module_off(tmp_path: Path) -> None:
    target = tmp_path / "recipe.yaml"
    write_recipe(Candidate("x", GPU_RECIPE, epochs=(10, 30), workers=6, off=("use_aat",)), target)
    recipe = load_config(target, TrainConfig)
    source = yaml.safe_load(GPU_RECIPE.read_text(encoding="utf-8"))
    assert (recipe.stages.within_view.epochs, recipe.stages.cross_view.epochs) == (10, 30)
    assert recipe.data.num_workers == 6
    assert recipe.model.overrides == {"use_aat": False}
    assert build_model(recipe.model.preset, **recipe.model.overrides).config.use_aat is False
    # everything else is the recipe unchanged
    assert recipe.model.preset == source["model"]["preset"]
    assert recipe.optim.lr == pytest.approx(source["optim"]["lr"])
    assert recipe.loss.feature_weight == pytest.approx(source["loss"]["feature_weight"])
    assert recipe.stages.within_view.max_rotation == source["stages"]["within_view"]["max_rotation"]


def test_a_recipe_without_changes_is_the_source_and_a_misspelt_switch_is_refused(tmp_path):
    plain = write_recipe(Candidate("x", GPU_RECIPE), tmp_path / "plain.yaml")
    assert plain == yaml.safe_load(GPU_RECIPE.read_text(encoding="utf-8"))
    misspelt = tmp_path / "misspelt.yaml"
    write_recipe(Candidate("x", GPU_RECIPE, off=("use_aatt",)), misspelt)
    recipe = load_config(misspelt, TrainConfig)
    with pytest.raises(UserError, match="unknown model setting"):
        build_model(recipe.model.preset, **recipe.model.overrides)
    broken = tmp_path / "broken.yaml"
    broken.write_text("optim: {batch_sise: 2}\n")
    with pytest.raises(UserError, match="batch_sise"):
        write_recipe(Candidate("x", broken), tmp_path / "out.yaml")


def _session(
    *args: str, timeout: int = 300, bare: bool = False
) -> subprocess.CompletedProcess[str]:
    """The session as the docs run it, by its path, from the repository's root. ``bare``:
    as on a lent machine where padformer-edge is not installed; ``-S`` leaves out
    site-packages and its .pth files (the editable install's finder among them), and the
    dependencies come through PYTHONPATH, as a bundle's site folder does."""
    paths = [sysconfig.get_paths()["purelib"]] if bare else [str(REPO)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "OMP_NUM_THREADS": "1"}
    python = [sys.executable, "-S"] if bare else [sys.executable]
    command = [*python, str(REPO / "training" / "gpu_session.py"), "--device", "cpu", *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout
    )


def test_a_session_trains_its_candidates_side_by_side_into_one_folder(tmp_path: Path) -> None:
    data = mvtec_like_tree(tmp_path / "data", {"a": 4, "b": 4}, padded=True, with_test=False)
    render = mvtec_like_tree(tmp_path / "render", {"a": 6, "b": 6}, padded=False, size=72)
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY)
    comparator = tmp_path / "comparator.yaml"
    comparator.write_text(TINY_COMPARATOR)
    out, work = tmp_path / "out", tmp_path / "work"
    done = _session(
        "--out", str(out), "--work", str(work), "--data", str(data),
        "--candidate", f"full={recipe}", "--candidate", f"short={recipe},epochs=1/0",
        "--candidate", f"cmp={comparator},data={render},steps=3",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    session = json.loads((out / "session.json").read_text())
    assert session["machine"].startswith(f"torch {torch.__version__} ")
    outcomes = {c["name"]: c for c in session["candidates"]}
    assert {name: (c["exit"], c["weights"]) for name, c in outcomes.items()} == {
        "full": (0, "finished"),
        "short": (0, "finished"),
        "cmp": (0, "finished"),
    }
    assert outcomes["cmp"]["kind"] == "comparator"
    _, trained = load_comparator(out / "cmp.safetensors")
    assert trained["step"] == 3  # steps= set the recipe's optim.steps
    del outcomes["cmp"]
    # 8 views in batches of 2: 4 steps per epoch, two stages or the first alone
    assert load_checkpoint(out / "full.safetensors")[1]["global_step"] == 8
    assert load_checkpoint(out / "short.safetensors")[1]["global_step"] == 4
    assert yaml.safe_load((out / "short.yaml").read_text())["stages"]["cross_view"] == {"epochs": 0}
    # the two ran at the same time: each was started before the other was seen ended (the
    # session's own clock, not the trainings' first log lines, which come after imports)
    full, short = (
        {key: datetime.fromisoformat(outcomes[name][key]) for key in ("started", "ended")}
        for name in ("full", "short")
    )
    assert full["started"] < short["ended"] and short["started"] < full["ended"]
    for name, times in (("full", full), ("short", short)):  # each its own length
        own = (times["ended"] - times["started"]).total_seconds()
        assert abs(outcomes[name]["seconds"] - own) < 1.0  # 0.1 s rounding, clocks read apart


def test_a_bare_checkout_trains_with_the_packages_linked_under_their_names(
    tmp_path: Path,
) -> None:
    data = mvtec_like_tree(tmp_path / "data", {"a": 4}, padded=True, with_test=False)
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY)
    out, work = tmp_path / "out", tmp_path / "work"
    common = ["--out", str(out), "--work", str(work), "--data", str(data)]
    done = _session(*common, "--candidate", f"a={recipe},epochs=1/0", bare=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "padformer-edge is not installed here" in done.stdout
    links = work / "import-names"
    assert (links / "padformer_edge_training").resolve() == REPO / "training"
    assert (links / "padformer_edge_migrations").resolve() == REPO / "migrations"
    assert load_checkpoint(out / "a.safetensors")[1]["global_step"] == 2  # 4 views, 2 a batch
    start = tmp_path / "start.safetensors"  # a config the recipe does not ask for
    save_checkpoint(start, build_model("tiny", use_aat=False), {"global_step": 0})
    installed = _session(*common, "--candidate", f"b={recipe},epochs=1/0,init={start}")
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert "not installed" not in installed.stdout  # the install's names, no links
    # init= reached the training: it fine-tuned that checkpoint, with its config, not the
    # recipe's (the tiny preset keeps AAT)
    model, metadata = load_checkpoint(out / "b.safetensors")
    assert metadata["init"]["path"] == str(start) and metadata["global_step"] == 2
    assert model.config.use_aat is False and build_model("tiny").config.use_aat is True
    assert json.loads((out / "session.json").read_text())["candidates"][0]["init"] == str(start)


def test_a_run_stopped_at_the_deadline_and_a_bad_candidate_are_reported(tmp_path: Path) -> None:
    data = mvtec_like_tree(tmp_path / "data", {"a": 4}, padded=True, with_test=False)
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY)
    out, work = tmp_path / "out", tmp_path / "work"
    common = ["--out", str(out), "--work", str(work), "--data", str(data)]
    stopped = _session(*common, "--deadline", "0", "--candidate", f"a={recipe},epochs=50/50")
    assert stopped.returncode == 1, stopped.stderr[-2000:]
    (outcome,) = json.loads((out / "session.json").read_text())["candidates"]
    assert outcome["stopped_at_deadline"] and outcome["exit"] != 0
    assert outcome["weights"] == "none written" and "a: weights none written" in stopped.stdout

    refused = _session(
        *common, "--candidate", f"b={recipe},off=use_stn", "--candidate", "c=nope.yaml"
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: ") and "nope.yaml" in refused.stderr
    assert not (work / "runs" / "b").exists()  # nothing starts while a candidate is refused

    nothing = _session(*common)
    assert nothing.returncode == 2 and "--candidate" in nothing.stderr
    assert "--detect-speed" in nothing.stderr


def test_an_init_is_checked_before_any_training_starts(tmp_path: Path) -> None:
    from padformer_edge_training.gpu_session import Session

    data = mvtec_like_tree(tmp_path / "data", {"a": 2}, padded=True, with_test=False)
    args = type("Args", (), {"out": tmp_path, "work": tmp_path, "bundle": None, "data": None})()
    session = Session(args)
    pointer = REPO / "config" / "train" / "generic-pointer.yaml"
    shipped = session.prepare(Candidate("p", pointer, data=str(data), init="generic"))
    assert shipped.init == "generic"  # the name train --init resolves to the shipped model
    with pytest.raises(UserError, match=r"--init missing\.safetensors: no such checkpoint"):
        session.prepare(Candidate("q", pointer, data=str(data), init="missing.safetensors"))


def test_a_stopped_runs_last_weights_come_back_scaled_and_the_resume_point_untouched(
    tmp_path: Path,
) -> None:
    from padformer_edge_training.gpu_session import Outcome, Session

    data = mvtec_like_tree(tmp_path / "data", {"a": 10}, padded=True, with_test=False)
    run = tmp_path / "work" / "runs" / "edge"
    run.mkdir(parents=True)
    torch.manual_seed(0)
    save_checkpoint(run / "last.safetensors", build_model("edge", **TINY_EDGE), {"global_step": 3})
    before = (run / "last.safetensors").read_bytes()
    args = type("Args", (), {"out": tmp_path / "out", "work": tmp_path / "work"})()
    args.out.mkdir()
    outcome = Outcome("edge", "recipe.yaml", str(data))
    Session(args).send_weights(outcome)
    assert outcome.weights == "last, scaled here"
    assert (run / "last.safetensors").read_bytes() == before
    model, _ = load_checkpoint(args.out / "edge.safetensors")
    scales = model.score_scales.tolist()  # ones until measured
    assert all(s > 0 for s in scales) and all(s != 1.0 for s in scales)


def test_the_gpu_benchmarks_run_as_steps_into_the_session_folder(tmp_path: Path) -> None:
    """Issue 40's measurements at their smallest, on a bare checkout as on a lent machine:
    every step's log and JSON come back, and session.json says how each step ended."""
    out, work = tmp_path / "out", tmp_path / "work"
    common = ["--out", str(out), "--work", str(work), "--gpu-benchmarks", "--bench-tiny"]
    done = _session(*common, "--bench-deadline", "600", timeout=900, bare=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    steps = json.loads((out / "session.json").read_text())["benchmarks"]
    names = ["daemon_burst", "daemon_steady", "gpu_detect_shipped"]
    assert [s["name"] for s in steps] == names
    assert all(s["exit"] == 0 and not s["stopped_at_deadline"] for s in steps)
    assert [s["results"] for s in steps] == [f"{name}.json" for name in names]
    steady = json.loads((out / "daemon_steady.json").read_text())
    assert steady["rate"] == 4.0 and steady["images"] == 4 and steady["model"] == "shipped"
    # counted complete comes after the file was closed: its latency is the shorter
    assert 0 < steady["counted_p50_s"] <= steady["latency_p50_s"]
    assert steady["counted_p95_s"] <= steady["latency_p95_s"]
    assert steady["gpu_reserved_bytes"] is None  # the CPU: /metrics shows no GPU
    grid = json.loads((out / "gpu_detect_shipped.json").read_text())
    assert grid["partial"] is False and len(grid["rows"]) == 2  # 1 and 2 images per call
    assert grid["device"] == "CPU (dry run)" and grid["model"] == "shipped"
    assert {r["precision"] for r in grid["rows"]} == {"fp32"}  # no TF32 or bf16 on a CPU
    # the CPU against itself: the same code on the same images in one call, so the same
    # bits; a gap here would be a bug in the check, not rounding
    assert all(r["parity_gap"] == 0.0 and r["verdicts_agree"] for r in grid["rows"])
    assert "images per call" in (out / "gpu_detect_shipped.log").read_text()
    for script, saved, refusal in (
        ("gpu_detect_speed.py", "gpu_detect_shipped.json", "dry run is no GPU measurement"),
        ("daemon_throughput.py", "daemon_steady.json", "renders GPU runs"),
    ):
        again = run_benchmark(script, "--from-json", str(out / saved), "--write-docs")
        assert again.returncode != 0 and refusal in again.stderr

    late = _session(*common, "--out", str(tmp_path / "late"), "--bench-deadline", "0", bare=True)
    assert late.returncode == 1
    skipped = json.loads((tmp_path / "late" / "session.json").read_text())["benchmarks"]
    assert all(s["exit"] is None and "not started" in s["notes"][0] for s in skipped)
