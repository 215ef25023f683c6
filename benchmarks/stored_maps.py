"""The real daemon with a detector that costs nothing: its host side alone, measured.

``daemon_throughput.py --stored-maps`` starts the daemon through this file::

    python benchmarks/stored_maps.py STORE.npz [--profile-out FILE] -- --log-format json \
        watch --config daemon.yaml

which runs ``padformer-edge``'s own command line in this process after replacing one
thing: ``Profile.build_detector`` returns a ``StoredMapDetector``, which answers each
image with the real detection the benchmark made of that same image beforehand (with the
profile's real detector) and stored in ``STORE``. The daemon then does everything it does
on a line (intake, reading and hashing the files, decoding, heatmaps, the store, alerts,
drift, logging) except detecting, so its CPU per image is the host side's.

A benchmark's tool, never a product setting: no config key, option or environment
variable of the product reaches it; only a process started through this file has it.

``--profile-out`` profiles every thread of the daemon with cProfile on each thread's own
CPU clock (``time.thread_time``: waits cost nothing) and writes the merged statistics to
FILE when the command returns (the daemon's clean stop on SIGTERM). The main thread is
profiled from the moment it starts supervising (just before READY), so start-up (imports,
migrations) stays out of the profile as it stays out of the measured CPU.
"""

from __future__ import annotations

import cProfile
import functools
import hashlib
import pstats
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from padformer_edge.detect.detection import (
    Detection,
    GroupedDetection,
    InspectionDetector,
    call_timings,
)

SAMPLES_PER_SIDE = 32


@functools.lru_cache(maxsize=16)
def _grid(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The 32 x 32 grid's indices for a picture of this size, made once per size: the
    detector that costs nothing should not build them again for every image."""
    rows = np.linspace(0, height - 1, SAMPLES_PER_SIDE).astype(np.intp)
    cols = np.linspace(0, width - 1, SAMPLES_PER_SIDE).astype(np.intp)
    return np.ix_(rows, cols)


def fingerprint(image: np.ndarray) -> str:
    """A key for a decoded image from its shape and a 32 x 32 grid of its pixels: cheap
    enough (about a thousand pixels read) to add nothing to the host side it measures,
    and distinct for the benchmark's images, which differ everywhere."""
    height, width = image.shape[:2]
    sample = np.ascontiguousarray(image[_grid(height, width)])
    return f"{height}x{width}-" + hashlib.blake2b(sample.tobytes(), digest_size=12).hexdigest()


def save_store(path: Path, pairs: Iterable[tuple[np.ndarray, Detection]]) -> int:
    """Store each image's detection (score and map) under its fingerprint; returns how
    many distinct images were stored."""
    arrays: dict[str, np.ndarray] = {}
    for image, detection in pairs:
        key = fingerprint(image)
        arrays[f"map-{key}"] = detection.anomaly_map.astype(np.float32, copy=False)
        arrays[f"score-{key}"] = np.float64(detection.score)
    np.savez(path, **arrays)
    return len(arrays) // 2


def load_store(path: Path) -> dict[str, tuple[float, np.ndarray]]:
    """Fingerprint -> (score, map), every map read into memory now (before the daemon is
    ready), so answering costs nothing later."""
    with np.load(path) as stored:
        keys = [name.removeprefix("map-") for name in stored.files if name.startswith("map-")]
        return {key: (float(stored[f"score-{key}"]), stored[f"map-{key}"]) for key in keys}


class StoredMapDetector(GroupedDetection):
    """What the daemon's worker needs of a detector (``detect``, ``max_batch``,
    ``device``), answered from the stored detections at no cost."""

    def __init__(self, stored: dict[str, tuple[float, np.ndarray]], max_batch: int) -> None:
        self.stored = stored
        self.max_batch = max_batch
        self.images_per_call = max_batch
        self.device = "cpu"  # a plain string: the GPU gauges follow no device

    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]:
        found = []
        for image in images:
            key = fingerprint(image)
            if key not in self.stored:
                raise KeyError(f"no stored detection for image {key}: the store is of other images")
            score, anomaly_map = self.stored[key]
            found.append(Detection(score, anomaly_map, [], [], call_timings(0.0, 0.0, 0.0)))
        return found


def use_stored_maps(store: Path) -> None:
    """Make every profile this process opens build a ``StoredMapDetector`` on ``store``;
    a framed profile's finds the part in each frame first as the product's does (the
    store then holds the detections of the part crops)."""
    from padformer_edge.profiles.profile import Profile

    stored = load_store(store)

    def build_detector(
        self: Profile, device: str | None = None, runtime: str | None = None, **_: object
    ) -> InspectionDetector:
        detector = StoredMapDetector(stored, self.detection.max_batch)
        framing = self.framing()
        if framing is None:
            return detector
        from padformer_edge.detect.framed import FramedDetector

        return FramedDetector(detector, framing)  # each frame's part found, as on a line

    Profile.build_detector = build_detector  # type: ignore[method-assign,assignment]


class ThreadProfiles:
    """One cProfile per thread on the thread's CPU clock, merged at the end: cProfile
    on Python 3.11 sees only the thread that enabled it, and the daemon's work happens
    in its worker, finisher, decoding and intake threads."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self.lock = threading.Lock()
        original = threading.Thread.run
        owner = self

        def run(thread: threading.Thread) -> None:
            profile = owner.new()
            profile.enable()
            try:
                original(thread)
            finally:
                profile.disable()

        threading.Thread.run = run  # type: ignore[method-assign]

    def new(self) -> cProfile.Profile:
        profile = cProfile.Profile(time.thread_time)
        with self.lock:
            self.profiles.append(profile)
        return profile

    def dump(self, path: Path) -> None:
        """The merged statistics of every thread's profile so far, written to ``path``."""
        with self.lock:
            profiles = list(self.profiles)
        merged = pstats.Stats(profiles[0])
        for profile in profiles[1:]:
            merged.add(profile)
        merged.dump_stats(path)


def main(argv: list[str]) -> None:
    if "--" not in argv or not argv or argv[0].startswith("-"):
        raise SystemExit(__doc__.split("\n\n")[1])
    split = argv.index("--")
    own, command = argv[:split], argv[split + 1 :]
    store, profile_out = Path(own[0]), None
    if own[1:2] == ["--profile-out"]:
        profile_out = Path(own[2])
    use_stored_maps(store)
    threads = ThreadProfiles() if profile_out is not None else None
    if threads is not None:
        profile_supervision(threads)
    from padformer_edge.cli.entry import main as run_command

    sys.argv = ["padformer-edge", *command]
    try:
        run_command()
    finally:
        if threads is not None and profile_out is not None:
            threads.dump(profile_out)


def profile_supervision(threads: ThreadProfiles) -> None:
    """Profile the daemon's main thread while it supervises (after start-up)."""
    from padformer_edge.daemon.service import Daemon

    original = Daemon.supervise

    def supervise(daemon: Daemon) -> int:
        profile = threads.new()
        profile.enable()
        try:
            return original(daemon)
        finally:
            profile.disable()

    Daemon.supervise = supervise  # type: ignore[method-assign]


if __name__ == "__main__":
    main(sys.argv[1:])
