"""``padformer-edge eval`` as one function: checkpoint + dataset in, metrics and report out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import file_sha256, load_checkpoint
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.protocol import (
    EvalOptions,
    ImageResult,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.report import write_html, write_metrics
from padformer_edge_training.evaluation.scorers import PADFormerScorer


@dataclass
class EvalRun:
    payload: dict  # what metrics.json holds
    results: list[ImageResult]
    metrics_path: Path
    report_path: Path


def evaluate_checkpoint(
    checkpoint: str | Path,
    data: str | Path,
    out: str | Path,
    options: EvalOptions,
    *,
    categories: list[str] | None = None,
    settings: DetectionSettings | None = None,
    examples: int = 24,
    on_start: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> EvalRun:
    """Evaluate ``checkpoint`` on the test split of ``data``; write metrics.json and
    report.html into ``out``. ``on_start(total)`` and ``progress(done)`` feed a bar.
    ``settings`` default to the paper's, with the masks seeded by ``options.seed``."""
    if settings is None:
        settings = DetectionSettings(metric="auto", seed=options.seed)
    index = index_dataset(data, categories=categories)
    episodes = plan_episodes(index, options)
    model, _ = load_checkpoint(checkpoint, device="cpu")
    scorer = PADFormerScorer(model, settings=settings)
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(
            f"cannot create output folder {out} ({err}); choose another --out."
        ) from err
    if on_start is not None:
        on_start(sum(len(e.tests) for e in episodes))
    results, cpu_per_image = run_scorer(scorer, episodes, options, progress)
    summary = summarise(results)
    payload = {
        "checkpoint": str(checkpoint),
        "checkpoint_sha256": file_sha256(checkpoint),
        "data": str(index.root),
        "layout": index.layout,
        "options": {**asdict(options), **settings.model_dump()},
        "torch_threads": torch.get_num_threads(),
        "cpu_seconds_per_image": round(cpu_per_image, 4),
        **summary,
    }
    metrics_path, report_path = out / "metrics.json", out / "report.html"
    write_metrics(metrics_path, payload)
    title = f"PADFormer {options.shots}-shot on {index.root.name} ({Path(checkpoint).name})"
    write_html(report_path, title, summary, results, examples)
    return EvalRun(payload, results, metrics_path, report_path)
