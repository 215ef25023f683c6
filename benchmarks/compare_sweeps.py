"""Compare training runs by the validation sweeps they were scored with, setting by setting.

``benchmarks/tune_validation.py`` scores every fused setting of a run on the validation
render and keeps each setting's figures in its JSON file. Two runs of one recipe that
differ in one thing (the input size, say) are then best compared on the same settings,
not only by their winners: the best of 126 settings is itself a noisy pick (the winner's
curse of the eighth session's closing note), while the difference averaged over every
shared setting, and how many of them each run wins, says whether the change moves the
whole sweep or one lucky row. The first ``--run`` is the one the others are compared with.

    python benchmarks/compare_sweeps.py \
        --run "192 px=benchmarks/sweeps/sweep-192px.json#edge fused, 6000 steps" \
        --run "256 px=benchmarks/sweeps/sweep-edge256.json#edge fused, 1500 steps after ..." \
        --section grid-size --write-docs

``--curve`` reads each run along the nearest-reference weight instead: per weight, the
best image AUROC and the best AUPRO any setting with that weight reaches. A curve that
is flat past some weight says the frozen-feature distance decides the ranking from there
on, and a wider grid would only pick noise. A run named twice is one grid (a side sweep
that scored more weights on the same images extends the product's sweep):

    python benchmarks/compare_sweeps.py --curve \
        --run "edge=benchmarks/validation.json#edge fused, 6000 steps" \
        --run "edge=benchmarks/sweeps/sweep-weights-edge-360.json#edge fused, 6000 steps" \
        --section reference-weight-curve --write-docs
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.errors import UserError
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.sweep import best, best_map, row_scoring


@dataclass(frozen=True)
class Sweep:
    """One run's figures in one sweep file: setting label -> {metric: value, images: n}."""

    name: str
    rows: dict[str, dict]

    @property
    def images(self) -> int:
        return next(iter(self.rows.values()))["images"]

    def score_choice(self) -> tuple[str, dict]:
        """The image-score setting tune_validation would choose, with its figures."""
        label = best(self.rows)
        return label, self.rows[label]

    def map_choice(self) -> tuple[str, dict]:
        """The map setting tune_validation would choose, with its figures."""
        label = best_map(self.rows)
        return label, self.rows[label]

    def reconstruction_alone(self) -> Sweep:
        """The settings without the reference distance: what the trained model ranks by
        itself, since the distance reads frozen features that no training run changes."""
        rows = {k: v for k, v in self.rows.items() if reference_weight(self.name, k, v) == 0}
        if not rows:
            raise UserError(f"{self.name}'s sweep has no setting without the reference term.")
        return Sweep(self.name, rows)


def reference_weight(name: str, label: str, row: dict) -> float:
    """The nearest-reference weight a row was scored with, from its ``scoring``."""
    return float(row_scoring(name, label, row).reference_weight or 0.0)


def parse_run(spec: str) -> Sweep:
    """'NAME=FILE#GROUP' -> that group's scored settings from the sweep file."""
    name, sep, rest = spec.partition("=")
    path, hash_sign, group = rest.partition("#")
    if not (sep and hash_sign and name and group):
        raise UserError(f"--run {spec!r}: write NAME=FILE#GROUP, GROUP a row group of FILE.")
    try:
        results = json.loads(Path(path).read_text(encoding="utf-8"))["results"]
    except (OSError, ValueError, KeyError) as err:
        raise UserError(f"--run {spec!r}: {path} is not a readable sweep file ({err}).") from err
    if group not in results:
        raise UserError(
            f"--run {spec!r}: {path} has no group {group!r}; it has {', '.join(sorted(results))}."
        )
    rows = {label: row for label, row in results[group].items() if "image_auroc" in row}
    if not rows:
        raise UserError(f"--run {spec!r}: group {group!r} holds no scored setting.")
    return Sweep(name, rows)


def merged(sweeps: list[Sweep]) -> list[Sweep]:
    """Runs given under one name joined into one grid, in the order first named. Both
    files must have scored the same images, and a setting both hold the same figures: the
    sweep is deterministic, so a difference means another render, sample or model."""
    joined: dict[str, dict[str, dict]] = {}
    images: dict[str, int] = {}
    for sweep in sweeps:
        rows = joined.setdefault(sweep.name, {})
        if images.setdefault(sweep.name, sweep.images) != sweep.images:
            raise UserError(f"the sweeps named {sweep.name} scored different numbers of images.")
        for label, row in sweep.rows.items():
            if label in rows and rows[label] != row:
                raise UserError(
                    f"the sweeps named {sweep.name} disagree on {label!r}: not the same "
                    "render, sample or model."
                )
            rows[label] = row
    return [Sweep(name, rows) for name, rows in joined.items()]


