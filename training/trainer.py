"""The two-stage PADFormer trainer: within-view, then cross-view, one model for all classes.

Each stage has its own AdamW and warmup + cosine schedule (the within-view stage is a
pre-training; the cross-view stage starts its own schedule from those weights). A step is
``accumulate`` micro-batches; gradients are clipped, AMP is used on CUDA only, and under
``torchrun`` the model is wrapped in DDP while rank 0 alone writes files and logs.

Everything random is keyed by position (seed, stage, epoch, sample, step), so a run that
is stopped and resumed from its resume point ends with the same weights as one that was
never stopped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import (
    file_sha256,
    load_checkpoint,
    load_encoder_weights,
    save_checkpoint,
)
from padformer_edge.model.padformer import PADFormer, build_model
from padformer_edge.reporting.log import get_logger
from padformer_edge_training.augment import WithinViewAugment
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.data.layouts import DatasetIndex, index_dataset
from padformer_edge_training.data.samples import (
    STAGE_IDS,
    ReferenceSamples,
    StageSampler,
    resolve_num_refs,
)
from padformer_edge_training.distributed import (
    DistContext,
    gather_floats,
    init_distributed,
    shutdown_distributed,
)
from padformer_edge_training.families import refuse_held_out_dataset
from padformer_edge_training.gpu_use import UtilizationSamples, utilization_probe
from padformer_edge_training.losses import (
    ReconstructionLoss,
    build_perceptual,
    masked_feature_loss,
    pointer_match_loss,
    reference_cosines,
    shown_by_references,
)
from padformer_edge_training.progress import QuietReporter, Reporter, StepInfo
from padformer_edge_training.resume import capture_rng, load_resume, restore_rng, save_resume
from padformer_edge_training.schedule import WarmupCosine
from padformer_edge_training.score_scales import measure_score_scales

STAGES = ("within_view", "cross_view")
LAST_WEIGHTS, LAST_RESUME, FINAL_WEIGHTS = "last.safetensors", "last.resume.pt", "model.safetensors"
# Recipe parts that may change between a run and its resumption without changing results.
_RESUME_FREE_KEYS = {
    ("data", "root"),
    ("data", "num_workers"),
    ("checkpoint", "out"),
    ("device",),
    ("cpu_threads",),
    ("kind",),  # one value per schema; runs started before it existed resume
}


@dataclass
class StageReport:
    """What one stage did in this session."""

    steps: int = 0
    total_steps: int = 0
    seconds: float = 0.0
    samples: int = 0
    losses: list[float] = field(default_factory=list)
    gpu: UtilizationSamples | None = None  # on CUDA: the GPU's utilisation at each step

    def as_dict(self) -> dict[str, Any]:
        window = max(1, min(10, len(self.losses) // 4))  # first/last quarter, at most 10 steps
        head, tail = self.losses[:window], self.losses[-window:]
        report = {
            "steps": self.steps,
            "total_steps": self.total_steps,
            "seconds": round(self.seconds, 2),
            "samples_per_s": round(self.samples / self.seconds, 3) if self.seconds else 0.0,
            "first_loss": round(float(np.mean(head)), 6) if head else None,
            "last_loss": round(float(np.mean(tail)), 6) if tail else None,
        }
        utilization = self.gpu.mean() if self.gpu is not None else None
        if utilization is not None:  # absent, not 0, where no GPU figure exists
            report["gpu_utilization_pct"] = utilization
        return report


@dataclass
class TrainSummary:
    """The outcome of ``run_training``; ``interrupted`` runs left a resume point."""

    out: Path
    checkpoint: Path | None
    global_step: int
    stages: dict[str, dict[str, Any]]
    interrupted: bool
    resumed_at: int | None
    data: dict[str, int]
    device: str
    world_size: int


def _recipe_fingerprint(config: TrainConfig) -> dict[str, Any]:
    dump = config.model_dump(mode="json")
    for path in _RESUME_FREE_KEYS:
        section = dump
        for key in path[:-1]:
            section = section[key]
        section.pop(path[-1], None)
    return dump


def _amp_dtype(choice: str, device: torch.device) -> torch.dtype | None:
    """bf16 where the GPU has it, else fp16; nothing on the CPU (AMP there is slower)."""
    if device.type != "cuda" or choice == "off":
        if choice in ("bf16", "fp16") and device.type != "cuda":
            get_logger("train").warning(
                "amp_disabled", reason="AMP is used on CUDA only", amp=choice
            )
        return None
    if choice == "fp16" or (choice == "auto" and not torch.cuda.is_bf16_supported()):
        return torch.float16
    return torch.bfloat16


def _init_record(init: Path | None) -> dict[str, Any] | None:
    """What a fine-tuning run started from, for its checkpoints' metadata and resume check."""
    if init is None:
        return None
    return {"path": str(init), "sha256": file_sha256(init)}


