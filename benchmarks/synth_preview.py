"""Render the docs picture of `padformer-edge synth`: per class, three training views,
then each defect kind (all of them, the newer opt-in ones too) next to its ground-truth
mask. The images come from a real
``render_dataset`` run, so the picture shows exactly what the command writes.

    python benchmarks/synth_preview.py [--out docs/synth_preview.png] [--size 128]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from padformer_edge.reporting.log import configure_logging  # noqa: E402
from padformer_edge_training.synth import ViewCounts, render_dataset  # noqa: E402
from padformer_edge_training.synth.kinds import ALL_KINDS  # noqa: E402

CLASSES = ("duck", "soccerball", "mug", "lego", "r2d2")
TRAIN_SHOWN = 3


def _label(text: str, width: int, height: int = 22) -> np.ndarray:
    strip = np.full((height, width, 3), 255, np.uint8)
    cv2.putText(strip, text, (4, height - 7), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1,
                cv2.LINE_AA)  # fmt: skip
    return strip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "synth_preview.png")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configure_logging("json", "WARNING")
    counts = ViewCounts(train=TRAIN_SHOWN, test_per_defect=1, test_good=1)
    gap = np.full((args.size, 4, 3), 255, np.uint8)
    with tempfile.TemporaryDirectory() as scratch:
        root = render_dataset([f"builtin:{c}" for c in CLASSES], Path(scratch) / "preview",
                              counts, size=args.size, seed=args.seed,
                              defects=ALL_KINDS)  # fmt: skip
        rows = []
        for name in CLASSES:
            tiles = [cv2.imread(str(root / name / "train" / "good" / f"{n}.png"))
                     for n in range(TRAIN_SHOWN)]  # fmt: skip
            for kind in ALL_KINDS:
                mask = cv2.imread(str(root / name / "ground_truth" / kind / "0_mask.png"))
                tiles += [gap, cv2.imread(str(root / name / "test" / kind / "0.png")), mask]
            rows.append(np.hstack(tiles))
    width = args.size
    header = [_label("train (good)", width * TRAIN_SHOWN)]
    for kind in ALL_KINDS:
        header += [_label("", 4)[:, :4], _label(kind, width), _label(f"{kind} mask", width)]
    grid = np.vstack([np.hstack(header), *rows])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(args.out), grid)
    print(f"wrote {args.out} ({grid.shape[1]}x{grid.shape[0]})")


if __name__ == "__main__":
    main()
