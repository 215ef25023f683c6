"""References that grow from the line, measured through the product's own path.

For every object of a render: a profile of the shipped model (the product's metric) is
made from ``--base`` good training views drawn at random (as the quality tables draw
references) and calibrated on ``--calibration`` other good views. Then ``--grow`` more
good views are handed to ``profile refresh`` as approved candidates
(``profiles.refresh.plan_refresh``, the code the CLI runs: scored by the current
version, about one in three held aside by content for the threshold, the references
re-chosen for viewpoint coverage up to the size limit, recalibrated) and the staged
version is scored on every test image of the object: image AUROC, the false-alarm rate
at its own calibrated threshold on the good test images, CPU time per image and the time
to load the profile (its encodings cached). Every level grows from the same base with
the first k of one list of candidates, so a larger k holds every smaller k's images.

PatchCore is given the same images as its memory bank: the base references and all k
approved views (it has no threshold to hold any aside for), with every patch kept and an
exact search (a coreset, as anomalib uses for hundreds of images, only approximates this
search to save time, so the full bank is PatchCore at its best). Its validated
configuration (``benchmarks/validation.json``: 448 px, turned references) costs about
half a minute of one CPU core per image against 24 images' patches and grows with the
bank, so it runs on the base profiles' images only (``--patchcore-validated``, '' for
none), and the growth rows use ``--patchcore`` (default the same stages at 224 px,
turned: a sixteenth of the patches on each side of the search), at every level or at
the ``--patchcore-at`` levels.

    python benchmarks/growth.py --render data/val224-s1 --out runs/growth-val.json
    python benchmarks/growth.py --render data/test224-s0-held --patchcore-validated '' \
        --patchcore-at 4+0 --patchcore-at 4+100 --out benchmarks/growth_runs/test-held.json \
        --write-docs

Choices (the size limit, the levels) are made on a validation render; a test render is
scored once.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    machine_summary,
    markdown_table,
    parse_and_run,
    portable_command,
    print_json_line,
    update_docs_section,
)
from benchmarks.quality import validated_choices
from padformer_edge.anomaly import is_anomalous
from padformer_edge.detect.images import read_image
from padformer_edge.detect.settings import PRODUCT_METRIC, DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.profiles.calibrate import calibrate_profile, score_files
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.refresh import plan_refresh
from padformer_edge.profiles.schema import ReferenceGrowth
from padformer_edge.store.candidates import Candidate
from padformer_edge.store.vocabulary import CandidateOrigin, CandidateState
from padformer_edge.weights import locate_generic_model
from padformer_edge_training.data.layouts import ImageRecord, index_dataset
from padformer_edge_training.evaluation.metrics import image_auroc
from padformer_edge_training.evaluation.patchcore import PatchCoreScorer, parse_config
from padformer_edge_training.evaluation.protocol import ImageResult
from padformer_edge_training.evaluation.uncertainty import MarginInterval, image_auroc_margin

SECTION = "growth"
AUROC_GAIN_TARGET = 0.05  # over the 12-reference profile, interval above zero
CPU_RATIO_TARGET = 1.5  # grown profile's CPU time per image over the 12-reference one's


@dataclass
class Scored:
    """One method's scores on one object's test images, and what it cost."""

    scores: list[float]
    references: int
    cpu_ms: float
    threshold: float | None = None
    load_s: float | None = None


def draw(goods: Sequence[Path], category: str, seed: int) -> list[Path]:
    """The object's good training views in a seeded order: references, candidates and
    calibration views are consecutive slices of it."""
    rng = np.random.default_rng([seed, zlib.crc32(category.encode())])
    return [goods[i] for i in rng.permutation(len(goods))]


def folder_of(paths: Sequence[Path], folder: Path) -> Path:
    folder.mkdir(parents=True)
    for path in paths:
        shutil.copyfile(path, folder / path.name)
    return folder


def approved(paths: Sequence[Path], product: str) -> list[Candidate]:
    """``paths`` as approved candidates, as the history database would hand them over."""
    now = datetime.datetime.now(datetime.UTC)
    return [
        Candidate(
            i,
            i,
            product,
            str(p.absolute()),
            file_sha256(p),
            0.0,
            None,
            None,
            CandidateOrigin.reviewed,
            CandidateState.approved,
            now,
            "benchmark",
            now,
            "benchmark",
            None,
        )
        for i, p in enumerate(paths, start=1)
    ]


def score_profile(profile: Profile, tests: Sequence[ImageRecord]) -> Scored:
    start = time.perf_counter()
    detector = profile.build_detector()
    load_s = time.perf_counter() - start
    cpu = time.process_time()
    scores = score_files(detector, [t.path for t in tests]).tolist()
    cpu_ms = 1000 * (time.process_time() - cpu) / len(tests)
    return Scored(scores, len(profile.config.references), cpu_ms, profile.threshold, load_s)


def score_patchcore(config: str, bank: Sequence[Path], tests: Sequence[ImageRecord]) -> Scored:
    scorer = PatchCoreScorer(*parse_config(config))
    scorer.prepare([read_image(p) for p in bank])
    cpu, scores = time.process_time(), []
    for start in range(0, len(tests), 8):
        scores += [
            s.score for s in scorer.score([read_image(t.path) for t in tests[start : start + 8]])
        ]
    cpu_ms = 1000 * (time.process_time() - cpu) / len(tests)
    return Scored(scores, len(bank), cpu_ms)


def measure_object(args: argparse.Namespace, category: str, goods: list[Path],
                   tests: list[ImageRecord], work: Path) -> dict[str, Scored]:  # fmt: skip
    """Every row of one object: ``'profile N'``, ``'profile N +k'``, ``'patchcore N +k'``."""
    order = draw(goods, category, args.seed)
    top = max(args.base)
    candidates = order[top : top + max(args.grow)]
    calibration = order[-args.calibration :]
    if top + max(args.grow) + args.calibration > len(order):
        sys.exit(f"error: {category} has {len(order)} good training views; the levels need "
                 f"{top + max(args.grow) + args.calibration}.")  # fmt: skip
    calibration_folder = folder_of(calibration, work / f"{category}-calibration")
    model = locate_generic_model()
    settings = DetectionSettings(metric=PRODUCT_METRIC)
    rows: dict[str, Scored] = {}
    for base in args.base:
        root, name = work / f"{category}-{base}", category
        references = folder_of(order[:base], work / f"{category}-references-{base}")
        create_profile(root, name, model, references, settings=settings)
        calibrate_profile(root, name, calibration_folder)
        rows[f"profile {base}"] = score_profile(load_profile(root, name), tests)
        print(f"{category}: profile {base} done", flush=True)
        for k in args.grow:
            plan = plan_refresh(root, name, approved(candidates[:k], name), good=calibration_folder,
                                max_references=args.max_references)  # fmt: skip
            try:
                plan.require_applicable()  # what --yes would install, or the reason it would not
                rows[f"profile {base} +{k}"] = score_profile(
                    Profile(plan.staging, plan.config), tests
                )
            finally:
                plan.discard()
            print(f"{category}: profile {base} +{k} done", flush=True)
        if args.patchcore_validated:
            config = args.patchcore_validated
            rows[f"validated {base} +0"] = score_patchcore(config, order[:base], tests)
        if args.patchcore:
            for k in (0, *args.grow):
                if args.patchcore_at and f"{base}+{k}" not in args.patchcore_at:
                    continue
                bank = order[:base] + candidates[:k]
                rows[f"patchcore {base} +{k}"] = score_patchcore(args.patchcore, bank, tests)
                print(f"{category}: PatchCore {base} +{k} done", flush=True)
    return rows


def results_of(rows: dict[str, dict[str, Scored]], objects: dict[str, list[ImageRecord]],
               key: str) -> list[ImageResult]:  # fmt: skip
    """One row's scores as ``ImageResult``s, for the paired bootstrap."""
    out = []
    for category, tests in objects.items():
        for record, score in zip(tests, rows[category][key].scores, strict=True):
            out.append(ImageResult(record, score, np.zeros((1, 1)), np.zeros((1, 1), bool), {}))
    return out