def reconfigure(model: PADFormer, overrides: dict[str, Any]) -> PADFormer:
    """``model`` with the recipe's ``init_overrides``, or one sentence saying what is wrong."""
    try:
        return model.reconfigured(**overrides)
    except (TypeError, ValueError, RuntimeError) as err:
        reason = str(err).splitlines()[0]
        raise UserError(
            f"the recipe's model.init_overrides do not fit the --init checkpoint ({reason}); "
            "keep only settings that leave the weights' shapes as they are."
        ) from None


def _mask_generator(seed: int, stage: str, step: int, rank: int, micro: int) -> torch.Generator:
    state = np.random.SeedSequence([seed, STAGE_IDS[stage], step, rank, micro, 7]).generate_state(2)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


def _quiet_worker(_: int) -> None:
    torch.set_num_threads(1)  # workers decode and warp images; they must not fight the model


class _Run:
    """One training session (fresh or resumed) on one process of the run."""

    def __init__(
        self,
        config: TrainConfig,
        data_root: Path,
        out: Path,
        ctx: DistContext,
        reporter: Reporter,
        init: Path | None = None,
    ) -> None:
        self.config, self.out, self.ctx, self.reporter = config, out, ctx, reporter
        data = config.data
        self.index: DatasetIndex = index_dataset(
            data_root, data.layout, data.categories, data.split_csv
        )
        refuse_held_out_dataset(self.index.root, (r.label for r in self.index.records))
        self.good = self.index.good_train()
        self.num_refs = resolve_num_refs(self.good, data.num_refs)
        torch.manual_seed(config.seed)
        self.init = _init_record(init)
        if init is not None:  # fine-tuning: the checkpoint's preset and config, not the recipe's
            # preset or overrides; its init_overrides apply on top
            self.model: PADFormer = load_checkpoint(init)[0].train()
            if config.model.init_overrides:
                self.model = reconfigure(self.model, config.model.init_overrides)
        else:
            self.model = build_model(config.model.preset, **config.model.overrides)
        if config.model.encoder_weights and init is None:
            load_encoder_weights(self.model, config.model.encoder_weights)
        if config.loss.match_weight > 0 and not self.model.reads_reference_features:
            raise UserError(
                "loss.match_weight teaches the reference pointer, which this model lacks; "
                "set model.init_overrides (or overrides) feature_readout: references, or "
                "match_weight 0."
            )
        self.model.to(ctx.device)
        mcfg = self.model.config
        vgg = Path(config.loss.vgg16_weights) if config.loss.vgg16_weights else None
        perceptual = build_perceptual(config.loss.perceptual, vgg)
        self.loss_fn = ReconstructionLoss(
            mcfg.norm_mean, mcfg.norm_std, perceptual, config.loss.perceptual_weight
        ).to(ctx.device)
        self.amp = _amp_dtype(config.optim.amp, ctx.device)
        self.ddp: torch.nn.Module = self.model  # wrapped once the starting weights are in place
        self.stages = [s for s in STAGES if getattr(config.stages, s).epochs > 0]
        if not self.stages:
            raise UserError(
                "both stages have 0 epochs; set stages.within_view or cross_view epochs."
            )
        self.global_step = 0
        self.position: dict[str, Any] | None = None  # where a resume point would restart
        self.reports = {s: StageReport() for s in self.stages}

    # --- data -------------------------------------------------------------------------------

    def _samples(self, stage: str) -> ReferenceSamples:
        mcfg, within = self.model.config, self.config.stages.within_view
        augment = WithinViewAugment(
            within.max_rotation, within.elastic_strength, within.elastic_scale
        )
        return ReferenceSamples(
            self.good,
            stage,
            self.num_refs,
            mcfg.img_size,
            mcfg.norm_mean,
            mcfg.norm_std,
            seed=self.config.seed,
            augment=augment,
        )

    def _steps_per_epoch(self, samples: ReferenceSamples) -> int:
        optim = self.config.optim
        per_step = optim.batch_size * optim.accumulate * self.ctx.world_size
        steps = len(samples) // per_step
        if steps == 0:
            raise UserError(
                f"{len(samples)} good training images are fewer than one step needs "
                f"(batch_size {optim.batch_size} x accumulate {optim.accumulate} x "
                f"{self.ctx.world_size} process(es)); lower optim.batch_size or add images."
            )
        return steps

    def _loader(
        self, samples: ReferenceSamples, stage: str, first_epoch: int, skip: int, per_epoch: int
    ) -> DataLoader:
        """One loader for the rest of the stage: its workers live from ``first_epoch`` to the
        stage's last epoch (``StageSampler``), instead of starting afresh every epoch."""
        optim = self.config.optim
        sampler = StageSampler(
            len(samples),
            first_epoch,
            getattr(self.config.stages, stage).epochs,
            per_epoch * optim.accumulate * optim.batch_size,
            seed=self.config.seed * 10 + STAGE_IDS[stage],
            rank=self.ctx.rank,
            world_size=self.ctx.world_size,
            start=skip,
        )
        workers = self.config.data.num_workers
        return DataLoader(
            samples,
            batch_size=optim.batch_size,
            sampler=sampler,
            drop_last=True,
            num_workers=workers,
            worker_init_fn=_quiet_worker if workers else None,
            pin_memory=self.ctx.device.type == "cuda",
            # workers start from a clean server process, not a fork of this one: a fork
            # inherits the state of every thread pool already running here (OpenVINO's
            # TBB pool after a profile was scored in the same process crashed the next
            # training's worker shutdown), and Python deprecates forking with threads
            multiprocessing_context="forkserver" if workers else None,
        )

    # --- optimisation -----------------------------------------------------------------------

    def _optimizer(self, total_steps: int) -> tuple[torch.optim.Optimizer, Any, Any]:
        optim = self.config.optim
        decay = [p for p in self.model.parameters() if p.requires_grad and p.ndim > 1]
        no_decay = [p for p in self.model.parameters() if p.requires_grad and p.ndim <= 1]
        optimizer = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": optim.weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=optim.lr,
            betas=optim.betas,
        )
        curve = WarmupCosine(total_steps, optim.warmup_steps, optim.min_lr / optim.lr)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, curve)
        scaler = torch.amp.GradScaler("cuda", enabled=self.amp == torch.float16)
        return optimizer, scheduler, scaler

    def _micro_step(
        self, batch: dict[str, torch.Tensor], stage: str, micro: int, sync: bool
    ) -> dict[str, float]:
        device = self.ctx.device
        query = batch["query"].to(device, non_blocking=True)
        refs = batch["refs"].to(device, non_blocking=True)
        generator = _mask_generator(self.config.seed, stage, self.global_step, self.ctx.rank, micro)
        mask = self.model.random_mask(query.shape[0], generator).to(device)
        no_sync = self.ddp.no_sync() if self.ctx.distributed and not sync else nullcontext()
        autocast = torch.autocast("cuda", dtype=self.amp) if self.amp is not None else nullcontext()
        with no_sync:
            with autocast:
                reconstruction, _ = self.ddp(query, refs, mask=mask)
            terms = self.loss_fn(query, reconstruction.pixels)
            loss = self.config.loss
            weight, match = loss.feature_weight, loss.match_weight
            if reconstruction.features is not None and (weight > 0 or match > 0):
                with torch.no_grad():
                    target = self.model.target_features(query)
                    ref_targets = self._reference_targets(refs)
                    scored = self._shown_cells(target, ref_targets, mask)
                if weight > 0:
                    feature = masked_feature_loss(reconstruction.features, target, scored)
                    terms["feature"] = feature
                    terms["loss"] = terms["loss"] + weight * feature
                if match > 0:
                    cosines = reference_cosines(target, ref_targets)
                    chosen = pointer_match_loss(
                        reconstruction.pointer_logits,
                        cosines,
                        scored,
                        loss.match_temperature,
                        loss.match_min_cosine,
                    )
                    terms["match"] = chosen
                    terms["loss"] = terms["loss"] + match * chosen
            self.scaler.scale(terms["loss"] / self.config.optim.accumulate).backward()
        return {k: float(v.detach()) for k, v in terms.items()}

    def _reference_targets(self, refs: torch.Tensor) -> torch.Tensor | None:
        """[B, N, M, F] the references' frozen CNN features where a term needs them
        (``loss.unseen_share``, ``loss.match_weight``), else None (no CNN pass)."""
        loss = self.config.loss
        if loss.unseen_share <= 0 and loss.match_weight <= 0:
            return None
        return self.model.target_features(refs.flatten(0, 1)).unflatten(0, refs.shape[:2])

    def _shown_cells(
        self, target: torch.Tensor, ref_targets: torch.Tensor | None, mask: torch.Tensor
    ) -> torch.Tensor:
        """The masked patches the feature and match terms score (``loss.unseen_share``)."""
        share = self.config.loss.unseen_share
        if share <= 0 or ref_targets is None:
            return mask
        return shown_by_references(target, ref_targets, mask, share)

    # --- files ------------------------------------------------------------------------------

    def _metadata(self, stage: str) -> dict[str, Any]:
        return {
            "trained_by": "padformer-edge train",
            "stage": stage,
            "global_step": self.global_step,
            "num_refs": self.num_refs,
            "data_root": str(self.index.root),
            "data_layout": self.index.layout,
            "train_images": self.index.summary(),
            "recipe": self.config.model_dump(mode="json"),
            "init": self.init,
        }

    def _write_weights(self, name: str, stage: str) -> Path:
        path = self.out / name
        save_checkpoint(path, self.model, self._metadata(stage))  # atomic, synced
        return path

    def _write_resume_point(self) -> None:
        """Weights as ``last.safetensors`` plus everything else needed to continue exactly."""
        if not self.ctx.is_main or self.position is None:
            return
        index = self.position["stage_index"]
        stage = self.stages[index] if index < len(self.stages) else "done"
        weights = self._write_weights(LAST_WEIGHTS, stage)
        has_optimizer = self.position["has_optimizer"]
        save_resume(
            self.out / LAST_RESUME,
            {
                **self.position,
                "global_step": self.global_step,
                "weights_sha256": file_sha256(weights),
                "recipe": json.dumps(_recipe_fingerprint(self.config), sort_keys=True),
                "init": json.dumps(self.init, sort_keys=True),
                "optimizer": self.optimizer.state_dict() if has_optimizer else {},
                "scheduler": self.scheduler.state_dict() if has_optimizer else {},
                "scaler": self.scaler.state_dict() if has_optimizer else {},
                "rng": capture_rng(),
            },
        )

    def _load_resume_point(self) -> dict[str, Any]:
        state = load_resume(self.out / LAST_RESUME)
        if state["recipe"] != json.dumps(_recipe_fingerprint(self.config), sort_keys=True):
            raise UserError(
                f"the recipe differs from the one the run in {self.out} was started with; "
                "resume with the same config or start a new run with another --out."
            )
        if state.get("init", "null") != json.dumps(self.init, sort_keys=True):
            raise UserError(
                f"the run in {self.out} was started from other weights (--init); resume with "
                "the same --init or start a new run with another --out."
            )
        weights = self.out / LAST_WEIGHTS
        if not weights.is_file() or file_sha256(weights) != state["weights_sha256"]:
            raise UserError(
                f"{weights} does not match the resume point next to it; the run cannot continue "
                "exactly, start a new run."
            )
        loaded, _ = load_checkpoint(weights)
        self.model.load_state_dict(loaded.state_dict())
        self.global_step = state["global_step"]
        return state

    # --- the loop -----------------------------------------------------------------------------

    def _optimizer_step(self, batches: Iterator, stage: str) -> tuple[dict[str, float], float]:
        """``accumulate`` micro-batches, then one clipped update; (mean loss terms, lr used)."""
        optim = self.config.optim
        self.optimizer.zero_grad(set_to_none=True)
        terms = [
            self._micro_step(next(batches), stage, micro, sync=micro == optim.accumulate - 1)
            for micro in range(optim.accumulate)
        ]
        self.scaler.unscale_(self.optimizer)
        if optim.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), optim.grad_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        lr = self.scheduler.get_last_lr()[0]
        self.scheduler.step()
        self.global_step += 1
        mean = {k: float(np.mean([t[k] for t in terms])) for k in terms[0]}
        return mean, lr

    def _run_stage(self, stage_index: int, state: dict[str, Any] | None) -> None:
        """Train one stage from the start, or from ``state``'s position within it."""
        optim, stage = self.config.optim, self.stages[stage_index]
        samples = self._samples(stage)
        per_epoch = self._steps_per_epoch(samples)
        epochs = getattr(self.config.stages, stage).epochs
        total = per_epoch * epochs
        self.optimizer, self.scheduler, self.scaler = self._optimizer(total)
        start_epoch, start_step = 0, 0
        if state is not None:
            if state["stage_index"] == stage_index and state["has_optimizer"]:
                self.optimizer.load_state_dict(state["optimizer"])
                self.scheduler.load_state_dict(state["scheduler"])
                self.scaler.load_state_dict(state["scaler"])
                start_epoch, start_step = state["epoch"], state["step_in_epoch"]
            restore_rng(state["rng"])
        report = self.reports[stage]
        report.total_steps = total
        report.gpu = UtilizationSamples(utilization_probe(self.ctx.device))
        stage_step = start_epoch * per_epoch + start_step
        self.position = {
            "stage_index": stage_index,
            "epoch": start_epoch,
            "step_in_epoch": start_step,
            "has_optimizer": True,
        }
        self.reporter.stage_started(
            stage,
            total,
            stage_step,
            epochs=epochs,
            steps_per_epoch=per_epoch,
            num_refs=self.num_refs,
            train_images=len(samples),
            device=str(self.ctx.device),
            world_size=self.ctx.world_size,
        )
        self.model.train()
        started = time.perf_counter()
        skip = start_step * optim.accumulate * optim.batch_size
        batches = iter(self._loader(samples, stage, start_epoch, skip, per_epoch))
        for epoch in range(start_epoch, epochs):
            first = start_step if epoch == start_epoch else 0
            for step_in_epoch in range(first, per_epoch):
                terms, lr = self._optimizer_step(batches, stage)
                stage_step += 1
                done_epoch = step_in_epoch + 1 == per_epoch
                self.position.update(
                    epoch=epoch + 1 if done_epoch else epoch,
                    step_in_epoch=0 if done_epoch else step_in_epoch + 1,
                )
                if self.global_step % self.config.checkpoint.every_steps == 0:
                    self._write_resume_point()
                report.steps += 1
                report.samples += optim.batch_size * optim.accumulate * self.ctx.world_size
                report.seconds = time.perf_counter() - started
                report.losses.append(terms["loss"])
                self.reporter.step(
                    StepInfo(
                        stage=stage,
                        step=stage_step,
                        total=total,
                        global_step=self.global_step,
                        epoch=epoch,
                        loss=terms["loss"],
                        mse=terms["mse"],
                        perceptual=terms.get("perceptual"),
                        lr=lr,
                        samples_per_s=report.samples / max(report.seconds, 1e-9),
                        feature=terms.get("feature"),
                        match=terms.get("match"),
                        gpu_utilization=report.gpu.sample(),
                    )
                )
        self.reporter.stage_finished(stage, **report.as_dict())
        if self.ctx.is_main:
            self._write_weights(f"{stage}.safetensors", stage)

    def train(self, resume: bool) -> TrainSummary:
        state = self._load_resume_point() if resume else None
        resumed_at = self.global_step if resume else None
        if self.ctx.distributed:
            cuda = self.ctx.device.type == "cuda"
            self.ddp = DistributedDataParallel(
                self.model, device_ids=[self.ctx.device.index] if cuda else None
            )
        interrupted = False
        try:
            for stage_index in range(state["stage_index"] if state else 0, len(self.stages)):
                self._run_stage(stage_index, state)
                state = None
            self._check_ranks_agree()
            if self.ctx.is_main:
                if self.model.config.cnn_tokens:
                    scales = measure_score_scales(
                        self.model, self.good, self.num_refs, self.config.seed
                    )
                    get_logger("train").info("score_scales", **scales)
                self._write_weights(FINAL_WEIGHTS, self.stages[-1])
                self.position = {
                    "stage_index": len(self.stages),
                    "epoch": 0,
                    "step_in_epoch": 0,
                    "has_optimizer": False,
                }
                self._write_resume_point()
        except KeyboardInterrupt:
            interrupted = True
            if self.position is not None:
                self._write_resume_point()
            get_logger("train").warning(
                "interrupted",
                global_step=self.global_step,
                resume_point=str(self.out / LAST_RESUME),
            )
        return TrainSummary(
            out=self.out,
            checkpoint=self.out / (LAST_WEIGHTS if interrupted else FINAL_WEIGHTS),
            global_step=self.global_step,
            stages={s: r.as_dict() for s, r in self.reports.items()},
            interrupted=interrupted,
            resumed_at=resumed_at,
            data=self.index.summary(),
            device=str(self.ctx.device),
            world_size=self.ctx.world_size,
        )

    def _check_ranks_agree(self) -> None:
        """DDP keeps replicas equal; a cheap fingerprint per rank proves it at the end."""
        with torch.no_grad():
            params = torch.cat([p.detach().double().flatten() for p in self.model.parameters()])
            fingerprint = [
                float(params.sum()),
                float(params.pow(2).sum()),
                float(params.abs().max()),
            ]
        gathered = gather_floats(self.ctx, fingerprint)
        if self.ctx.distributed:
            agree = all(np.allclose(g, gathered[0], rtol=1e-9, atol=0) for g in gathered)
            if self.ctx.is_main:
                get_logger("train").info("ranks_compared", agree=agree, fingerprints=gathered)
            if not agree:
                raise RuntimeError(f"DDP replicas diverged: {gathered}")


