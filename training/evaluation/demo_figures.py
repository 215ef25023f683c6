"""What the demo's run left behind, counted: the defects and good parts the daemon
flagged (from its result database), and what the validated PatchCore flags on the same
camera images with the same references and calibration views, at the threshold the
product's own rule gives it. ``benchmarks/demo_figures.py`` sets them side by side in the
docs; the demo's test checks that both count the same images.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from padformer_edge_training.evaluation.metrics import image_auroc


def database_figures(database: Path) -> tuple[int, int, int, int]:
    """(defects flagged, defects, good flagged, good) from the rows the daemon stored."""
    from padformer_edge.store.engine import open_engine
    from padformer_edge.store.history import Filters, list_inspections

    engine = open_engine(str(database), read_only=True)
    try:
        rows = list_inspections(engine, Filters(), limit=1000)
    finally:
        engine.dispose()
    good = [r for r in rows if Path(r.source_path).stem.endswith("-good")]
    defects = [r for r in rows if not Path(r.source_path).stem.endswith("-good")]
    return (
        sum(bool(r.is_anomaly) for r in defects),
        len(defects),
        sum(bool(r.is_anomaly) for r in good),
        len(good),
    )


def baseline_figures(out: Path, config: str) -> tuple[int, int, int, int]:
    """(defects flagged, defects, good flagged, good) of PatchCore ``config`` on the demo's
    own images, references and calibration views left in ``out``. A framed demo's profile
    reads each frame's located part; PatchCore is given the same crops (found against the
    profile's belt photo and relit as the profile does), the stronger of its two readings."""
    import numpy as np
    import yaml

    from padformer_edge.detect.framed import Framing
    from padformer_edge.detect.framing import same_size
    from padformer_edge.detect.images import list_images, read_image
    from padformer_edge.detect.locate import BeltModel
    from padformer_edge.profiles.thresholds import false_alarm_threshold
    from padformer_edge_training.evaluation.patchcore import PatchCoreScorer, parse_config

    profile_dir = next((out / "profiles").iterdir())
    profile = yaml.safe_load((profile_dir / "profile.yaml").read_text(encoding="utf-8"))
    background = profile.get("background")
    framing = None
    if background:
        belt = BeltModel.from_photo(read_image(profile_dir / background["file"]))
        framing = Framing(belt, background["sha256"])

    def part(path: Path) -> np.ndarray | None:
        image = read_image(path)
        return image if framing is None else framing.part(image)[2]

    references = [part(profile_dir / "references" / r["file"]) for r in profile["references"]]
    references = same_size([r for r in references if r is not None])  # as framed_references
    scorer = PatchCoreScorer(*parse_config(config))
    scorer.prepare(references)

    def scores(paths: list[Path]) -> np.ndarray:
        """Each image's score; a frame without a part is never flagged, as on the line."""
        crops = [part(p) for p in paths]
        return np.array([-np.inf if c is None else scorer.score([c])[0].score for c in crops])

    calibration = scores(list_images(out / "calibration-good"))
    threshold = false_alarm_threshold(calibration, profile["calibration"]["target_fpr"]).value
    camera = list_images(out / "camera")
    flagged = scores(camera) > threshold
    good = np.array([p.stem.endswith("-good") for p in camera])
    return int(flagged[~good].sum()), int((~good).sum()), int(flagged[good].sum()), int(good.sum())


DEMO_RENDER = ("builtin:duck", 0)  # the demo's own images: never a validation render


def parse_render(text: str) -> tuple[str, int]:
    mesh, _, seed = text.rpartition("@")
    if not mesh or not seed.isdigit():
        raise argparse.ArgumentTypeError(f"--render {text}: give MESH@SEED, e.g. builtin:lego@1")
    if (mesh, int(seed)) == DEMO_RENDER:
        raise argparse.ArgumentTypeError(
            f"--render {text} is the demo's own render; validate on another seed or part."
        )
    return mesh, int(seed)


def rows_for(scored: dict, args: argparse.Namespace) -> list[dict]:
    """One row per calibration count and target: the threshold by calibrate's rule on the
    first ``count`` good views, then the rates on the defects and the camera's good views."""
    from padformer_edge.profiles.calibrate import choose_threshold

    good, bad = np.asarray(scored["good"]), np.asarray(scored["defects"])
    camera = good[max(args.calibration) :]  # the same camera views for every count
    rows = []
    for count, target in [(c, t) for c in args.calibration for t in args.target_fpr]:
        threshold = choose_threshold(good[:count], target, "quantile").value
        rows.append({
            "calibration": count,
            "target_fpr": target,
            "threshold": threshold,
            "flagged": int((bad > threshold).sum()),
            "defects": int(bad.size),
            "false_alarms": int((camera > threshold).sum()),
            "camera_good": int(camera.size),
            "auroc": image_auroc([False] * camera.size + [True] * bad.size, [*camera, *bad]),
            # the demo's extra cost of these settings: profile, calibration, camera images
            "cpu_s": scored["create_cpu_s"] + scored["cpu_s_per_image"] * (count + 15),
        })  # fmt: skip
    return rows


def picture(out: Path, path: Path) -> str:
    """Write what the line saw of the demo's first defective part that was flagged (else
    its first defect) into ``path``: the camera's frame with the part's box the daemon
    stored, beside the daemon's own heatmap at that box. Returns the frame's file name."""
    import cv2
    import numpy as np

    from padformer_edge.store.engine import open_engine
    from padformer_edge.store.history import Filters, list_inspections

    engine = open_engine(str(out / "results.sqlite3"), read_only=True)
    try:
        rows = list_inspections(engine, Filters(), limit=1000)
    finally:
        engine.dispose()
    defects = sorted(
        (r for r in rows if not Path(r.source_path).stem.endswith("-good") and r.part_box),
        key=lambda r: (not r.is_anomaly, r.id),
    )
    if not defects:
        raise SystemExit("the demo stored no defective part with a box; nothing to show.")
    row = defects[0]
    frame = cv2.imread(row.source_path)
    heatmap = cv2.imread(row.heatmap_path)
    x0, y0, x1, y1 = (int(v) for v in row.part_box.split(","))
    scale = heatmap.shape[1] / frame.shape[1]  # the overlay is stored at a screen's size
    part = heatmap[round(y0 * scale) : round(y1 * scale), round(x0 * scale) : round(x1 * scale)]
    height = 480
    shown = cv2.resize(frame, (round(frame.shape[1] * height / frame.shape[0]), height),
                       interpolation=cv2.INTER_AREA)  # fmt: skip
    factor = height / frame.shape[0]
    corner = (round(x0 * factor), round(y0 * factor))
    cv2.rectangle(shown, corner, (round(x1 * factor), round(y1 * factor)), (0, 255, 255), 2)
    part = cv2.resize(part, (height, height), interpolation=cv2.INTER_LINEAR)
    gap = np.full((height, 8, 3), 255, np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(path), np.hstack([shown, gap, part]), [cv2.IMWRITE_JPEG_QUALITY, 85]):
        raise SystemExit(f"could not write {path}")
    return Path(row.source_path).name
