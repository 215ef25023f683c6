"""The training recipe schema and the shipped recipes."""

from __future__ import annotations

from pathlib import Path

import pytest

from padformer_edge.config import load_config
from padformer_edge.errors import UserError
from padformer_edge.tools.config_kinds import check_config
from padformer_edge_training.config import TrainConfig

RECIPES = Path(__file__).resolve().parents[2] / "config" / "train"


@pytest.mark.parametrize("name", ["paper-mad-sim-4shot.yaml", "small-synth.yaml"])
def test_shipped_recipes_validate_as_train_configs(name: str) -> None:
    kind, config = check_config(RECIPES / name, "train")
    assert kind == "train" and isinstance(config, TrainConfig)
    assert config.data.num_refs == 4


@pytest.mark.parametrize("path", sorted(RECIPES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_recipe_is_known_by_its_kind(path: Path) -> None:
    """`config check` tells a comparator recipe from a PADFormer one by its ``kind`` alone
    (their sections share names), and every recipe in config/train validates as it."""
    kind, config = check_config(path)
    assert kind == ("comparator" if config.kind == "comparator" else "train")
    assert (kind == "comparator") == path.name.startswith("comparator")


def test_a_kind_no_schema_has_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text("kind: detector\noptim: {}\n")
    with pytest.raises(UserError, match="match no known config kind"):
        check_config(path)


def test_paper_recipe_has_the_paper_settings() -> None:
    config = load_config(RECIPES / "paper-mad-sim-4shot.yaml", TrainConfig)
    assert (config.stages.within_view.epochs, config.stages.cross_view.epochs) == (50, 250)
    assert (config.optim.lr, config.optim.warmup_steps) == (4e-4, 2500)
    assert config.model.preset == "paper"


def test_unknown_key_and_bad_values_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("optim:\n  lr: 1e-3\n  warmup: 10\ndata:\n  num_refs: 0\n")
    with pytest.raises(UserError) as err:
        load_config(path, TrainConfig)
    text = str(err.value)
    assert "line 3, key 'optim.warmup': unknown key" in text
    assert "line 5, key 'data.num_refs'" in text


def test_unknown_preset_names_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("model:\n  preset: huge\n")
    with pytest.raises(
        UserError, match=r"line 2, key 'model.preset': unknown preset 'huge'; choose"
    ):
        load_config(path, TrainConfig)