def summary(rows: dict[str, dict[str, Scored]], objects: dict[str, list[ImageRecord]],
            key: str) -> dict:  # fmt: skip
    """Mean over objects of one row's figures."""
    aurocs, fprs = [], []
    for category, tests in objects.items():
        scored = rows[category][key]
        labels = [not t.is_good for t in tests]
        aurocs.append(image_auroc(labels, scored.scores))
        if scored.threshold is not None:
            good = np.array([s for s, bad in zip(scored.scores, labels, strict=True) if not bad])
            fprs.append(float(is_anomalous(good, scored.threshold).mean()))
    first = [rows[c][key] for c in objects]
    return {
        "image_auroc": float(np.mean(aurocs)),
        "false_alarm_rate": float(np.mean(fprs)) if fprs else None,
        "references": float(np.mean([s.references for s in first])),
        "cpu_ms": float(np.mean([s.cpu_ms for s in first])),
        "load_s": float(np.mean([s.load_s for s in first]))
        if first[0].load_s is not None
        else None,
    }


def run(args: argparse.Namespace) -> None:
    if args.from_json is not None:
        publish(json.loads(args.from_json.read_text(encoding="utf-8")), args)
        return
    if args.render is None:
        raise UserError("give --render (a synth render folder) or --from-json (a saved run).")
    args.base = sorted(args.base or [4, 12])
    args.grow = sorted(args.grow or [20, 50, 100])
    index = index_dataset(args.render)
    goods = index.good_train()
    classes = args.class_ or sorted(goods)
    objects = {c: [r for r in index.records if r.split == "test" and r.category == c]
               for c in classes}  # fmt: skip
    rows: dict[str, dict[str, Scored]] = {}
    with tempfile.TemporaryDirectory(prefix="growth-") as tmp:
        for category in classes:
            rows[category] = measure_object(args, category, goods[category], objects[category],
                                            Path(tmp))  # fmt: skip
    keys = list(rows[classes[0]])
    figures = {key: summary(rows, objects, key) for key in keys}
    margins = {}
    largest = max(args.grow)
    for base in args.base:
        grown = f"profile {base} +{largest}"
        against = {"profile 12": "the 12-reference profile",
                   f"patchcore {base} +{largest}": "PatchCore with the same images"}  # fmt: skip
        for other, words in against.items():
            if other in figures:
                first, second = (results_of(rows, objects, key) for key in (grown, other))
                interval = image_auroc_margin(first, second, seed=args.seed)
                margins[f"{grown} over {words}"] = interval
    targets = targets_of(figures, margins, args)
    payload = {
        "render": args.render.name, "classes": classes, "seed": args.seed,
        "calibration": args.calibration, "images": sum(len(t) for t in objects.values()),
        "max_references": args.max_references or ReferenceGrowth().max_references,
        "patchcore": args.patchcore, "patchcore_validated": args.patchcore_validated,
        "rows": figures, "margins": {k: m.__dict__ for k, m in margins.items()},
        "targets": targets, "machine": machine_summary(),
        "command": portable_command("python " + shlex.join(sys.argv)),
        "date": datetime.date.today().isoformat(),
    }  # fmt: skip
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=1, sort_keys=True), encoding="utf-8")
    publish(payload, args)


