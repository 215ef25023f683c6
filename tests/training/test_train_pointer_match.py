"""The match term: the reference pointer taught which reference patch to read.

The teacher for each hidden query patch is the reference patch whose frozen target
feature is nearest in cosine to the patch's own; the term is the cross-entropy of the
pointer's scores against it. It is off (weight 0) unless a recipe asks for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from padformer_edge.config import load_config
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import PADFormer, build_model
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.losses import pointer_match_loss, reference_cosines
from padformer_edge_training.progress import QuietReporter, StepInfo
from padformer_edge_training.trainer import run_training
from tests.train_helpers import mvtec_like_tree, object_image, tiny_edge_recipe
from tests.training.test_train_edge import TINY_EDGE

RECIPES = Path(__file__).resolve().parents[2] / "config" / "train"


class Recorder(QuietReporter):
    """Keeps every step's report, to read the loss terms a run logged."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[StepInfo] = []

    def step(self, info: StepInfo) -> None:
        self.steps.append(info)


def _brute_force_teacher(query: torch.Tensor, references: torch.Tensor) -> torch.Tensor:
    """[B, M] index of the most cosine-similar reference patch, pair by pair."""
    batch, patches, _ = query.shape
    pool = references.flatten(1, 2)
    index = torch.empty(batch, patches, dtype=torch.long)
    for b in range(batch):
        for m in range(patches):
            scores = [float(F.cosine_similarity(query[b, m], r, dim=0)) for r in pool[b]]
            index[b, m] = max(range(len(scores)), key=scores.__getitem__)
    return index


def test_the_teacher_is_the_brute_force_nearest_reference_patch() -> None:
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(2, 6, 12, generator=generator)
    references = torch.randn(2, 3, 6, 12, generator=generator)
    cosines = reference_cosines(query, references)
    teacher = _brute_force_teacher(query, references)
    assert cosines.shape == (2, 6, 18)
    assert torch.equal(cosines.argmax(dim=-1), teacher)
    logits = torch.randn(2, 6, 18, generator=generator)
    mask = torch.tensor([[True, False, True, True, False, True]] * 2)
    expected = F.cross_entropy(logits[mask], teacher[mask])
    got = pointer_match_loss(logits, cosines, mask, min_cosine=-1.0)
    assert torch.allclose(got, expected)


def test_patches_no_reference_shows_are_left_out() -> None:
    basis = torch.eye(4)
    references = basis[:2].view(1, 1, 2, 4)  # the references show directions 0 and 1
    query = torch.stack([basis[0], basis[2], basis[1]]).unsqueeze(0)  # patch 1: unseen
    cosines = reference_cosines(query, references)
    mask = torch.ones(1, 3, dtype=torch.bool)
    logits = torch.randn(1, 3, 2, generator=torch.Generator().manual_seed(1))
    kept = pointer_match_loss(logits, cosines, mask, min_cosine=0.5)
    seen = torch.tensor([0, 2])
    assert torch.allclose(kept, F.cross_entropy(logits[0, seen], torch.tensor([0, 1])))
    assert not torch.allclose(kept, pointer_match_loss(logits, cosines, mask, min_cosine=-1.0))
    nothing = pointer_match_loss(logits, cosines, torch.zeros(1, 3, dtype=torch.bool))
    assert float(nothing) == 0.0


def test_a_soft_target_shares_credit_and_sharpens_into_the_hard_one() -> None:
    generator = torch.Generator().manual_seed(2)
    cosines = torch.rand(1, 4, 5, generator=generator) * 2 - 1
    logits = torch.randn(1, 4, 5, generator=generator)
    mask = torch.ones(1, 4, dtype=torch.bool)
    hard = pointer_match_loss(logits, cosines, mask, min_cosine=-1.0)
    sharp = pointer_match_loss(logits, cosines, mask, temperature=1e-4, min_cosine=-1.0)
    assert torch.allclose(sharp, hard, atol=1e-5)
    soft = pointer_match_loss(logits, cosines, mask, temperature=0.5, min_cosine=-1.0)
    target = (cosines / 0.5).softmax(-1)
    expected = -(target * logits.log_softmax(-1)).sum(-1).mean()
    assert torch.allclose(soft, expected)