def run_training(
    config: TrainConfig,
    data: str | Path | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    device: str | None = None,
    reporter: Reporter | None = None,
    init: str | Path | None = None,
) -> TrainSummary:
    """Train per ``config``; ``data``/``out``/``device`` override the recipe's values.

    ``init`` is a checkpoint to fine-tune: its weights, preset and model config replace the
    recipe's ``model`` section (e.g. the shipped generic model on a user's own images).

    Rank 0 writes ``out/{within_view,cross_view,model}.safetensors`` (stage ends and the
    final model) and ``out/last.safetensors`` + ``out/last.resume.pt`` every
    ``checkpoint.every_steps`` steps, at the end and on Ctrl-C.
    """
    root = data if data is not None else config.data.root
    if root is None:
        raise UserError("no training data given; pass --data DIR or set data.root in the recipe.")
    out_dir = Path(out if out is not None else config.checkpoint.out)
    if not resume and (out_dir / LAST_RESUME).exists():
        raise UserError(
            f"{out_dir} already holds a run; pass --resume to continue it or choose another --out."
        )
    if config.cpu_threads is not None:
        torch.set_num_threads(config.cpu_threads)
    ctx = init_distributed(device or config.device)
    try:
        if ctx.is_main:
            out_dir.mkdir(parents=True, exist_ok=True)
        if not ctx.is_main:
            active: Reporter = QuietReporter()
        else:
            active = reporter if reporter is not None else Reporter()
        try:
            start = Path(init) if init is not None else None
            summary = _Run(config, Path(root), out_dir, ctx, active, start).train(resume)
        finally:
            active.close()
        if ctx.is_main:
            get_logger("train").info(
                "train_finished" if not summary.interrupted else "train_stopped",
                global_step=summary.global_step,
                checkpoint=str(summary.checkpoint),
                stages=summary.stages,
            )
        return summary
    finally:
        shutdown_distributed()
