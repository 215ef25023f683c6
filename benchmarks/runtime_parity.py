"""Runtime parity: one profile's images scored on torch, onnxruntime and openvino.

Issue 33's target, on renders (a render of the builtins, the demo's part): anomaly maps
within a tolerance derived from float32, image scores within 1e-4 relative, the same
verdict for every image at the profile's threshold, and image AUROC equal to 0.1 points.

Per class of each ``--data`` render, through the path a line runs: ``profile create``
on torch from the class's good training views (``--shots`` of them, chosen as the
command chooses), ``profile calibrate`` on the first ``--calibration`` good test views
at ``--target-fpr``, then the remaining test images (at most ``--max-per-label`` per
label, in the render's order) scored by the profile's own detector
(``Profile.build_detector().detect_each``) on torch, then again after each ``profile
export --runtime R``. The reference-encoding cache is removed before each runtime, so
every runtime encodes the references with its own graphs.

The map tolerance is the one the export tests hold the tiny checkpoints to
(``tests.deploy.parity.float32_bound``): eps(float32) x the model's longest reduction x
the sequential blocks it passes through, relative to the largest value of torch's map.

    python benchmarks/runtime_parity.py --data data/builtins --data data/demo-duck --write-docs
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    markdown_table,
    parse_and_run,
    print_json_line,
    update_docs_section,
)
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.devices.runtimes import RUNTIMES

SCORE_RTOL = 1e-4  # issue 33's targets
AUROC_POINTS = 0.1


@dataclass
class Scored:
    """One runtime's results on one class: per image score, map and verdict."""

    scores: list[float] = field(default_factory=list)
    maps: list[np.ndarray] = field(default_factory=list)
    verdicts: list[bool] = field(default_factory=list)


def runtimes(text: str) -> list[str]:
    """``torch,openvino`` -> the runtimes to compare; torch is the baseline and always runs."""
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(chosen) - set(RUNTIMES))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown runtime {unknown[0]}; use {', '.join(RUNTIMES)}")
    return ["torch", *[r for r in RUNTIMES[1:] if r in chosen]]


def split_tests(records: list, calibration: int, max_per_label: int) -> tuple[list, list]:
    """(good test views for calibration, the images to score) of one class, in order."""
    goods = [r for r in records if r.is_good]
    held = goods[:calibration]
    kept: dict[str, int] = {}
    scored = []
    for record in records:
        if record in held or kept.get(record.label, 0) >= max_per_label:
            continue
        kept[record.label] = kept.get(record.label, 0) + 1
        scored.append(record)
    return held, scored


def score_with(root: Path, name: str, paths: list[Path]) -> Scored:
    """The profile's verdicts on ``paths`` with its current runtime, cache rebuilt first."""
    from padformer_edge.detect.images import read_image
    from padformer_edge.profiles.profile import load_profile

    profile = load_profile(root, name)
    profile.cache_path.unlink(missing_ok=True)
    detector = profile.build_detector()
    found = Scored()
    for _, _, detection in detector.detect_each(paths, read_image):
        found.scores.append(float(detection.score))
        found.maps.append(np.asarray(detection.anomaly_map, dtype=np.float64))
        found.verdicts.append(profile.is_anomaly(detection.score))
    return found


def compare_class(args: argparse.Namespace, data: Path, category: str, work: Path) -> list[dict]:
    """One class: the profile made, calibrated and scored on every runtime; one record per
    runtime with its differences from torch."""
    from padformer_edge.model.checkpoint import load_checkpoint
    from padformer_edge.profiles.calibrate import calibrate_profile
    from padformer_edge.profiles.create import create_profile
    from padformer_edge.profiles.export import export_profile
    from padformer_edge_training.data.layouts import index_dataset
    from padformer_edge_training.evaluation.metrics import image_auroc
    from tests.deploy.parity import float32_bound, relative_error

    index = index_dataset(data, categories=[category])
    tests = [r for r in index.records if r.split == "test"]
    held, scored = split_tests(tests, args.calibration, args.max_per_label)
    train = index.good_train()[category]
    root, name = work / "profiles", category
    shots = min(args.shots, len(train))
    auto = DetectionSettings(metric="auto")  # what create_profile's default was when measured
    create_profile(root, name, args.model, train[0].parent, shots=shots, settings=auto)
    good_dir = work / f"{category}-calibration"
    good_dir.mkdir()
    for record in held:
        shutil.copyfile(record.path, good_dir / record.path.name)
    calibrate_profile(root, name, good_dir, target_fpr=args.target_fpr)
    bound = float32_bound(load_checkpoint(args.model)[0])
    labels = [not r.is_good for r in scored]
    paths = [r.path for r in scored]
    results: dict[str, Scored] = {}
    for runtime in args.runtimes:
        if runtime != "torch":
            export_profile(root, name, runtime)
        results[runtime] = score_with(root, name, paths)
    base = results["torch"]
    base_auroc = image_auroc(labels, base.scores)
    records = []
    for runtime, found in results.items():
        score_gap = max(
            abs(a - b) / max(abs(b), 1e-12) for a, b in zip(found.scores, base.scores, strict=True)
        )
        map_gap = max(relative_error(a, b) for a, b in zip(found.maps, base.maps, strict=True))
        auroc = image_auroc(labels, found.scores)
        records.append(
            {
                "data": data.name,
                "class": category,
                "runtime": runtime,
                "images": len(paths),
                "defective": sum(labels),
                "max_score_rel_diff": score_gap,
                "max_map_rel_diff": map_gap,
                "map_bound": bound,
                "verdicts_same": sum(
                    a == b for a, b in zip(found.verdicts, base.verdicts, strict=True)
                ),
                "image_auroc": 100 * auroc,
                "auroc_diff_points": 100 * abs(auroc - base_auroc),
            }
        )
    return records


