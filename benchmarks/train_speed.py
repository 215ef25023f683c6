"""Training throughput (samples/s) per stage and model preset, through the real trainer.

For each preset and stage, a one-stage recipe runs ``--steps`` optimizer steps on a
generated dataset (drawn shapes written as PNG and decoded by the loader, so decoding,
warping and reference reading are included). The first step is excluded (allocation and
worker start-up). Run with ``--write-docs`` to refresh the docs table; the CPU is
shared on the build machine, so compare rows measured in the same run. ``--threads``
(default 1) is the recipe key ``cpu_threads``.

    python benchmarks/train_speed.py [--presets small paper] [--steps 6] [--write-docs]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.model.config import PRESETS
from padformer_edge.reporting.log import configure_logging
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.progress import Reporter, StepInfo
from padformer_edge_training.trainer import run_training

BATCH = {"tiny": 8, "small": 8, "paper": 2}  # per process; paper's ViT-B is heavy on a CPU


class StepClock(Reporter):
    """Records when each optimizer step finished."""

    def __init__(self) -> None:
        super().__init__(log_every=10**9)
        self.times: list[float] = []

    def step(self, info: StepInfo) -> None:
        self.times.append(time.perf_counter())


def write_dataset(root: Path, images: int, size: int) -> Path:
    """Two classes of drawn shapes, enough images for the steps asked for."""
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        folder = root / name / "train" / "good"
        folder.mkdir(parents=True)
        for i in range(images // 2):
            image = np.full((size, size, 3), 90, np.uint8)
            for _ in range(6):
                centre = tuple(int(v) for v in rng.integers(0, size, 2))
                colour = tuple(int(c) for c in rng.integers(0, 255, 3))
                cv2.circle(image, centre, int(rng.integers(size // 16, size // 4)), colour, -1)
            cv2.imwrite(str(folder / f"{i}.png"), image)
    return root


def measure(preset: str, stage: str, steps: int, device: str, workers: int, num_refs: int) -> dict:
    batch = BATCH.get(preset, 4)
    with tempfile.TemporaryDirectory() as tmp:
        images = max(batch * (steps + 1), 2 * (num_refs + 1))
        data = write_dataset(Path(tmp) / "data", images + images % 2, PRESETS[preset].img_size)
        epochs = {"within_view": 0, "cross_view": 0, stage: 1}
        config = TrainConfig.model_validate(
            {
                "model": {"preset": preset},
                "data": {"num_refs": num_refs, "num_workers": workers},
                "optim": {"batch_size": batch, "warmup_steps": 1},
                "stages": {name: {"epochs": n} for name, n in epochs.items()},
                "checkpoint": {"every_steps": 10**9},
            }
        )
        clock = StepClock()
        run_training(config, data, Path(tmp) / "out", device=device, reporter=clock)
    timed = len(clock.times) - 1
    seconds = clock.times[-1] - clock.times[0]
    return {
        "preset": preset,
        "stage": stage,
        "device": device,
        "batch": batch,
        "num_refs": num_refs,
        "steps": timed,
        "samples_per_s": batch * timed / seconds,
        "s_per_step": seconds / timed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["small", "paper"])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--num-refs", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1)
    # One thread by default: on a CPU shared with other jobs, OpenMP threads that spin-wait
    # on each other make two threads several times slower than one, and noisier.
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the model")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    configure_logging("json", "WARNING")
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = [
        measure(preset, stage, args.steps, device, args.workers, args.num_refs)
        for device in devices
        for preset in args.presets
        for stage in ("within_view", "cross_view")
    ]
    headers = ["preset", "stage", "device", "batch", "N refs", "samples/s", "s/step"]
    keys = ["preset", "stage", "device", "batch", "num_refs", "samples_per_s", "s_per_step"]
    table = markdown_table(headers, [[row[k] for k in keys] for row in rows])
    print(table)
    print_json_line("train_speed", {"rows": rows, "threads": args.threads})
    if args.write_docs:
        update_docs_section("train-speed", table)


if __name__ == "__main__":
    main()
