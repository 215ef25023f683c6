"""The daemon's host side per image: ``daemon_throughput.py --stored-maps``.

The real daemon (``watch``, a subprocess) inspects bursts of camera images with a detector
that costs nothing (``stored_maps.py``: the real detections of the same images, made
beforehand by the profile's real detector and stored), so all the CPU it spends is the
host side's: intake (finding, hashing and queueing files), reading and decoding, heatmaps,
the store, alerts, drift and logging. Three image sets, each in a daemon of its own: the
224-px PNG renders every earlier benchmark used, and 5-megapixel camera images (2448 x
2048, a smooth scene with fine texture and sensor noise) as JPEG (quality 90) and as PNG.
Each set is ten distinct images cycled over the burst, the threshold set between the two
highest stored scores, so one image in ten is an anomaly (a 10 % alert rate); the profile's
calibration keeps the ten scores and image statistics as a real one does, so the drift
watch runs its tests.

CPU is read from /proc over the daemon and every process below it, from READY until the
last row is committed. With ``--profile`` each set runs a second time with every thread
of the daemon profiled by cProfile on its own CPU clock; the profile's share of each stage
(by the functions that do it) is reported beside the unprofiled figures, since cProfile
itself slows the Python it watches.
"""

from __future__ import annotations

import argparse
import pstats
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table
from benchmarks.daemon_run import STABLE_MS, encoded, make_profile, run_daemon

DISTINCT = 10
"""Distinct images per set: the burst cycles through them; one scores above the threshold."""
CAMERA_SIZE = (2048, 2448)  # height, width: a 5-megapixel machine-vision sensor
STORED_MAPS = Path(__file__).resolve().with_name("stored_maps.py")


@dataclass(frozen=True)
class ImageSet:
    key: str
    name: str
    height: int
    width: int
    suffix: str
    framed: bool = False  # camera frames of a part on the belt, read by a framed profile


SETS = (
    ImageSet("224-png", "224 px PNG", 224, 224, ".png"),
    ImageSet("5mp-jpeg", "5 MP JPEG", *CAMERA_SIZE, ".jpg"),
    ImageSet("5mp-png", "5 MP PNG", *CAMERA_SIZE, ".png"),
    ImageSet("5mp-framed", "5 MP JPEG frame, part located", *CAMERA_SIZE, ".jpg", True),
)
SET_KEYS = tuple(image_set.key for image_set in SETS)

ARRIVALS = {"write": "written in place", "rename": "renamed into place"}
"""How the benchmark's camera writes each file (``--arrivals``), as the table names it."""

STAGES: dict[str, tuple[str, ...]] = {
    "intake": ("intake.py:step", "intake.py:on_any_event"),
    "claim and backlog": ("queue.py:claim_batch", "worker.py:backlog"),
    "read and decode": ("worker.py:read_decode", "worker.py:load"),
    "find the part": ("framed.py:detect",),  # a framed profile's: locate, crop, map back
    "heatmap": ("heatmap.py:write_heatmap",),
    "image statistics": ("worker.py:image_statistics",),
    "commit (store, alerts, drift, log)": ("worker.py:commit_all",),
}
"""Each stage by the functions that do it (``file:function`` of cProfile's keys, any
line); their cumulative CPU, summed over threads, is the stage's."""


def parse_variant(text: str) -> dict[str, object]:
    """``--worker``'s ``host_threads=4,heatmap_format=png`` as worker settings (each
    value read as YAML reads it, so the daemon's own validation judges it)."""
    import yaml

    settings: dict[str, object] = {}
    for part in filter(None, text.split(",")):
        key, equals, value = part.partition("=")
        if not equals or not key.strip():
            raise SystemExit(f"--worker {text}: write KEY=VALUE pairs separated by commas.")
        settings[key.strip()] = yaml.safe_load(value)
    return settings


def variant_name(settings: dict[str, object]) -> str:
    """How the table names a run's worker settings (``defaults`` for none)."""
    if not settings:
        return "defaults"
    return ", ".join(f"{key}={str(value).lower()}" for key, value in settings.items())


