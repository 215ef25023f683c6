"""End to end: the synthetic renderer's output (issue #4) read by the loaders and trained on."""

from __future__ import annotations

from pathlib import Path

from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge_training import synth
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.trainer import run_training


def test_rendered_dataset_trains_through_both_stages(tmp_path: Path) -> None:
    counts = synth.ViewCounts(train=5, test_per_defect=1, test_good=1)
    root = synth.render_dataset(
        ["builtin:duck", "builtin:lego"], tmp_path / "synth", counts, size=64
    )
    index = index_dataset(root)
    assert index.layout == "mad-sim" and index.summary() == {"duck": 5, "lego": 5}
    defects = [r for r in index.records if r.split == "test" and not r.is_good]
    assert len(defects) == 6 and all(r.mask is not None and r.mask.is_file() for r in defects)

    config = TrainConfig.model_validate(
        {
            "model": {"preset": "tiny"},
            "data": {"num_refs": 2, "num_workers": 0},
            "loss": {"perceptual": "none"},
            "optim": {"batch_size": 2, "warmup_steps": 1},
            "stages": {"within_view": {"epochs": 1}, "cross_view": {"epochs": 1}},
        }
    )
    summary = run_training(config, root, tmp_path / "run")
    _, metadata = load_checkpoint(summary.checkpoint)
    assert metadata["train_images"] == {"duck": 5, "lego": 5} and summary.global_step == 10
