"""The comparator's training: the loss, episodes from a render's tree, a held-out family
refused, and a resumed run that ends with the weights of an uninterrupted one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from padformer_edge.errors import UserError
from padformer_edge_training.comparator.loss import cell_targets, comparator_loss
from padformer_edge_training.comparator.recipe import ComparatorRecipe, load_recipe
from padformer_edge_training.comparator.train import train
from tests.train_helpers import mvtec_like_tree


def recipe(
    root: Path, out: Path, steps: int = 4, episodes: dict | None = None, optim: dict | None = None
) -> ComparatorRecipe:
    return ComparatorRecipe.model_validate(
        {
            "kind": "comparator",
            "data": {"root": str(root), "min_good": 4, "max_good": 6},
            "model": {"input_size": 64, "dim": 32, "depth": 1, "heads": 2, "top_k": 4},
            "episodes": {"reference_counts": [2, 3], **(episodes or {})},
            "optim": {
                "steps": steps,
                "batch_size": 3,
                "warmup_steps": 1,
                "window": 4,
                **(optim or {}),
            },
            "checkpoint": {"out": str(out), "every_steps": 2, "keep_every": 2},
            "cpu_threads": 1,
        }
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return mvtec_like_tree(
        tmp_path_factory.mktemp("render"), {"alpha": 6, "beta": 6}, padded=False, size=72
    )


def test_the_loss_prefers_the_right_cells():
    masks = torch.zeros(2, 32, 32, dtype=torch.bool)
    masks[0, 8:16, 8:16] = True
    targets = cell_targets(masks, 4)
    assert targets[0, 1, 1] == 1.0 and targets[1].sum() == 0
    right = torch.where(targets > 0.5, 6.0, -6.0)
    wrong = -right
    assert comparator_loss(right, targets)["loss"] < comparator_loss(wrong, targets)["loss"]


def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(tree, tmp_path):
    straight = train(recipe(tree, tmp_path / "straight")).checkpoint
    train(recipe(tree, tmp_path / "halves"), stop_at=2)
    resumed = train(recipe(tree, tmp_path / "halves"), resume=True).checkpoint
    assert straight.name == resumed.name == "model.safetensors"
    first, second = load_file(str(straight)), load_file(str(resumed))
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert (tmp_path / "halves" / "step-000004.safetensors").is_file()
    initial = torch.zeros_like(first["comparator.head.weight"])
    assert not torch.equal(first["comparator.head.weight"], initial), "nothing was learned"


def test_a_run_folder_in_use_and_a_changed_recipe_are_refused(tree, tmp_path):
    train(recipe(tree, tmp_path / "run", steps=2))
    with pytest.raises(UserError, match="already holds a run"):
        train(recipe(tree, tmp_path / "run", steps=2))
    with pytest.raises(UserError, match="recipe differs"):
        train(recipe(tree, tmp_path / "run", steps=3), resume=True)


def test_a_recipe_with_an_unknown_key_names_the_key(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text("kind: comparator\noptim:\n  stepz: 3\n")
    with pytest.raises(UserError, match=r"optim\.stepz"):
        load_recipe(path)


def test_a_recipe_naming_no_anomaly_kinds_trains_on_the_blob_kinds_with_the_maximum():
    from padformer_edge_training.comparator.anomalies import BLOB_KINDS

    defaults = ComparatorRecipe(kind="comparator")
    assert tuple(defaults.episodes.synthetic_kinds) == BLOB_KINDS
    assert defaults.optim.image_top_k == 1


def test_a_recipe_with_an_unknown_anomaly_kind_names_it(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text("kind: comparator\nepisodes:\n  synthetic_kinds: [crack, blur, crackz]\n")
    with pytest.raises(UserError) as refused:
        load_recipe(path)
    message = str(refused.value)
    assert "key 'episodes.synthetic_kinds': 'crackz' is no image-space anomaly kind" in message
    assert "the kinds are texture, colour, blur, contrast, curve," in message
    assert "\n" not in message and "line 3" in message
    path.write_text(
        "kind: comparator\nepisodes:\n  synthetic_kinds: [crack, crack, pasted]\n"
        "optim:\n  image_top_k: 3\n"
    )
    loaded = load_recipe(path)
    assert loaded.episodes.synthetic_kinds == ["crack", "crack", "pasted"]
    assert loaded.optim.image_top_k == 3


def test_a_run_on_the_small_kinds_draws_them_and_trains(tree, tmp_path):
    """Every query an image-space anomaly of the small kinds, drawn on the views at the
    input size, and a run with the top-k image term takes its steps."""
    from padformer_edge_training.comparator.anomalies import SMALL_KINDS
    from padformer_edge_training.comparator.episodes import (
        EpisodeMix,
        EpisodeSampler,
        load_objects,
    )
    from padformer_edge_training.comparator.train import fresh_model
    from padformer_edge_training.data.layouts import index_dataset

    small = {"good": 0.0, "rendered": 0.0, "synthetic": 1.0, "synthetic_kinds": [*SMALL_KINDS]}
    run = recipe(tree, tmp_path / "run", steps=2, episodes=small, optim={"image_top_k": 2})
    model = fresh_model(run)
    objects = load_objects(index_dataset(tree), model, 4, 6)
    mix = EpisodeMix(**small, reference_counts=(2,))
    assert mix.synthetic_kinds == tuple(SMALL_KINDS)
    sampler = EpisodeSampler(objects, model, mix, seed=0)
    batch = sampler.batch(0, 6)
    drawn = [m for k, m in zip(batch.kinds, batch.masks, strict=True) if k == "synthetic"]
    assert len(drawn) >= 4
    assert all(mask.any() for mask in drawn)
    trained = load_file(str(train(run).checkpoint))
    assert not torch.equal(
        trained["comparator.head.weight"], torch.zeros_like(trained["comparator.head.weight"])
    ), "nothing was learned"


def test_the_episodes_draw_every_kind_of_query(tree, tmp_path):
    from padformer_edge_training.comparator.episodes import (
        EpisodeMix,
        EpisodeSampler,
        load_objects,
    )
    from padformer_edge_training.comparator.train import fresh_model
    from padformer_edge_training.data.layouts import index_dataset

    model = fresh_model(recipe(tree, tmp_path))
    objects = load_objects(index_dataset(tree), model, 4, 6, tmp_path / "cells.safetensors")
    again = load_objects(index_dataset(tree), model, 4, 6, tmp_path / "cells.safetensors")
    assert torch.equal(objects[0].good_cells, again[0].good_cells)
    sampler = EpisodeSampler(objects, model, EpisodeMix(reference_counts=(2,)), seed=0)
    kinds = set()
    for step in range(6):
        batch = sampler.batch(step, 4, window=4)
        kinds.update(batch.kinds)
        assert batch.query_cells.shape[-2:] == (4, 4)
        assert batch.masks.shape[-2:] == (32, 32)
        assert batch.references.shape[1] == 2
        for kind, mask in zip(batch.kinds, batch.masks, strict=True):
            if kind == "good":
                assert not mask.any()
    assert kinds == {"good", "rendered", "synthetic"}
    repeat = sampler.batch(3, 4, window=4)
    assert torch.equal(repeat.query_cells, sampler.batch(3, 4, window=4).query_cells)
    assert np.array_equal(repeat.masks.numpy(), sampler.batch(3, 4, window=4).masks.numpy())


def test_a_render_holding_a_held_out_family_is_refused(tmp_path):
    import shutil

    root = mvtec_like_tree(tmp_path / "render", {"alpha": 5, "beta": 5}, padded=False, size=72)
    for folder in ("test", "ground_truth"):
        shutil.copytree(root / "alpha" / folder / "Stains", root / "alpha" / folder / "Cracks")
    with pytest.raises(UserError, match="held-out defect kind 'Cracks'"):
        train(recipe(root, tmp_path / "out"))


def test_no_image_space_anomaly_is_named_after_a_held_out_family():
    from padformer_edge_training.comparator.anomalies import ALL_KINDS
    from padformer_edge_training.families import HELD_OUT_FAMILY, held_out_in

    assert not held_out_in([*ALL_KINDS, *(k.capitalize() for k in ALL_KINDS)])
    assert {k.lower() for k in HELD_OUT_FAMILY}.isdisjoint(ALL_KINDS)


def test_ship_writes_the_comparator_and_a_card_the_locator_accepts(tree, tmp_path, monkeypatch):
    """``comparator.ship``: the file copied whole, its card from the checkpoint, the
    recipe's render and the run's log, and the locator vouching for the pair."""
    import json
    import sys

    from padformer_edge import weights
    from padformer_edge_training.comparator import ship

    trained = train(recipe(tree, tmp_path / "run", steps=2)).checkpoint
    (tree / "dataset.json").write_text(json.dumps({"classes": [{}, {}], "defect_kinds": ["X"]}))
    recipe_file = tmp_path / "recipe.yaml"
    recipe_file.write_text(recipe(tree, tmp_path / "run", steps=2).model_dump_json())
    log = tmp_path / "run.log"
    log.write_text(  # the two formats of `train`'s log: --log-format json, and the console
        '{"event": "stage_started", "stage": "comparator", "steps": 2, '
        '"timestamp": "2026-11-28T09:00:00.000000Z"}\n'
        "2026-11-28T09:03:00.000000Z [info     ] train_step     global_step=1 loss=1.0 step=1\n"
        '{"event": "train_step", "global_step": 2, "step": 2, '
        '"timestamp": "2026-11-28T09:06:00.000000Z"}\n'
    )
    out = tmp_path / "package"
    out.mkdir()
    argv = ["ship", str(trained), "--recipe", str(recipe_file), "--log", str(log)]
    monkeypatch.setattr(sys, "argv", [*argv, "--machine", "a test", "--out", str(out)])
    ship.main()
    shipped = out / weights.COMPARATOR_NAME
    card = json.loads(weights.card_path(shipped).read_text())
    assert card["name"] == shipped.stem
    assert card["steps"] == 2 and card["wall_time"] == "6.0 min"
    assert card["data"]["objects"] == 2 and card["data"]["rendered_defects"] == ["X"]
    assert card["families"]["transfer"] == ["Foreign", "Cracks", "Scratches"]
    assert card["families"]["unseen"] == ["Bent"]
    monkeypatch.setenv(weights.COMPARATOR_ENV_VAR, str(shipped))
    assert weights.locate_comparator() == shipped
    assert shipped.read_bytes() == trained.read_bytes()
