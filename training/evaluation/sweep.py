"""The validation sweep's grid of fused settings, how its rows are named and read back,
and how its winners are picked.

``benchmarks/tune_validation.py`` scores every setting of this grid on the validation
render and keeps each row's figures under its name in a JSON file; ``compare_sweeps.py``
reads those files back. Both take the grid, the names and the picks from here, so a row
written by one is read alike by the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from padformer_edge.detect.paper_metrics import PAPER_READOUT, Readout
from padformer_edge.detect.scoring_config import JobScoring
from padformer_edge.detect.signature import TURNS_TEXT
from padformer_edge.errors import UserError
from padformer_edge_training.evaluation.fusion import FusedSetting, FusionSweepScorer, ReplayScorer
from padformer_edge_training.evaluation.protocol import EvalOptions, run_scorer, summarise

FUSED_WEIGHTS = (0.0, 0.25)
"""LAB weights of a fused mix. 0.5, 0.75 and 1 were swept too until the nearest-reference
zoom joined the grid; they never won a job for either model, and dropping them keeps the
grown sweep within a CPU half hour."""
READOUTS = (Readout(True, 0.0), *(Readout(False, sigma) for sigma in (2.0, 4.0)))
"""The paper's filtered map, and the plain pass mean smoothed by a Gaussian of 2 or 4
model pixels (PatchCore smooths with 4): how much of a map's noise to average away
before its maximum or its outline is read is a property of the model's errors, so it is
chosen here, not assumed. The unsmoothed mean, sigma 8 and the filtered map smoothed
were swept too until the reference zoom joined the grid, and never won a job."""

REFERENCE_WEIGHTS = (0.0, 12.0, 24.0, 48.0, 96.0, 192.0)
"""Weights of the nearest-reference distance (one minus a cosine, so about 0.1 on good
cells) in a fused mix whose other terms are in units of their spread on good views:
0 leaves the references to the reconstruction alone, 192 lets them dominate (the grid
ended at 48 until the generic model chose 48, and at 96 until it chose 96; 6 was in it
until no job chose it). 384 and 768 were scored in a side sweep (``--reference-weight``,
benchmarks/sweeps/sweep-weights-*.json, docs block ``reference-weight-curve``): both models'
image AUROC was flat past 192, so the grid stops there. Eight weights on 360 images do
not fit this machine's 24 GiB (every setting keeps its maps for the replay)."""
REFERENCE_ZOOMS = (1, 2)
"""The reference distance at the model's size, or averaged with the images magnified 2x.
Measured on this render before the sweep, the distance alone at 2x ranked the six
objects' images better than at 1x, and duck and lego's worse; 3x cost four times 2x's
CPU and was worse still on both, so it is not swept."""
REFERENCE_TURNS = (False, True)
"""The references as taken, or also turned by a quarter, a half and three quarters: a
camera that sees the part from any side sees it at any roll too, and a turned reference
may then be the nearest view. Measured on this render before the sweep, the distance
alone with turned references ranked the six objects' images better (and duck and lego's
a little better); mirrored references added nothing, so they are not swept."""

Key = TypeVar("Key")
EDGE = "edge fused,"  # + the checkpoint's training steps: one row group per run
GENERIC = "generic,"  # likewise, for the generic-model candidates


def fused_sweep(
    model,
    episodes,
    options: EvalOptions,
    seed: int,
    suffix: str,
    reference_weights: tuple[float, ...] = REFERENCE_WEIGHTS,
) -> dict[str, dict]:
    """'lab weight W, reference R[ at zoom Z][ with quarter turns], READOUT' + ``suffix`` ->
    the setting as one job's scoring (``scoring``) and its mean figures, for every weight of
    FUSED_WEIGHTS and REFERENCE_WEIGHTS, zoom of REFERENCE_ZOOMS, turns of REFERENCE_TURNS
    and readout of READOUTS: one reconstruction per query, scored once per setting."""
    sweep = FusionSweepScorer(
        model,
        FUSED_WEIGHTS,
        READOUTS,
        reference_weights,
        seed=seed,
        reference_zooms=REFERENCE_ZOOMS,
        reference_turns=REFERENCE_TURNS,
    )
    run_scorer(sweep, episodes, options)
    return {
        setting_label(setting) + suffix: {
            "scoring": job_of(setting),
            **summarise(run_scorer(ReplayScorer(results), episodes, options)[0], per_defect=False)[
                "mean"
            ],
        }
        for setting, results in sweep.results.items()
    }