def publish(payload: dict, args: argparse.Namespace) -> None:
    """Print the tables of ``payload`` (a run's, or one read back with ``--from-json``),
    write them into the docs if asked, and end with the JSON line."""
    margins = {k: MarginInterval(**m) for k, m in payload["margins"].items()}
    body = report(payload, margins)
    print(body)
    if args.write_docs and args.from_json is None:
        update_docs_section(args.section, body)
    elif args.write_docs:  # the run's own command, machine and date, and the file read
        record = f"`{payload['command']}` (saved as `{args.from_json.as_posix()}`)"
        when = datetime.date.fromisoformat(payload["date"])
        update_docs_section(args.section, body, machine=payload["machine"], date=when,
                            record=record)  # fmt: skip
    print_json_line(SECTION, payload | {"margins": {k: m.brief() for k, m in margins.items()}})


def targets_of(figures: dict, margins: dict, args: argparse.Namespace) -> dict[str, bool]:
    """The issue's targets that this run measured, each met or not."""
    largest, out = max(args.grow), {}
    twelve = figures.get("profile 12")
    for base in args.base:
        grown = figures[f"profile {base} +{largest}"]
        key = f"profile {base} +{largest} over the 12-reference profile"
        if key in margins:
            m = margins[key]
            out[f"from {base}: AUROC >= 12-reference + 5 points, interval above 0"] = bool(
                m.margin >= AUROC_GAIN_TARGET and m.low > 0
            )
        key = f"profile {base} +{largest} over PatchCore with the same images"
        if key in margins:
            out[f"from {base}: AUROC >= PatchCore with the same images"] = bool(
                margins[key].margin >= 0
            )
        if twelve is not None:
            out[f"from {base}: CPU per image <= 1.5x the 12-reference profile's"] = bool(
                grown["cpu_ms"] <= CPU_RATIO_TARGET * twelve["cpu_ms"]
            )
    return out