def camera_photo(height: int, width: int, seed: int) -> np.ndarray:
    """An RGB camera picture: a smooth scene, texture at 16-pixel scale and sensor noise
    (sigma 3 levels), so PNG and JPEG cost what they cost on a real camera's images,
    which a smooth render alone would not (PNG compresses it to almost nothing)."""
    rng = np.random.default_rng(seed)
    scene = cv2.resize(rng.uniform(0, 255, (6, 6, 3)).astype(np.float32), (width, height),
                       interpolation=cv2.INTER_CUBIC)  # fmt: skip
    texture = rng.uniform(-20, 20, (max(1, height // 16), max(1, width // 16), 3))
    scene += cv2.resize(texture.astype(np.float32), (width, height),
                        interpolation=cv2.INTER_LINEAR)  # fmt: skip
    scene += rng.normal(0.0, 3.0, (height, width, 3)).astype(np.float32)
    return scene.clip(0, 255).astype(np.uint8)


FRAMED_PART_SCALE = (0.15, 0.3)
"""The framed set's part, as a share of the frame's shorter side: issue 63's CPU target's
parts (up to 0.3 of the frame's side)."""
FRAMED_REFERENCES = 4


def framed_set(height: int, width: int) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """(``DISTINCT`` camera frames, ``FRAMED_REFERENCES`` reference frames, the empty-belt
    photo): a textured part (``camera_photo`` inside an ellipse) at a random size, place
    and light on the synth's travelling belt, with its sensor noise, as ``synth --frame``
    makes frames; the framed profile finds the part in each against the photo."""
    from padformer_edge_training.synth.frames import Framer, FrameSpec

    spec = FrameSpec(width, height, FRAMED_PART_SCALE, "belt", light=0.1, colour=6, noise=2)
    shot = Framer(spec, 7, (0, 0, 0))
    rng = np.random.default_rng(2100)

    def frame(index: int) -> np.ndarray:
        placement = shot.place(rng)
        side = placement.tile
        covered = np.zeros((side, side), np.uint8)
        cv2.ellipse(covered, (side // 2, side // 2), (side * 9 // 20, side // 3), 30, 0, 360,
                    1, -1)  # fmt: skip
        part = camera_photo(side, side, 3000 + index)
        return shot.compose(placement, rng, part, covered > 0)

    frames = [frame(i) for i in range(DISTINCT + FRAMED_REFERENCES)]
    return frames[:DISTINCT], frames[DISTINCT:], shot.belt_photo()


WAITS = (
    "{method 'acquire' of '_thread.lock' objects}",
    "{method 'acquire' of '_thread.RLock' objects}",
)
"""Lock waits, left out of the profile's CPU: on this machine the thread clock charged a
thread's waits (the reloader's two-second sleeps) to them, about a third of the
profile, where the rest of the profile equals the run's CPU read from /proc."""


def is_wait(key: tuple[str, int, str]) -> bool:
    return pstats.func_std_string(key) in WAITS


def stage_seconds(stats: pstats.Stats) -> tuple[dict[str, float], float]:
    """(CPU seconds per stage, all CPU seconds the profile saw, lock waits left out),
    from merged statistics."""
    table = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for key, entry in table.items() if not is_wait(key))  # own times
    stages = dict.fromkeys(STAGES, 0.0)
    for (filename, _, function), entry in table.items():
        key = f"{Path(filename).name}:{function}"
        for stage, names in STAGES.items():
            if key in names:
                stages[stage] += entry[3]  # cumulative: what it called included
    return stages, total


def portable(name: str) -> str:
    """A function's cProfile name without this machine's folders: from the package or
    the site-packages folder on, or the file's name for the standard library."""
    for marker in ("site-packages/", "padformer_edge/"):
        if marker in name:
            start = name.index(marker) + (len(marker) if marker == "site-packages/" else 0)
            return name[start:]
    return name if name.startswith("{") else Path(name.split(":")[0]).name + name[name.find(":") :]


def top_functions(stats: pstats.Stats, count: int) -> list[tuple[str, float]]:
    """The ``count`` functions with the most CPU of their own (seconds), lock waits
    (``WAITS``) left out."""
    table = stats.stats  # type: ignore[attr-defined]
    working = [item for item in table.items() if not is_wait(item[0])]
    ranked = sorted(working, key=lambda item: item[1][2], reverse=True)[:count]
    return [(pstats.func_std_string(key), entry[2]) for key, entry in ranked]


def store_detections(
    profiles: Path, image_set: ImageSet, payloads: list[bytes]
) -> tuple[Path, list[float]]:
    """Detect the set's distinct images (decoded as the daemon decodes them) and the
    profile's first reference (the daemon's warm-up image) with the real detector of the
    profile under ``profiles``; store them for ``stored_maps.py``. A framed profile's
    detections are stored by part crop, where its stored-map detector looks them up.
    Returns the store and the set's scores."""
    from benchmarks.stored_maps import save_store
    from padformer_edge.daemon.camera_files import decode
    from padformer_edge.detect.framed import FramedDetector
    from padformer_edge.detect.images import read_image
    from padformer_edge.profiles.profile import load_profile

    profile = load_profile(profiles, "bench")
    detector = profile.build_detector("cpu", calibrating=True)
    images = [decode(data, image_set.suffix) for data in payloads]
    reference = read_image(profile.reference_paths[0])
    if isinstance(detector, FramedDetector):  # the inner detector reads the part's crop
        inner, crop = detector.inner, detector.framing.part
        images, reference = [crop(image)[2] for image in images], crop(reference)[2]
        detector = inner
    detections = [detector.detect([image])[0] for image in images]
    store = profiles.parent / f"stored-{image_set.key}.npz"
    pairs = [*zip(images, detections, strict=True), (reference, detector.detect([reference])[0])]
    save_store(store, pairs)
    calibrate(profiles, [d.score for d in detections], images)
    return store, [d.score for d in detections]


def calibrate(profiles: Path, scores: list[float], images: list[np.ndarray]) -> float:
    """Set the profile's threshold between the two highest scores (one image in ten
    above it) and keep the scores and image statistics as a calibration does, with that
    share as the expected false-alarm rate, so the drift watch runs and stays quiet."""
    from padformer_edge.images.image_stats import image_statistics, statistics_table
    from padformer_edge.profiles.profile import load_profile
    from padformer_edge.profiles.schema import CalibrationResult
    from padformer_edge.profiles.versions import save_profile

    profile = load_profile(profiles, "bench")
    ranked = sorted(scores)
    threshold = (ranked[-1] + ranked[-2]) / 2
    assert profile.calibration is not None
    calibration = CalibrationResult.model_validate({
        **profile.calibration.model_dump(),
        "threshold": threshold,
        "target_fpr": 1 / len(scores),
        "good_scores": ranked,
        "good_image_stats": statistics_table([image_statistics(i) for i in images]),
    })  # fmt: skip
    save_profile(profile, profile.config.model_copy(update={"calibration": calibration}))
    return threshold


def recorded(database: Path) -> tuple[float, float]:
    """(share of the done rows flagged anomalous, the largest detection time a row
    records in ms: 0 when every row was answered by the stored-map detector)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        flagged, total, slowest = conn.execute(
            "SELECT SUM(is_anomaly), COUNT(*), MAX(detect_ms) FROM inspections "
            "WHERE status = 'done'"
        ).fetchone()
    finally:
        conn.close()
    return flagged / total, slowest


def measure_set(
    args: argparse.Namespace, work: Path, image_set: ImageSet, images: int
) -> list[dict]:
    """One set: its payloads, the stored detections, a daemon run per way of arriving
    (``--arrivals``) and, for the first, a profiled one. One result per arrival. A framed
    set has a framed profile of its own (``work/framed``) on its reference frames."""
    if image_set.framed:
        frames, references, belt = framed_set(image_set.height, image_set.width)
        make_profile(work / "framed", args.preset, args.passes, 224, "cpu", None, args.metric,
                     args.model_batch, frames=(references, belt))  # fmt: skip
        profiles = work / "framed" / "profiles"
    else:
        size = (image_set.height, image_set.width)
        frames = [camera_photo(*size, 2000 + i) for i in range(DISTINCT)]
        profiles = work / "profiles"
    distinct = [encoded(frame, image_set.suffix) for frame in frames]
    store, _ = store_detections(profiles, image_set, distinct)
    payloads = [distinct[i % DISTINCT] for i in range(images)]
    results = []
    for index, arrival in enumerate(args.arrivals):
        for number, settings in enumerate(args.variants):
            profiled = args.profile and index == 0 and number == 0
            results.append(measure_arrival(
                args, work, image_set, store, distinct, payloads, arrival, profiled, settings
            ))  # fmt: skip
    return results


def run_once(
    args: argparse.Namespace, work: Path, image_set: ImageSet, store: Path,
    payloads: list[bytes], arrival: str, profiled: bool, settings: dict[str, object],
) -> tuple[float, float, list[float], float, Path, float, float]:  # fmt: skip
    """(wall s, CPU s, latencies s from each file closed or renamed, anomaly share, the
    profile's path, the largest detection ms recorded, the mean heatmap file in KiB) of
    one daemon run."""
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=work))
    prof = run_dir / "daemon.prof"
    launcher = [sys.executable, str(STORED_MAPS), str(store)]
    launcher += ["--profile-out", str(prof)] if profiled else []
    wall, cpu, latencies, *_ = run_daemon(
        run_dir, payloads, args.cameras, args.batch, args.threads, "cpu", rate=args.rate,
        max_wait_ms=args.max_wait_ms, burst_max_batch=args.burst_max_batch,
        suffix=image_set.suffix, profiles=store.parent / "profiles",  # the store's own
        launcher=[*launcher, "--"],
        arrival=arrival, worker_settings=settings,
    )  # fmt: skip
    share, detect_ms = recorded(run_dir / "results.sqlite3")
    heatmaps = [path.stat().st_size for path in (run_dir / "heatmaps").rglob("*.*")]
    return wall, cpu, latencies, share, prof, detect_ms, float(np.mean(heatmaps)) / 2**10


def measure_arrival(
    args: argparse.Namespace, work: Path, image_set: ImageSet, store: Path,
    distinct: list[bytes], payloads: list[bytes], arrival: str, profiled: bool,
    settings: dict[str, object],
) -> dict:  # fmt: skip
    """One set arriving one way under one ``--worker``: a daemon run, and a profiled one
    when asked."""
    images = len(payloads)
    wall, cpu, latencies, share, _, detect_ms, heatmap_kib = run_once(
        args, work, image_set, store, payloads, arrival, False, settings
    )
    result = {
        "set": image_set.name,
        "framed": image_set.framed,
        "width": image_set.width,
        "height": image_set.height,
        "format": image_set.suffix[1:],
        "file_mib": float(np.mean([len(p) for p in distinct])) / 2**20,
        "heatmap_kib": heatmap_kib,
        "images": images,
        "images_per_s": images / wall,
        "cpu_ms_per_image": 1000 * cpu / images,
        "anomaly_share": share,
        "detect_ms_max": detect_ms,
        "arrival": arrival,
        "worker": variant_name(settings),
        "latency_p50_ms": 1000 * float(np.percentile(latencies, 50)),
        "latency_p95_ms": 1000 * float(np.percentile(latencies, 95)),
    }
    if profiled:
        _, profiled_cpu, _, _, prof, _, _ = run_once(
            args, work, image_set, store, payloads, arrival, True, settings
        )
        if args.profile_dir:
            args.profile_dir.mkdir(parents=True, exist_ok=True)
            kept = args.profile_dir / f"{image_set.suffix[1:]}-{image_set.width}.prof"
            shutil.copyfile(prof, kept)
        stats = pstats.Stats(str(prof))
        stages, total = stage_seconds(stats)
        result["profiled_cpu_ms_per_image"] = 1000 * profiled_cpu / images
        result["profile_seconds"] = total
        result["stage_share"] = {name: seconds / total for name, seconds in stages.items()}
        result["top_functions"] = [
            (name, seconds / total) for name, seconds in top_functions(stats, args.top)
        ]
    return result


def measure(args: argparse.Namespace) -> dict:
    """Every set in ``SETS`` with the profile ``daemon_run.make_profile`` makes."""
    began = time.process_time()
    with tempfile.TemporaryDirectory(prefix="host-side-") as tmp:
        work = Path(tmp)
        make_profile(work, args.preset, args.passes, 224, "cpu", None, args.metric,
                     args.model_batch)  # fmt: skip
        sets = []
        for image_set in (s for s in SETS if s.key in args.sets):
            count = args.images if image_set.width <= 224 else args.camera_images
            sets.extend(measure_set(args, work, image_set, count))
    return {
        "command": "python " + shlex.join(sys.argv),
        "preset": args.preset,
        "cameras": args.cameras,
        "threads": args.threads,
        "batch": args.batch,
        "burst_max_batch": args.burst_max_batch,
        "max_wait_ms": args.max_wait_ms,
        "passes": args.passes,
        "metric": args.metric,
        "rate": args.rate,
        "stable_ms": STABLE_MS,
        "profiled": args.profile,
        "sets": sets,
        "benchmark_cpu_s": time.process_time() - began,
    }


def profile_coverage(result: dict) -> float:
    """The profile's CPU (lock waits left out) over the profiled run's CPU read from
    /proc: near 1 when the profile accounts for the daemon's CPU, lock waits included in
    neither."""
    measured = result["profiled_cpu_ms_per_image"] * result["images"] / 1000
    return result["profile_seconds"] / measured


def render(run: dict) -> str:
    """The docs block: one row per image set; with a profile, each profiled set's stage
    shares and its functions with the most CPU of their own."""
    every = run["sets"]
    rate = run.get("rate", 0.0)
    offered = f"steady {rate:g}/s" if rate else "burst"
    headers = ["images", "file MiB", "worker", f"images/s ({offered})",
               "host CPU ms per image", "heatmap KiB", "alerts", "arrival", "p50 ms",
               "p95 ms"]  # fmt: skip
    rows = [
        [f"{s['set']} ({s['width']}x{s['height']})", s["images"], s["file_mib"],
         s.get("worker", "defaults"), s["images_per_s"], s["cpu_ms_per_image"],
         s.get("heatmap_kib", "-"),
         f"{s['anomaly_share']:.0%}", ARRIVALS[s.get("arrival", "write")],
         s.get("latency_p50_ms", "-"), s.get("latency_p95_ms", "-")]
        for s in every
    ]  # fmt: skip
    parts = [markdown_table(["set", *headers], rows)]
    sets = [s for s in every if "stage_share" in s]
    if run["profiled"]:
        stages = list(STAGES)
        share_rows = [
            [s["set"], *[f"{s['stage_share'][name]:.0%}" for name in stages],
             f"{1 - sum(s['stage_share'].values()):.0%}", f"{profile_coverage(s):.2f}"]
            for s in sets
        ]  # fmt: skip
        headers = ["share of profiled CPU", *stages, "other", "profile / CPU"]
        parts.append(markdown_table(headers, share_rows))
        ranks = max(len(s["top_functions"]) for s in sets)
        function_rows = [
            [rank + 1, *[
                f"`{portable(s['top_functions'][rank][0])}` {s['top_functions'][rank][1]:.1%}"
                if rank < len(s["top_functions"]) else "-"
                for s in sets
            ]]
            for rank in range(ranks)
        ]  # fmt: skip
        headers = ["most CPU of its own", *[s["set"] for s in sets]]
        parts.append(markdown_table(headers, function_rows))
    growth = f", growing to {run['burst_max_batch']}" if run["burst_max_batch"] else ""
    parts.append(
        f"The real daemon with the stored-map detector (`stored_maps.py`: detection costs "
        f"nothing; the maps stored were made by the {run['preset']} preset's detector, "
        f"random weights, metric {run['metric']}, {run['passes']} passes), "
        f"{run['cameras']} camera folders, worker batch {run['batch']}{growth}, "
        f"max_wait_ms {run['max_wait_ms']}; each set "
        f"{'offered at ' + offered if rate else 'a burst'} of its ten distinct images "
        "cycled, one of them above the threshold. Worker: the daemon's `worker` settings "
        "the run changed from their defaults (`--worker`). Host CPU: the "
        "daemon and every process below it, from READY to the last row committed, per "
        "image. Latency: from each file closed (written in place, which intake takes after "
        f"stable_ms {run.get('stable_ms', '')}) or renamed into place (taken at once) "
        "to its row committed. "
        + (
            "The framed set: 2448x2048 frames of a textured part "
            f"{FRAMED_PART_SCALE[0]:g}-{FRAMED_PART_SCALE[1]:g} of the frame's shorter side "
            "on the synth's belt (light, colour shift, sensor noise), read by a profile made "
            "with the belt photo (`--background`): finding the part, cutting, relighting "
            "and painting its crop and putting its map back in the frame are the product's "
            "own, only the crop's scoring is stored. "
            if any(s.get("framed") for s in every)
            else ""
        )
        + (
            "Shares: the same burst again under cProfile on each thread's CPU clock, each "
            "stage by the functions that do it (cumulative, so a stage includes what it "
            "calls); 'other' is the rest (the worker's loop, threads, SQLAlchemy sessions "
            "outside the stages). Lock waits, which the thread clock charged here, are left "
            "out; 'profile / CPU' compares what remains with the profiled run's CPU read "
            "from /proc. "
            if run["profiled"]
            else ""
        )
    )
    return "\n\n".join(parts).rstrip()