def test_the_match_term_is_off_unless_a_recipe_weighs_it() -> None:
    loss = TrainConfig().loss
    assert loss.match_weight == 0.0
    # only the recipe made for it turns it on
    weighted = [
        path.name
        for path in sorted(RECIPES.glob("*.yaml"))
        if "kind: comparator" not in path.read_text()
        if load_config(path, TrainConfig).loss.match_weight > 0
    ]
    assert weighted == ["generic-pointer-match.yaml"]


def _pointer_start(tmp_path: Path) -> tuple[Path, Path]:
    root = mvtec_like_tree(tmp_path / "data", {"a": 8, "b": 8}, padded=False, size=64)
    torch.manual_seed(0)
    start = tmp_path / "start.safetensors"
    model = build_model("edge", **TINY_EDGE, feature_readout="references")
    save_checkpoint(start, model, {"global_step": 3})
    return root, start


def _cross_view_recipe(loss: dict) -> TrainConfig:
    recipe = tiny_edge_recipe({}, loss=loss, cross_view_epochs=4).model_dump()
    recipe["stages"]["within_view"]["epochs"] = 0
    return TrainConfig.model_validate(recipe)


def _image(model: PADFormer, seed: int) -> torch.Tensor:
    bgr = object_image(seed, model.config.img_size)
    rgb = torch.from_numpy(bgr[:, :, ::-1].copy()).permute(2, 0, 1).float() / 255
    return model.normalize(rgb)[0]


def test_the_match_term_falls_in_a_few_steps_on_a_tiny_model() -> None:
    torch.manual_seed(0)
    model = build_model("edge", **TINY_EDGE, feature_readout="references").train()
    query = torch.stack([_image(model, 1), _image(model, 2)])
    refs = torch.stack(
        [torch.stack([_image(model, 10 + i), _image(model, 20 + i)]) for i in (0, 1)]
    )
    mask = model.random_mask(2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref_targets = model.target_features(refs.flatten(0, 1)).unflatten(0, refs.shape[:2])
        cosines = reference_cosines(model.target_features(query), ref_targets)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(10):
        reconstruction, _ = model(query, refs, mask=mask)
        loss = pointer_match_loss(reconstruction.pointer_logits, cosines, mask, min_cosine=-1.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.75 * losses[0], losses


def test_a_run_logs_the_match_term_only_when_weighed_and_trains_the_pointer_by_it(
    tmp_path: Path,
) -> None:
    root, start = _pointer_start(tmp_path)
    runs = {}
    for name, loss in (("plain", {}), ("match", {"match_weight": 1.0, "match_temperature": 0.05})):
        recorder = Recorder()
        summary = run_training(
            _cross_view_recipe(loss), root, tmp_path / name, init=start, reporter=recorder
        )
        runs[name] = (recorder.steps, load_checkpoint(summary.checkpoint)[0])
    assert all(s.match is None and s.feature is not None for s in runs["plain"][0])
    steps, tuned = runs["match"]
    assert all(s.match is not None and s.match > 0 for s in steps)
    plain = runs["plain"][1].decoder.pointer.query.weight
    assert not torch.allclose(tuned.decoder.pointer.query.weight, plain)


def test_a_model_without_a_pointer_refuses_the_match_term(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "data", {"a": 4}, padded=False, size=64)
    recipe = tiny_edge_recipe({"overrides": TINY_EDGE}, loss={"match_weight": 0.5})
    with pytest.raises(UserError, match=r"loss\.match_weight teaches the reference pointer"):
        run_training(recipe, root, tmp_path / "run")


def test_the_match_recipe_is_the_pointer_recipe_plus_the_match_term() -> None:
    recipes = [
        load_config(RECIPES / name, TrainConfig).model_dump()
        for name in ("generic-pointer.yaml", "generic-pointer-match.yaml")
    ]
    assert recipes[1]["loss"]["match_weight"] > 0
    for recipe in recipes:
        for key in ("match_weight", "match_temperature", "match_min_cosine"):
            recipe["loss"].pop(key)
        recipe["checkpoint"].pop("out")
    assert recipes[0] == recipes[1]