def row_order(key: str) -> tuple[int, int, int]:
    """Profiles, then the validated PatchCore, then PatchCore; by base, then growth."""
    method, base, *grow = key.split(" ")
    rank = ("profile", "validated", "patchcore").index(method)
    return rank, int(base), int(grow[0]) if grow else 0


def report(payload: dict, margins: dict[str, MarginInterval]) -> str:
    table_rows = []
    names = {"profile": "profile", "patchcore": f"PatchCore {payload['patchcore']}",
             "validated": f"PatchCore {payload['patchcore_validated']} (validated)"}  # fmt: skip
    for key, f in sorted(payload["rows"].items(), key=lambda item: row_order(item[0])):
        method, base, *grow = key.split(" ")
        label = (f"{names[method]} from {base} references"
                 + (f", {grow[0]} approved" if grow and grow[0] != "+0" else ""))  # fmt: skip
        fpr = "-" if f["false_alarm_rate"] is None else f"{100 * f['false_alarm_rate']:.1f}%"
        load = "-" if f["load_s"] is None else f"{f['load_s']:.2f}"
        table_rows.append([label, f"{f['references']:.0f}", f"{100 * f['image_auroc']:.1f}", fpr,
                           f"{f['cpu_ms']:.0f}", load])  # fmt: skip
    table = markdown_table(["method", "references (memory images)", "image AUROC",
                            "false alarms at its threshold", "CPU ms per image",
                            "load s"], table_rows)  # fmt: skip
    margin_rows = [[k, m.brief()] for k, m in margins.items()]
    margin_table = markdown_table(["AUROC margin", "points [95% paired bootstrap]"], margin_rows)
    target_rows = [[k, "met" if v else "missed"] for k, v in payload["targets"].items()]
    target_table = markdown_table(["target", ""], target_rows)
    note = (
        f"{', '.join(payload['classes'])} of render {payload['render']} ({payload['images']} "
        f"test images), the shipped model with the `{PRODUCT_METRIC}` metric; references drawn "
        f"at random (seed {payload['seed']}), calibrated on {payload['calibration']} other good "
        "views at the default false-alarm target; growth through `profile refresh` with a size "
        f"limit of {payload['max_references']} references; PatchCore with every image in its "
        "memory (exact search); means over objects; load s is the profile's detector built "
        "from its cached encodings; CPU ms with one torch thread."
    )
    return f"{table}\n\n{margin_table}\n\n{target_table}\n\n{note}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", type=Path, help="A synth render folder.")
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="Print (and with --write-docs write) a run saved with --out.",
    )
    parser.add_argument("--class", dest="class_", metavar="NAME", action="append", default=[],
                        help="Only this object (repeat); default every object.")  # fmt: skip
    parser.add_argument(
        "--base",
        type=int,
        action="append",
        default=None,
        help="References of the profile before growth (repeat; default 4 and 12).",
    )
    parser.add_argument(
        "--grow",
        type=int,
        action="append",
        default=None,
        help="Approved good views handed to refresh (repeat; default 20, 50, 100).",
    )
    parser.add_argument(
        "--max-references",
        type=int,
        default=None,
        help="refresh's size limit (default: the profile's growth.max_references).",
    )
    parser.add_argument("--calibration", type=int, default=30, help="Good views for thresholds.")
    parser.add_argument(
        "--patchcore",
        default="2@224 turned",
        help="PatchCore's configuration at every level ('' for none).",
    )
    parser.add_argument(
        "--patchcore-validated",
        default=validated_choices()["patchcore"],
        help="PatchCore's validated configuration, run on the base profiles' images only "
        "('' for none).",
    )
    parser.add_argument(
        "--patchcore-at",
        metavar="BASE+K",
        action="append",
        default=[],
        help="Run --patchcore only at these levels (repeat, e.g. 4+0 and 4+100; default all): "
        "its search grows with its memory.",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="Also write the figures as JSON.")
    parser.add_argument("--section", default=SECTION)
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
