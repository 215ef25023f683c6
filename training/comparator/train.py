"""The comparator's training loop: cached cells, episodes keyed by step, resumable.

``padformer-edge train`` runs it for a recipe of ``kind: comparator``. Every
``checkpoint.every_steps`` the weights (``last.safetensors``) and the optimizer's state and
position (``last.resume.pt``) are written; every ``checkpoint.keep_every`` a snapshot
``step-NNNNNN.safetensors`` is kept, so that the step to ship is chosen on a validation
render afterwards, never during training; a run that reaches its last step also writes
``model.safetensors``. Batches are drawn from generators keyed by (seed, step), so a resumed
run trains on what an uninterrupted one would.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from padformer_edge.devices.runtimes import resolve_device
from padformer_edge.errors import UserError
from padformer_edge.methods.compare.checkpoint import load_comparator, save_comparator
from padformer_edge.methods.compare.model import ComparisonModel
from padformer_edge.model.backbone import require_weights
from padformer_edge.reporting.log import get_logger
from padformer_edge_training.comparator.episodes import (
    Batch,
    EpisodeMix,
    EpisodeSampler,
    load_objects,
)
from padformer_edge_training.comparator.loss import cell_targets, comparator_loss
from padformer_edge_training.comparator.recipe import ComparatorRecipe
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.progress import Reporter, StepInfo
from padformer_edge_training.resume import capture_rng, load_resume, restore_rng, save_resume
from padformer_edge_training.schedule import WarmupCosine

log = get_logger("comparator.train")
STAGE = "comparator"
FINAL_WEIGHTS = "model.safetensors"
LAST_WEIGHTS = "last.safetensors"
LAST_RESUME = "last.resume.pt"
# Keys that say where and how fast a run goes, not what it learns: a resumed run may change
# them (another machine, another device, a moved run folder).
RESUME_FREE_KEYS = {"device": None, "cpu_threads": None, "checkpoint": {"out"}}


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


def fingerprint(recipe: ComparatorRecipe) -> dict[str, Any]:
    """What a resumed run must share with the run it continues: the recipe less
    ``RESUME_FREE_KEYS``."""
    dump = recipe.model_dump(mode="json")
    for key, inner in RESUME_FREE_KEYS.items():
        if inner is None:
            dump.pop(key, None)
        else:
            for name in inner:
                dump[key].pop(name, None)
    return dump


@dataclass
class ComparatorSummary:
    """The outcome of one call of ``train``; an ``interrupted`` run left a resume point."""

    out: Path
    checkpoint: Path  # model.safetensors when finished, else last.safetensors
    step: int
    total_steps: int
    interrupted: bool
    resumed_at: int | None
    device: str
    objects: int
    seconds: float = 0.0
    samples: int = 0
    losses: list[float] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.step >= self.total_steps

    def report(self) -> dict[str, Any]:
        """The stage's figures in the form the trainer's summary table prints."""
        window = max(1, min(10, len(self.losses) // 4))
        head, tail = self.losses[:window], self.losses[-window:]
        return {
            "steps": self.step,
            "total_steps": self.total_steps,
            "seconds": round(self.seconds, 2),
            "samples_per_s": round(self.samples / self.seconds, 3) if self.seconds else 0.0,
            "first_loss": round(float(np.mean(head)), 6) if head else None,
            "last_loss": round(float(np.mean(tail)), 6) if tail else None,
        }


def _to_device(batch: Batch, device: torch.device) -> Batch:
    if device.type == "cpu":
        return batch
    move = {"non_blocking": True}
    return Batch(
        batch.query_cells.to(device, **move),
        batch.references.to(device, **move),
        batch.bank.to(device, **move),
        batch.masks.to(device, **move),
        batch.kinds,
        batch.origin,
    )


def train(
    recipe: ComparatorRecipe,
    resume: bool = False,
    stop_at: int | None = None,
    *,
    data: Path | None = None,
    out: Path | None = None,
    device: str | None = None,
    reporter: Reporter | None = None,
) -> ComparatorSummary:
    """Train (or continue) the run in ``out`` (default ``recipe.checkpoint.out``) on ``data``
    (default ``recipe.data.root``). ``stop_at`` ends this call after that global step (a
    session's share of the run). Ctrl-C or SIGTERM end it at the next step with a resume
    point."""
    if data is not None or out is not None:
        recipe = recipe.model_copy(
            update={
                "data": recipe.data.model_copy(update={"root": data or recipe.data.root}),
                "checkpoint": recipe.checkpoint.model_copy(
                    update={"out": out or recipe.checkpoint.out}
                ),
            }
        )
    reporter = reporter or Reporter(log_every=10)
    torch.set_num_threads(recipe.cpu_threads)
    target = resolve_device(device or recipe.device)
    out = recipe.checkpoint.out
    last, resume_path = out / LAST_WEIGHTS, out / LAST_RESUME
    if resume:
        if not resume_path.is_file():
            raise UserError(f"{out} holds no resume point; run without --resume to start it.")
        model, _ = load_comparator(last)
        state = load_resume(resume_path)
        if state["fingerprint"] != fingerprint(recipe):
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
    model.to(target)
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
    summary = ComparatorSummary(
        out=out,
        checkpoint=last,
        step=step,
        total_steps=recipe.optim.steps,
        interrupted=False,
        resumed_at=step if resume else None,
        device=str(target),
        objects=len(objects),
    )
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
                "fingerprint": fingerprint(recipe),
            },
        )

    end = recipe.optim.steps if stop_at is None else min(stop_at, recipe.optim.steps)
    reporter.stage_started(
        STAGE, recipe.optim.steps, step, objects=len(objects), device=str(target)
    )
    try:
        while step < end and not stopping["now"]:
            began = time.perf_counter()
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(recipe, step)
            batch = _to_device(
                sampler.batch(step, recipe.optim.batch_size, recipe.optim.window), target
            )
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
            loss = terms["loss"].item()
            summary.seconds += time.perf_counter() - began
            summary.samples += recipe.optim.batch_size
            summary.losses.append(loss)
            reporter.step(
                StepInfo(
                    stage=STAGE,
                    step=step,
                    total=recipe.optim.steps,
                    global_step=step,
                    epoch=0,
                    loss=loss,
                    mse=None,
                    perceptual=None,
                    lr=optimizer.param_groups[0]["lr"],
                    samples_per_s=summary.samples / max(summary.seconds, 1e-9),
                    parts={k: terms[k].item() for k in ("focal", "dice", "image")},
                )
            )
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
    summary.step, summary.interrupted = step, stopping["now"]
    if summary.finished:
        save_comparator(
            out / FINAL_WEIGHTS, model, {"step": step, "recipe": recipe.model_dump(mode="json")}
        )
        summary.checkpoint = out / FINAL_WEIGHTS
    reporter.stage_finished(STAGE, **summary.report())
    log.info(
        "comparator_stopped" if summary.interrupted else "comparator_ended",
        step=step,
        of=recipe.optim.steps,
        interrupted=summary.interrupted,
    )
    return summary
