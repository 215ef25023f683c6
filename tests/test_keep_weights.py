"""Keeping a GPU run's weights: a float16 copy that reads back as the same run."""

from __future__ import annotations

import pytest
import torch

from benchmarks.keep_weights import keep, largest_relative_change
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import build_model

FP16_RELATIVE = 2.0**-11  # round-to-nearest bound of float16's 11 significant bits


def test_the_copy_is_smaller_reads_back_alike_and_reports_its_rounding(tmp_path):
    torch.manual_seed(0)
    model = build_model("tiny").eval()
    source = tmp_path / "gpu" / "run.safetensors"
    source.parent.mkdir()
    save_checkpoint(source, model, {"global_step": 6000, "stage": "cross_view"})
    kept = keep(source, tmp_path / "kept")
    assert kept["step"] == 6000
    assert kept["bytes_after"] < 0.55 * kept["bytes_before"]
    copy, metadata = load_checkpoint(tmp_path / "kept" / "run.safetensors")
    assert metadata == {"global_step": 6000, "stage": "cross_view"}
    assert copy.config == model.config
    # a tensor's largest entry is a normal float16 number, so its rounding is bounded
    assert 0 < kept["largest_relative_change"] <= FP16_RELATIVE
    assert kept["tensor"] in model.state_dict()


def test_the_largest_change_names_its_tensor():
    before = {"a": torch.tensor([1.0, 2.0]), "b": torch.tensor([4.0, 0.0]), "n": torch.tensor(3)}
    after = {"a": torch.tensor([1.0, 2.1]), "b": torch.tensor([4.0, 1.0]), "n": torch.tensor(9)}
    change, name = largest_relative_change(before, after)
    assert name == "b" and change == pytest.approx(0.25)


def test_a_file_already_in_the_folder_is_refused(tmp_path):
    path = tmp_path / "run.safetensors"
    save_checkpoint(path, build_model("tiny"), {})
    with pytest.raises(UserError, match="already in"):
        keep(path, tmp_path)
