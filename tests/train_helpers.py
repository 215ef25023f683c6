"""Small image trees on disk, written with OpenCV, for the training tests."""

from __future__ import annotations

import csv
import signal
import subprocess
import time
from pathlib import Path

import cv2
import numpy as np

from padformer_edge_training.config import TrainConfig


def object_image(seed: int, size: int = 64, hue: int = 0) -> np.ndarray:
    """A BGR picture of a few coloured shapes on a grey table, varied by ``seed``."""
    rng = np.random.default_rng(seed)
    image = np.full((size, size, 3), 90, np.uint8)
    base = np.array([(hue * 70) % 255, 160, 255 - (hue * 50) % 255])
    for _ in range(5):
        centre = tuple(int(v) for v in rng.integers(size // 6, size - size // 6, 2))
        radius = int(rng.integers(size // 12, size // 4))
        colour = tuple(int(c) for c in np.clip(base + rng.integers(-60, 60, 3), 0, 255))
        cv2.circle(image, centre, radius, colour, -1)
    start = tuple(int(v) for v in rng.integers(0, size, 2))
    end = tuple(int(v) for v in rng.integers(0, size, 2))
    cv2.line(image, start, end, (20, 20, 20), max(1, size // 32))
    return image


def tiny_edge_recipe(
    model: dict, loss: dict | None = None, cross_view_epochs: int = 1
) -> TrainConfig:
    """A recipe for a tiny edge model on an ``mvtec_like_tree``: one within-view epoch,
    ``cross_view_epochs`` cross-view ones, 2 references, batch 4, no perceptual term."""
    return TrainConfig.model_validate(
        {
            "model": {"preset": "edge", **model},
            "data": {"layout": "mvtec", "num_refs": 2, "num_workers": 0},
            "loss": {"perceptual": "none", "feature_weight": 1.0, **(loss or {})},
            "optim": {"batch_size": 4, "warmup_steps": 1, "lr": 1e-3},
            "stages": {"within_view": {"epochs": 1}, "cross_view": {"epochs": cross_view_epochs}},
        }
    )


def write(path: Path, image: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), image), path
    return path


def mvtec_like_tree(
    root: Path, classes: dict[str, int], padded: bool, size: int = 64, with_test: bool = True
) -> Path:
    """CLASS/train/good + test/{good,Stains} + ground_truth/Stains; names padded or bare."""
    for hue, (name, count) in enumerate(classes.items()):
        for i in range(count):
            stem = f"{i:03d}" if padded else str(i)
            write(
                root / name / "train" / "good" / f"{stem}.png",
                object_image(hue * 1000 + i, size, hue),
            )
        if with_test:
            for i in range(2):
                stem = f"{i:03d}" if padded else str(i)
                write(
                    root / name / "test" / "good" / f"{stem}.png", object_image(500 + i, size, hue)
                )
                write(
                    root / name / "test" / "Stains" / f"{stem}.png",
                    object_image(600 + i, size, hue),
                )
                mask = np.zeros((size, size), np.uint8)
                mask[10:20, 10:20] = 255
                mask_name = f"{stem}_mask.png" if padded else f"{stem}.png"
                write(root / name / "ground_truth" / "Stains" / mask_name, mask)
    return root


def visa_like_tree(root: Path) -> Path:
    """Two VisA-style classes and split_csv/1cls.csv."""
    rows = []
    for hue, name in enumerate(("candle", "pcb1")):
        for i in range(3):
            rel = f"{name}/Data/Images/Normal/{i:04d}.JPG"
            write(root / rel, object_image(hue * 100 + i, 64, hue))
            rows.append([name, "train", "normal", rel, ""])
        rel = f"{name}/Data/Images/Anomaly/0000.JPG"
        mask_rel = f"{name}/Data/Masks/Anomaly/0000.png"
        write(root / rel, object_image(hue * 100 + 50, 64, hue))
        write(root / mask_rel, np.zeros((64, 64), np.uint8))
        rows.append([name, "test", "anomaly", rel, mask_rel])
    (root / "split_csv").mkdir(parents=True, exist_ok=True)
    with (root / "split_csv" / "1cls.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["object", "split", "label", "image", "mask"])
        writer.writerows(rows)
    return root


def signal_once_resumable(
    cmd: list[str], env: dict[str, str], run: Path, sig: signal.Signals, timeout: float
) -> tuple[int, str, str]:
    """Start a training ``cmd``, send ``sig`` once ``run`` holds its first resume point
    (so the stop lands mid-run), and return its exit status, stdout and stderr."""
    with subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        deadline = time.monotonic() + timeout
        while not (run / "last.resume.pt").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=timeout)
    return proc.returncode, stdout, stderr


def refused_train_command(argv: list[str], monkeypatch, capsys) -> str:
    """Run `padformer-edge train ARGV` in this process, as a user would type it, and return
    its stderr after checking the command refused it as a user's mistake should be: exit
    status 2, one line, no traceback, and the SIGTERM handler it installs put back."""
    import signal
    import sys

    import pytest
    import structlog

    from padformer_edge.cli.app import main

    monkeypatch.setattr(sys, "argv", ["padformer-edge", "train", *argv])
    sigterm_before = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        structlog.reset_defaults()  # main() bound logging to capsys's stream, closed after
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert signal.getsignal(signal.SIGTERM) is sigterm_before  # the command put it back
    return err
