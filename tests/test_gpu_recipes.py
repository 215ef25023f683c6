"""The recipes the prepared GPU scripts write must load as strict training configs.

A GPU session is lent once and briefly: a recipe that the trainer refuses there costs the
whole call. So the shell helpers of ``benchmarks/gpu_common.sh`` are run here, as the
scripts run them, and what they write is loaded by the trainer's own validation.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from padformer_edge.config import load_config
from padformer_edge.errors import UserError
from padformer_edge.model.padformer import build_model
from training.config import TrainConfig

REPO = Path(__file__).resolve().parent.parent
GPU_RECIPE = REPO / "config" / "train" / "edge-synth-gpu.yaml"


def write_recipe(tmp_path: Path, call: str) -> TrainConfig:
    """Source gpu_common.sh with this interpreter first on the PATH, run ``call`` (which
    writes ``recipe.yaml`` under ``tmp_path``) and load the result strictly."""
    python_dir = Path(sys.executable).parent
    script = (
        f'export PATH="{python_dir}:$PATH" OUT="{tmp_path}"; '
        f"source benchmarks/gpu_common.sh; {call}"
    )
    done = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return load_config(tmp_path / "recipe.yaml", TrainConfig)


def test_edge_recipe_scales_the_stages_and_switches_a_module_off(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, f'edge_recipe "{tmp_path}/recipe.yaml" 10 30 6 use_aat')
    source = yaml.safe_load(GPU_RECIPE.read_text(encoding="utf-8"))
    assert recipe.stages.within_view.epochs == 10
    assert recipe.stages.cross_view.epochs == 30
    assert recipe.data.num_workers == 6
    assert recipe.model.overrides == {"use_aat": False}
    assert build_model(recipe.model.preset, **recipe.model.overrides).config.use_aat is False
    # everything else is the ten-times recipe unchanged
    assert recipe.model.preset == source["model"]["preset"]
    assert recipe.optim.lr == pytest.approx(source["optim"]["lr"])
    assert recipe.loss.feature_weight == pytest.approx(source["loss"]["feature_weight"])


def test_three_times_recipe_keeps_every_module_without_a_switch(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, f'three_times_recipe "{tmp_path}/recipe.yaml"')
    assert (recipe.stages.within_view.epochs, recipe.stages.cross_view.epochs) == (3, 9)
    assert recipe.data.num_workers == 3
    assert recipe.model.overrides == {}


def test_a_misspelt_switch_is_refused_before_training_starts(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, f'edge_recipe "{tmp_path}/recipe.yaml" 1 1 0 use_aatt')
    with pytest.raises(UserError, match="unknown model setting"):
        build_model(recipe.model.preset, **recipe.model.overrides)