def weight_curve(sweeps: list[Sweep]) -> tuple[str, dict]:
    """Per run and reference weight, the best image AUROC and the best AUPRO of the
    settings with that weight (what the score's and the map's choice would be if the grid
    held that weight only)."""
    rows, payload = [], {"runs": {}}
    for sweep in sweeps:
        by_weight: dict[float, dict[str, dict]] = {}
        for label, row in sweep.rows.items():
            by_weight.setdefault(reference_weight(sweep.name, label, row), {})[label] = row
        curve = {}
        for weight in sorted(by_weight):
            group = by_weight[weight]
            score_label, map_label = best(group), best_map(group)
            curve[f"{weight:g}"] = {
                "score_setting": score_label,
                "image_auroc": group[score_label]["image_auroc"],
                "map_setting": map_label,
                "aupro": group[map_label]["aupro"],
            }
            rows.append(
                [
                    sweep.name,
                    f"{weight:g}",
                    fmt(group[score_label]["image_auroc"]),
                    score_label,
                    fmt(group[map_label]["aupro"]),
                    map_label,
                ]
            )
        payload["runs"][sweep.name] = {"images": sweep.images, "curve": curve}
    table = markdown_table(
        ["run", "reference weight", "best image AUROC", "its setting", "best AUPRO", "its setting"],
        rows,
    )
    images = ", ".join(f"{s.name} {s.images}" for s in sweeps)
    note = (
        f"\nValidation images per run: {images}; figures in %. Each row is the best of the "
        "settings with that nearest-reference weight (the other axes of the sweep free): the "
        "image score's choice by image AUROC, the map's by AUPRO."
    )
    return table + "\n" + note, payload


def paired(base: Sweep, other: Sweep, metric: str) -> tuple[float, int, int]:
    """(mean of other - base over their shared settings, settings other scores higher on,
    shared settings)."""
    shared = sorted(set(base.rows) & set(other.rows))
    if not shared:
        raise UserError(f"{base.name} and {other.name} share no setting to compare.")
    diffs = [other.rows[s][metric] - base.rows[s][metric] for s in shared]
    return statistics.fmean(diffs), sum(d > 0 for d in diffs), len(shared)


def compare(sweeps: list[Sweep]) -> tuple[str, dict]:
    """The table (each run's chosen image-score and map settings, and its paired difference
    from the first run) and the JSON payload."""
    base = sweeps[0]
    if len({s.images for s in sweeps}) != 1:
        raise UserError("the sweeps scored different numbers of images; compare like with like.")
    rows, payload = [], {"images": base.images, "runs": {}}
    for sweep in sweeps:
        score_label, score = sweep.score_choice()
        map_label, amap = sweep.map_choice()
        alone_label, alone = sweep.reconstruction_alone().score_choice()
        entry = {
            "score_setting": score_label,
            "score": score,
            "map_setting": map_label,
            "map": amap,
            "alone_setting": alone_label,
            "alone": alone,
        }
        if sweep is base:
            versus = "(the base)"
        else:
            img, img_wins, shared = paired(base, sweep, "image_auroc")
            pro, pro_wins, _ = paired(base, sweep, "aupro")
            versus = (
                f"image {img * 100:+.1f} (higher on {img_wins}/{shared}), "
                f"AUPRO {pro * 100:+.1f} (higher on {pro_wins}/{shared})"
            )
            entry |= {
                "image_auroc_diff": img,
                "image_auroc_wins": img_wins,
                "aupro_diff": pro,
                "aupro_wins": pro_wins,
                "shared": shared,
            }
        rows.append(
            [
                sweep.name,
                fmt(score["image_auroc"]),
                score_label,
                fmt(amap["aupro"]),
                map_label,
                fmt(alone["image_auroc"]),
                versus,
            ]
        )
        payload["runs"][sweep.name] = entry
    table = markdown_table(
        [
            "run",
            "best image AUROC",
            "its setting",
            "best AUPRO",
            "its setting",
            "best image AUROC, reconstruction alone",
            f"mean over shared settings, against {base.name}",
        ],
        rows,
    )
    note = (
        f"\n{base.images} validation images per run; figures in %. The paired columns "
        "average each run's difference from the first over every setting both sweeps "
        "scored, so one lucky setting cannot carry them. Reconstruction alone: the best "
        "setting without the nearest-reference distance."
    )
    return table + "\n" + note, payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run",
        action="append",
        required=True,
        help="NAME=SWEEP_JSON#ROW_GROUP; the first is the base; repeat (a repeated NAME "
        "joins the two groups into one grid).",
    )
    parser.add_argument(
        "--curve", action="store_true", help="Each run's best figures per reference weight."
    )
    parser.add_argument("--section", default="sweep-comparison", help="docs block to write")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    try:
        sweeps = merged([parse_run(spec) for spec in args.run])
        table, payload = (weight_curve if args.curve else compare)(sweeps)
    except UserError as err:
        sys.exit(f"error: {err}")
    print(table)
    print_json_line("compare_sweeps", payload)
    if args.write_docs:
        update_docs_section(args.section, table)


if __name__ == "__main__":
    main()