def meets(record: dict) -> bool:
    """Whether one runtime's record meets every parity target."""
    return (
        record["max_score_rel_diff"] <= SCORE_RTOL
        and record["max_map_rel_diff"] <= record["map_bound"]
        and record["verdicts_same"] == record["images"]
        and record["auroc_diff_points"] <= AUROC_POINTS
    )


def run(args: argparse.Namespace) -> None:
    from padformer_edge.weights import resolve_model
    from padformer_edge_training.data.layouts import index_dataset

    args.model = resolve_model(args.model)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the line runtimes' threads
    records = []
    with tempfile.TemporaryDirectory(prefix="runtime_parity_") as tmp:
        for data in args.data:
            classes = sorted(index_dataset(data).good_train())
            for category in args.class_ or classes:
                if category not in classes:
                    continue
                work = Path(tmp) / data.name / category
                work.mkdir(parents=True)
                records += compare_class(args, data, category, work)
    if not records:
        raise SystemExit("no class of --data matched --class; nothing was scored.")
    headers = ["render", "class", "runtime", "images (defective)", "max score diff (rel)",
               "max map diff (rel)", "map bound (float32)", "same verdicts",
               "image AUROC %", "AUROC diff (points)", "targets met"]  # fmt: skip
    rows = [
        [r["data"], r["class"], r["runtime"], f"{r['images']} ({r['defective']})",
         f"{r['max_score_rel_diff']:.2e}", f"{r['max_map_rel_diff']:.2e}",
         f"{r['map_bound']:.2e}", f"{r['verdicts_same']}/{r['images']}",
         f"{r['image_auroc']:.2f}", f"{r['auroc_diff_points']:.3f}",
         "yes" if meets(r) else "NO"]
        for r in records
    ]  # fmt: skip
    table = markdown_table(headers, rows)
    compared = [r for r in records if r["runtime"] != "torch"]
    passed = all(meets(r) for r in compared)
    summary = (
        f"Each row against torch on the same profile, images and threshold; targets: scores "
        f"within {SCORE_RTOL:g} relative, maps within the float32 bound (eps(float32) x the "
        f"model's longest reduction x its sequential blocks, relative to torch's largest map "
        f"value), every verdict the same, image AUROC within {AUROC_POINTS:g} points. "
        f"{'Every runtime meets every target.' if passed else 'A target is missed (NO).'}"
    )
    print(table)
    print(summary)
    print_json_line("runtime_parity", {"passed": passed, "rows": records})
    if args.write_docs:
        update_docs_section(args.section, f"{table}\n\n{summary}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="Checkpoint; default the shipped generic one.")
    parser.add_argument(
        "--data", type=Path, action="append", required=True, help="A render (repeat)."
    )
    parser.add_argument(
        "--runtimes",
        type=runtimes,
        default=list(RUNTIMES),
        help="Comma-separated runtimes to compare with torch (default all three).",
    )
    parser.add_argument(
        "--calibration", type=int, default=10, help="Good test views to calibrate on (10 at least)."
    )
    parser.add_argument("--target-fpr", type=float, default=0.1, help="As profile calibrate's.")
    parser.add_argument(
        "--class",
        dest="class_",
        metavar="NAME",
        action="append",
        default=[],
        help="Score only this class (repeat); default every class of each render.",
    )
    parser.add_argument("--shots", type=int, default=4, help="References the profile keeps.")
    parser.add_argument("--max-per-label", type=int, default=4, help="Test images per label.")
    parser.add_argument("--threads", type=int, default=1, help="torch's and the runtimes'.")
    parser.add_argument("--section", default="runtime-parity", help="The docs block to write.")
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
