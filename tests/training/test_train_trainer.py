"""The two-stage trainer on a tiny dataset: learning, checkpoints, exact resume, Ctrl-C."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.data.samples import ReferenceSamples
from padformer_edge_training.progress import Reporter, StepInfo
from padformer_edge_training.trainer import _Run, run_training
from tests.train_helpers import mvtec_like_tree


def recipe(**changes) -> TrainConfig:
    """The tiny preset, 2 references, 3 steps per epoch on a 12-image dataset."""
    base = {
        "model": {"preset": "tiny"},
        "data": {"num_refs": 2, "num_workers": 0},
        "loss": {"perceptual_weight": 0.1},
        "optim": {"batch_size": 4, "warmup_steps": 2, "lr": 2e-3, "min_lr": 1e-4},
        "stages": {"within_view": {"epochs": 2}, "cross_view": {"epochs": 2}},
        "checkpoint": {"every_steps": 5},
    }
    for section, values in changes.items():
        base[section] = {**base.get(section, {}), **values} if isinstance(values, dict) else values
    return TrainConfig.model_validate(base)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data") / "MAD-Sim"
    return mvtec_like_tree(root, {"01Duck": 6, "02Mug": 6}, padded=False, with_test=False)


class StopAt(Reporter):
    """Presses Ctrl-C right after global step ``stop``."""

    def __init__(self, stop: int) -> None:
        super().__init__(log_every=1000)
        self.stop = stop

    def step(self, info: StepInfo) -> None:
        if info.global_step == self.stop:
            raise KeyboardInterrupt


def _batch_loss(model, dataset: Path) -> float:
    """MSE of the reconstruction of a fixed cross-view batch under fixed masks."""
    good = index_dataset(dataset).good_train()
    cfg = model.config
    samples = ReferenceSamples(good, "cross_view", 2, cfg.img_size, cfg.norm_mean, cfg.norm_std)
    batch = [samples[(0, i)] for i in range(len(samples))]
    query = torch.stack([b["query"] for b in batch])
    refs = torch.stack([b["refs"] for b in batch])
    mask = model.random_mask(len(batch), torch.Generator().manual_seed(0))
    model.eval()
    with torch.no_grad():
        reconstruction = model(query, refs, mask=mask)[0].pixels
    return float(torch.mean((reconstruction - query) ** 2))


def test_both_stages_train_and_leave_a_loadable_checkpoint(dataset: Path, tmp_path: Path) -> None:
    config = recipe(stages={"within_view": {"epochs": 3}, "cross_view": {"epochs": 5}})
    summary = run_training(config, dataset, tmp_path / "run")
    assert not summary.interrupted and summary.global_step == 24
    assert summary.stages["within_view"]["steps"] == 9
    assert summary.stages["cross_view"]["steps"] == 15
    model, metadata = load_checkpoint(summary.checkpoint)
    assert metadata["global_step"] == 24 and metadata["train_images"] == {"01Duck": 6, "02Mug": 6}
    assert metadata["num_refs"] == 2 and metadata["data_layout"] == "mad-sim"
    for stage in ("within_view", "cross_view"):
        assert load_checkpoint(tmp_path / "run" / f"{stage}.safetensors")[1]["stage"] == stage
    torch.manual_seed(config.seed)
    untrained = build_model("tiny")
    assert _batch_loss(model, dataset) < 0.8 * _batch_loss(untrained, dataset)


def test_stop_and_resume_ends_with_the_same_weights(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # accumulate 2 x batch 2 and a loader worker kept across each stage's 2 epochs: the
    # resume must also get these right.
    config = recipe(
        data={"num_workers": 1},
        optim={"batch_size": 2, "accumulate": 2},
        checkpoint={"every_steps": 4},
    )
    loaders: list[tuple[str, int]] = []
    make_loader = _Run._loader

    def counted(self, samples, stage, first_epoch, skip, per_epoch):
        loaders.append((stage, first_epoch))
        return make_loader(self, samples, stage, first_epoch, skip, per_epoch)

    monkeypatch.setattr(_Run, "_loader", counted)
    straight = run_training(config, dataset, tmp_path / "straight")
    assert straight.global_step == 12
    # one loader, so one start of its workers, per stage: not one per epoch
    assert loaders == [("within_view", 0), ("cross_view", 0)]
    assert straight.stages["cross_view"]["samples_per_s"] > 0
    assert "gpu_utilization_pct" not in straight.stages["cross_view"]  # the CPU: no figure

    # Stop mid-epoch in the first stage, resume, stop again in the second stage, resume.
    stopped = run_training(config, dataset, tmp_path / "resumed", reporter=StopAt(4))
    assert stopped.interrupted and stopped.global_step == 4
    again = run_training(config, dataset, tmp_path / "resumed", resume=True, reporter=StopAt(8))
    assert again.interrupted and (again.resumed_at, again.global_step) == (4, 8)
    final = run_training(config, dataset, tmp_path / "resumed", resume=True)
    assert not final.interrupted and final.global_step == 12

    a = load_file(str(straight.checkpoint))
    b = load_file(str(final.checkpoint))
    assert a.keys() == b.keys()
    # The same steps replayed: only float32 rounding of each tensor's own magnitude differs.
    assert all(
        torch.allclose(a[k], b[k], rtol=1e-5, atol=1e-6 * max(1.0, float(a[k].abs().max())))
        for k in a
    )


def test_run_folder_and_recipe_mistakes_are_one_sentence(dataset: Path, tmp_path: Path) -> None:
    config = recipe(stages={"within_view": {"epochs": 1}, "cross_view": {"epochs": 0}})
    run_training(config, dataset, tmp_path / "run")
    with pytest.raises(UserError, match="already holds a run; pass --resume"):
        run_training(config, dataset, tmp_path / "run")
    with pytest.raises(UserError, match="recipe differs"):
        run_training(recipe(optim={"lr": 1e-3}), dataset, tmp_path / "run", resume=True)
    with pytest.raises(UserError, match="no resume point"):
        run_training(config, dataset, tmp_path / "elsewhere", resume=True)
    run = tmp_path / "run"
    weights = run / "last.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8])  # weights changed behind the resume point
    with pytest.raises(UserError, match="does not match the resume point"):
        run_training(config, dataset, run, resume=True)
    (run / "last.resume.pt").write_bytes(b"not a resume point")
    with pytest.raises(UserError, match="not a readable resume point"):
        run_training(config, dataset, run, resume=True)
    with pytest.raises(UserError, match="fewer than num_refs"):
        run_training(recipe(data={"num_refs": 6}), dataset, tmp_path / "n6")
    with pytest.raises(UserError, match="fewer than one step needs"):
        run_training(recipe(optim={"batch_size": 16}), dataset, tmp_path / "b16")
