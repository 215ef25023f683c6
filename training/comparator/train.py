"""The comparator's training loop: cached cells, episodes keyed by step, resumable.

Every ``checkpoint.every_steps`` the weights (``last.safetensors``) and the optimizer's
state and position (``last.resume.pt``) are written; every ``checkpoint.keep_every`` a
snapshot ``step-NNNNNN.safetensors`` is kept, so that the step to ship is chosen on a
validation render afterwards, never during training. Batches are drawn from generators
keyed by (seed, step), so a resumed run trains on what an uninterrupted one would.
"""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path

import torch

from padformer_edge.errors import UserError
from padformer_edge.log import get_logger
from padformer_edge.model.backbone import require_weights
from padformer_edge.model.comparator import ComparisonModel
from padformer_edge.model.comparator_checkpoint import load_comparator, save_comparator
from padformer_edge_training.comparator.episodes import EpisodeMix, EpisodeSampler, load_objects
from padformer_edge_training.comparator.loss import cell_targets, comparator_loss
from padformer_edge_training.comparator.recipe import ComparatorRecipe, load_recipe
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.resume import capture_rng, load_resume, restore_rng, save_resume
from padformer_edge_training.schedule import WarmupCosine

log = get_logger("comparator.train")


def learning_rate(recipe: ComparatorRecipe, step: int) -> float:
    """Linear warm-up, then a cosine from ``lr`` down to ``min_lr`` at the last step: the
    reconstruction trainer's ``WarmupCosine``, scaled to the recipe's peak."""
    optim = recipe.optim
    curve = WarmupCosine(optim.steps, optim.warmup_steps, optim.min_lr / optim.lr)
    return optim.lr * curve(step)


def fresh_model(recipe: ComparatorRecipe) -> ComparisonModel:
    """A new comparator, its weights drawn from ``recipe.seed`` (two runs of one recipe
    start alike), on the packaged ImageNet CNN."""
    torch.manual_seed(recipe.seed)
    model = ComparisonModel(recipe.model.config())
    require_weights(model.backbone, "training a comparator")
    model.features.load_imagenet()
    return model


def train(recipe: ComparatorRecipe, resume: bool = False, stop_at: int | None = None) -> Path:
    """Train (or continue) the run in ``recipe.checkpoint.out``; returns its last weights.
    ``stop_at`` ends this call after that global step (a session's share of the run)."""
    torch.set_num_threads(recipe.cpu_threads)
    out = recipe.checkpoint.out
    last, resume_path = out / "last.safetensors", out / "last.resume.pt"
    if resume:
        model, _ = load_comparator(last)
        state = load_resume(resume_path)
        if state["recipe"] != recipe.model_dump_json():
            raise UserError(f"the recipe differs from the one {out} was started with; use it.")
    else:
        if last.exists():
            raise UserError(f"{out} already holds a run; pass --resume or another out folder.")
        out.mkdir(parents=True, exist_ok=True)
        model, state = fresh_model(recipe), None
    model.train()
    index = index_dataset(recipe.data.root)
    cache = out / f"cells-{model.config.input_size}.safetensors"
    objects = load_objects(index, model, recipe.data.min_good, recipe.data.max_good, cache)
    log.info("comparator_data", objects=len(objects), root=str(recipe.data.root))
    mix = EpisodeMix(
        **recipe.episodes.model_dump()
        | {"reference_counts": tuple(recipe.episodes.reference_counts)}
    )
    sampler = EpisodeSampler(objects, model, mix, recipe.seed)
    params = [p for p in model.comparator.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params, lr=recipe.optim.lr, weight_decay=recipe.optim.weight_decay
    )
    step = 0
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        restore_rng(state["rng"])
        step = int(state["step"])
    stopping = {"now": False}
    previous = signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))

    def save() -> None:
        meta = {"step": step, "recipe": recipe.model_dump(mode="json")}
        save_comparator(last, model, meta)
        save_resume(
            resume_path,
            {
                "optimizer": optimizer.state_dict(),
                "rng": capture_rng(),
                "step": step,
                "recipe": recipe.model_dump_json(),
            },
        )

    end = recipe.optim.steps if stop_at is None else min(stop_at, recipe.optim.steps)
    started = time.perf_counter()
    try:
        while step < end and not stopping["now"]:
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(recipe, step)
            batch = sampler.batch(step, recipe.optim.batch_size, recipe.optim.window)
            result = model(batch.query_cells, batch.references, batch.bank, batch.origin)
            terms = comparator_loss(
                result.logits,
                cell_targets(batch.masks, batch.query_cells.shape[-1]),
                recipe.optim.image_weight,
                recipe.optim.image_top_k,
            )
            optimizer.zero_grad(set_to_none=True)
            terms["loss"].backward()
            torch.nn.utils.clip_grad_norm_(params, recipe.optim.grad_clip)
            optimizer.step()
            step += 1
            if step % 10 == 0:
                log.info(
                    "comparator_step",
                    step=step,
                    loss=round(terms["loss"].item(), 4),
                    focal=round(terms["focal"].item(), 5),
                    dice=round(terms["dice"].item(), 4),
                    image=round(terms["image"].item(), 4),
                    s_per_step=round((time.perf_counter() - started) / 10, 3),
                )
                started = time.perf_counter()
            if step % recipe.checkpoint.every_steps == 0:
                save()
            if step % recipe.checkpoint.keep_every == 0:
                save_comparator(
                    out / f"step-{step:06d}.safetensors",
                    model,
                    {"step": step, "recipe": recipe.model_dump(mode="json")},
                )
    except KeyboardInterrupt:
        stopping["now"] = True
    finally:
        signal.signal(signal.SIGTERM, previous)
    save()
    log.info("comparator_stopped", step=step, of=recipe.optim.steps, interrupted=stopping["now"])
    return last


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--stop-at", type=int, default=None)
    args = parser.parse_args(argv)
    train(load_recipe(args.config), args.resume, args.stop_at)


if __name__ == "__main__":
    main()