def job_of(setting: FusedSetting) -> dict:
    """A sweep setting as one job's scoring settings (``JobScoring``'s keys, as JSON): what
    its row records and a choice becomes (a zoom or turns without a reference term are 1
    and false, as scored)."""
    mix = setting.mix
    return {
        "lab_weight": float(mix.lab_weight),
        "reference_weight": float(mix.reference_weight),
        "reference_zoom": mix.zoom,
        "reference_turns": mix.turns,
        "consistency_filter": setting.readout.consistency_filter,
        "sigma": float(setting.readout.sigma),
    }


def setting_label(setting: FusedSetting) -> str:
    """How the sweep's rows name a setting for a reader: 'lab weight 0.25, reference 12,
    mean, sigma 8' ('reference 12 at zoom 2 with quarter turns' for a zoomed distance to
    turned references). A name only: the row's ``scoring`` holds the setting."""
    mix, readout = setting.mix, setting.readout
    term = f"reference {mix.reference_weight:g}"
    term += f" at zoom {mix.zoom}" if mix.zoom > 1 else ""
    term += f" {TURNS_TEXT}" if mix.turns else ""
    reading = f"{'filtered' if readout.consistency_filter else 'mean'}, sigma {readout.sigma:g}"
    return f"lab weight {mix.lab_weight:g}, {term}, {reading}"


def run_label(metadata: dict) -> str:
    """'N steps', or 'N steps after FOLDER/FILE' for a run fine-tuned from other weights
    (train --init), so that continued runs are told apart from fresh ones of equal length."""
    label = f"{metadata.get('global_step')} steps"
    init = metadata.get("init")
    if init:
        path = Path(init["path"])
        label += f" after {path.parent.name}/{path.name}"
    return label


def row_scoring(method: str, setting: str, row: dict) -> JobScoring:
    """The setting a fused row was scored with (its ``scoring``); a row written before
    rows carried it is a UserError naming the fix. Not held to the product's bounds: a
    side sweep scores weights past them (``--reference-weight``), and a choice among
    them is checked where it is used (the release tool validates what it ships)."""
    if "scoring" not in row:
        raise UserError(
            f"validation row '{method}' / '{setting}' holds no scoring (written before rows "
            "carried their setting); sweep that checkpoint again with --checkpoint or "
            "--generic."
        )
    return JobScoring.model_construct(**row["scoring"])


def is_swept_readout(method: str, setting: str, row: dict) -> bool:
    """A fused row other than the paper's (filtered, unsmoothed, no reference term)."""
    if not method.startswith((EDGE, GENERIC)):
        return False
    job = row_scoring(method, setting, row)
    paper = job.consistency_filter == PAPER_READOUT.consistency_filter
    paper = paper and job.sigma == PAPER_READOUT.sigma
    return not paper or (job.reference_weight or 0.0) > 0


def best(rows: dict[Key, dict]) -> Key:
    """The configuration with the highest mean image AUROC (AUPRO breaks ties)."""
    return max(rows, key=lambda k: (rows[k]["image_auroc"] or 0, rows[k]["aupro"] or 0))


def best_map(rows: dict[Key, dict]) -> Key:
    """The configuration whose maps outline defects best: AUPRO (pixel AUROC breaks ties)."""
    return max(rows, key=lambda k: (rows[k]["aupro"] or 0, rows[k]["pixel_auroc"] or 0))


def scored_on(rows: dict[str, dict], images: int) -> bool:
    """Whether every scored row of a group was scored on ``images`` images."""
    scored = [row for row in rows.values() if "image_auroc" in row]
    return bool(scored) and all(row.get("images") == images for row in scored)


def drop_other_samples(
    results: dict[str, dict[str, dict]], prefix: str, images: int
) -> dict[str, dict[str, dict]]:
    """``results`` without the groups named ``prefix``... that an earlier run scored on
    another number of images (another ``--max-per-label``). Their figures rank settings on
    another sample, with another noise level: the best of 126 settings on 120 images read
    about 5 points higher than the same setting on 360, so a choice across the two samples
    would mostly pick the smaller one's luck."""
    return {
        method: rows
        for method, rows in results.items()
        if not method.startswith(prefix) or scored_on(rows, images)
    }
