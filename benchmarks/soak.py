"""Soak: the real daemon inspecting thousands of images at a steady rate, memory sampled.

For each ``--runtime`` the daemon (``padformer-edge watch``, a subprocess) watches one
camera folder of a temporary state folder with a fresh SQLite history. A feeder thread
writes copies of the part's good and defective images into the camera folder, one every
``1 / --rate`` seconds, each under a name of its own, as a camera would; a sampler reads
the daemon's resident memory (VmRSS) and its peak (VmHWM) from /proc every
``--sample-s`` seconds together with the number of rows finished. When every image has
a result the daemon is stopped and the history is checked: every image written has
exactly one row, and that row is ``done`` (nothing lost, nothing inspected twice).

Reported per runtime: images, duration, CPU seconds per image, the largest backlog, peak
RSS, RSS once ``--warmup-images`` were finished and at the end, and the least-squares
slope of RSS against images finished after warm-up in KiB per image with its 95%
confidence interval (the samples are treated as independent, which a staircase of
allocator growth is not, so a long run is what makes the bound meaningful). The target
is a slope under 1 KiB per image.

The part is the demo's by default: ``padformer-edge demo`` is run once into ``--demo``
(or an existing demo folder there is reused) and its calibrated profile (the shipped
model, 12 references) and its rendered test images are used. ``--profile DIR`` with
``--images-dir DIR`` soaks any other profile folder. For a runtime other than the
profile's own, the profile is converted first (onnxruntime: ``profile export``).

    python benchmarks/soak.py --runtime onnxruntime --runtime torch --images 10000 \\
        --rate 0.5 --warmup-images 200 --write-docs
"""

from __future__ import annotations

import argparse
import itertools
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from benchmarks.process_stats import cpu_seconds, status_kib
from padformer_edge.devices.runtimes import RUNTIMES
from tests.daemon.harness import DaemonProcess, Site, make_profile, rows, wait_for, write_image
from tests.detect_images import product_image

REPO = Path(__file__).resolve().parent.parent
DEMO_PROFILE = "demo-part"
PROFILE_FILE = "profile.yaml"
TARGET_KIB_PER_IMAGE = 1.0
CONVERT = {
    "onnxruntime": ["profile", "export", "--runtime", "onnxruntime"],
    "openvino": ["profile", "export", "--runtime", "openvino"],
}
"""The CLI command (``NAME --root ROOT`` appended) that switches a torch profile to a
runtime. A runtime missing here is soaked only with a profile already made for it."""
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


@dataclass
class Sample:
    seconds: float
    written: int
    finished: int
    rss_kib: int
    hwm_kib: int


@dataclass
class SoakRun:
    runtime: str
    images: int
    seconds: float = 0.0
    cpu_s: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    not_done: int = 0
    trims: list[dict] = field(default_factory=list)


def cli(*args: str, threads: int = 1) -> None:
    """``python -m padformer_edge ARGS`` in a fresh process; its output only on failure."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-m", "padformer_edge", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"padformer-edge {' '.join(args)} failed:\n{done.stdout}{done.stderr}")


def demo_part(folder: Path) -> tuple[Path, list[Path]]:
    """The demo's profile folder and its rendered test images (good and defective); runs
    ``padformer-edge demo`` into ``folder`` first unless a finished demo is there."""
    profile = folder / "profiles" / DEMO_PROFILE
    if not (profile / PROFILE_FILE).exists():
        print(f"making the demo part in {folder} (padformer-edge demo, a few minutes) ...")
        cli("demo", "--out", str(folder))
    images = sorted(p for p in (folder / "data").glob("*/test/*/*") if p.suffix in IMAGE_SUFFIXES)
    if not images:
        raise SystemExit(f"no rendered test images under {folder / 'data'}; remove {folder}.")
    return profile, images


def tiny_part(folder: Path) -> tuple[Path, list[Path]]:
    """The tests' tiny random-weight profile (2 references, 2 passes) and six 64x48
    camera images: the daemon's own costs (intake, history, heatmaps, logs) over many
    images, with the model's share small."""
    make_profile(folder / "profiles", "bolt", threshold=1e9)
    images = [
        write_image(folder / "images" / f"{seed}.png", product_image(48, 64, 50 + seed))
        for seed in range(6)
    ]
    return folder / "profiles" / "bolt", images


def recorded_command() -> str:
    """This run's command line for the docs, without ``--demo DIR``: that folder only
    caches the demo part, and the same run without it makes the part afresh."""
    argv, kept = sys.argv[1:], []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--demo":
            skip = True
        elif not arg.startswith("--demo="):
            kept.append(arg)
    return "python benchmarks/soak.py " + shlex.join(kept)


def profile_runtime(profile: Path) -> str:
    config = yaml.safe_load((profile / PROFILE_FILE).read_text())
    return config.get("detection", {}).get("runtime", "torch")


def profile_for(runtime: str, source: Path, profiles: Path, threads: int) -> str:
    """Copy profile folder ``source`` into ``profiles`` and make it run on ``runtime``;
    returns its name."""
    target = profiles / source.name
    shutil.copytree(source, target)
    have = profile_runtime(target)
    if have == runtime:
        return source.name
    if have != "torch" or runtime not in CONVERT:
        raise SystemExit(
            f"profile {source} runs on {have} and this script cannot convert it to {runtime}; "
            f"give --profile a profile made for {runtime}."
        )
    cli(*CONVERT[runtime], source.name, "--root", str(profiles), threads=threads)
    return source.name


def write_config(work: Path, profile: str) -> Site:
    """One camera folder, a fresh SQLite file and a worker that never skips for overload
    (a soak that falls behind must show it as backlog, not as skipped rows)."""
    camera, state = work / "camera", work / "state"
    camera.mkdir(parents=True)
    config = {
        "database": str(state / "results.sqlite3"),
        "profiles_dir": str(state / "profiles"),
        "heatmaps": str(state / "heatmaps"),
        "cameras": [{"name": "soak", "path": str(camera), "profile": profile}],
        "intake": {"stable_ms": 200},
        "worker": {"max_batch": 4, "max_wait_ms": 200, "device": "cpu", "deadline_s": 86400},
    }
    path = work / "daemon.yaml"
    path.write_text(yaml.safe_dump(config))
    return Site(work, {"soak": camera}, path, state / "results.sqlite3", state / "heatmaps")


def finished_rows(database: Path) -> int:
    if not database.exists():
        return 0
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        query = "SELECT COUNT(*) FROM inspections WHERE status NOT IN ('pending', 'processing')"
        return int(conn.execute(query).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # not migrated yet
    finally:
        conn.close()


def feed(
    camera: Path, pool: list[tuple[str, bytes]], count: int, rate: float, written: list[str]
) -> None:
    """Write ``count`` images at ``rate`` per second on a fixed schedule: a write delayed
    by a loaded machine is followed at once by those whose time has come, so the
    average rate holds over the run."""
    start = time.monotonic()
    for index in range(count):
        time.sleep(max(0.0, start + index / rate - time.monotonic()))
        label, data = pool[index % len(pool)]
        path = camera / f"{index:06d}-{label}"
        path.write_bytes(data)
        written.append(str(path))


def soak(
    runtime: str,
    args: argparse.Namespace,
    profile: Path,
    pool: list[tuple[str, bytes]],
    work: Path,
) -> SoakRun:
    site = write_config(work, profile_for(runtime, profile, work / "state" / "profiles", 1))
    run = SoakRun(runtime, args.images)
    written: list[str] = []
    env = {"OMP_NUM_THREADS": str(args.threads)}
    with DaemonProcess(site, env=env) as daemon:
        daemon.wait_ready(timeout=900)
        pid = daemon.process.pid
        cpu_before, started = cpu_seconds(pid), time.monotonic()
        feeder = threading.Thread(
            target=feed, args=(site.cameras["soak"], pool, args.images, args.rate, written)
        )
        feeder.start()
        finished = 0
        while finished < args.images:
            if not daemon.alive():
                raise SystemExit(f"the daemon exited:\n{daemon.log.read_text()[-4000:]}")
            finished = finished_rows(site.database)
            memory = status_kib(pid, "VmRSS", "VmHWM")
            run.samples.append(
                Sample(
                    time.monotonic() - started,
                    len(written),
                    finished,
                    memory["VmRSS"],
                    memory["VmHWM"],
                )
            )
            print(
                f"{runtime}: {run.samples[-1].seconds:7.0f} s  written {len(written)}  "
                f"finished {finished}  RSS {memory['VmRSS'] / 1024:.1f} MiB",
                flush=True,
            )
            if finished < args.images:
                time.sleep(args.sample_s)
        feeder.join()
        run.seconds, run.cpu_s = time.monotonic() - started, cpu_seconds(pid) - cpu_before
        daemon.terminate(timeout=120)
        run.trims = [e for e in daemon.events() if e.get("event") == "worker.memory_trimmed"]
    wait_for(lambda: finished_rows(site.database) >= len(written), 60, what="rows")
    count = Counter(row["source_path"] for row in rows(site.database))
    statuses = {row["source_path"]: row["status"] for row in rows(site.database)}
    run.lost = sum(1 for path in written if count[path] == 0)
    run.duplicated = sum(1 for path in written if count[path] > 1)
    run.not_done = sum(1 for path in written if statuses.get(path, "done") != "done")
    return run


def slope(samples: list[Sample]) -> tuple[float, float]:
    """Least-squares slope of RSS (KiB) on images finished, and its 95% half-width."""
    xs = [float(s.finished) for s in samples]
    ys = [float(s.rss_kib) for s in samples]
    n = len(xs)
    if n < 3 or max(xs) == min(xs):
        return float("nan"), float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    residual = sum((y - my - b * (x - mx)) ** 2 for x, y in zip(xs, ys, strict=True))
    standard_error = (residual / (n - 2) / sxx) ** 0.5
    return b, t95(n - 2) * standard_error


def t95(dof: int) -> float:
    """Two-sided 95% quantile of Student's t (scipy's when installed, else normal)."""
    try:
        from scipy.stats import t
    except ImportError:
        return 1.96
    return float(t.ppf(0.975, dof))


def summarise(run: SoakRun, warmup: int) -> dict:
    after = [s for s in run.samples if s.finished >= warmup]
    fitted, half = slope(after)
    warm = after[0] if after else run.samples[-1]
    steps = [b.rss_kib - a.rss_kib for a, b in itertools.pairwise(after)]
    return {
        "runtime": run.runtime,
        "images": run.images,
        "seconds": round(run.seconds, 1),
        "cpu_s_per_image": round(run.cpu_s / run.images, 3),
        "max_backlog": max(s.written - s.finished for s in run.samples),
        "peak_rss_mib": round(max(s.hwm_kib for s in run.samples) / 1024, 1),
        "rss_after_warmup_mib": round(warm.rss_kib / 1024, 1),
        "rss_end_mib": round(run.samples[-1].rss_kib / 1024, 1),
        "largest_rise_between_samples_mib": round(max(steps, default=0) / 1024, 1),
        "samples_after_warmup": len(after),
        "slope_kib_per_image": round(fitted, 3),
        "slope_ci95_kib_per_image": round(half, 3),
        "slope_below_target": bool(fitted < TARGET_KIB_PER_IMAGE),
        "verdict": verdict(fitted, half),
        "lost": run.lost,
        "duplicated": run.duplicated,
        "not_done": run.not_done,
        **trim_summary(run.trims),
    }


def verdict(fitted: float, half: float) -> str:
    """Whether the whole 95% interval lies under the target, over it, or spans it: a
    short run on a heavy profile swings by the detection's working set at every trim,
    and its point estimate alone says little."""
    if fitted + half < TARGET_KIB_PER_IMAGE:
        return "yes"
    if fitted - half >= TARGET_KIB_PER_IMAGE:
        return "no"
    return "not resolved (the interval spans 1)"


def trim_summary(trims: list[dict]) -> dict:
    """What the daemon's periodic ``malloc_trim`` found (``worker.memory_trimmed``): how
    much resident memory each trim handed back, and the heap in use at the first and the
    last trim (growth there would be live objects, not fragmentation)."""
    measured = [t for t in trims if t.get("rss_before_mib") is not None]
    if not measured:
        return {"trims": len(trims)}
    released = sorted(t["rss_before_mib"] - t["rss_after_mib"] for t in measured)
    return {
        "trims": len(trims),
        "trim_released_mib_median": round(released[len(released) // 2], 1),
        "trim_released_mib_max": round(released[-1], 1),
        "heap_in_use_mib_first_trim": measured[0]["heap_in_use_mib"],
        "heap_in_use_mib_last_trim": measured[-1]["heap_in_use_mib"],
    }


def image_pool(images: list[Path]) -> list[tuple[str, bytes]]:
    """(name ending, bytes) of each source image: its class and its own name travel in
    the camera file's name (``000123-good-007.png``) so a row can be traced back."""
    return [(f"{p.parent.name}-{p.name}", p.read_bytes()) for p in images]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", action="append", choices=RUNTIMES, help="repeatable")
    parser.add_argument("--images", type=int, default=10_000, help="images per runtime")
    parser.add_argument("--rate", type=float, default=0.5, help="images written per second")
    parser.add_argument("--warmup-images", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1, help="the daemon's CPU threads")
    parser.add_argument("--sample-s", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--profile", type=Path, help="a profile folder (default: the demo's)")
    parser.add_argument("--images-dir", type=Path, help="camera images for --profile")
    parser.add_argument(
        "--tiny", action="store_true", help="the tests' tiny random-weight profile instead"
    )
    parser.add_argument("--demo", type=Path, help="folder for the demo part, made once and reused")
    parser.add_argument("--section", default="soak", help="docs block to write")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    runtimes = args.runtime or ["torch"]
    if args.images < 1 or args.rate <= 0 or not 0 <= args.warmup_images < args.images:
        raise SystemExit("give --images >= 1, --rate > 0 and --warmup-images below --images.")

    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        if args.tiny:
            profile, images = tiny_part(Path(tmp) / "tiny")
            part = "the tests' tiny random-weight profile (2 references, 2 passes, 64x48 px)"
        elif args.profile is not None:
            if args.images_dir is None:
                raise SystemExit("--profile needs --images-dir: the images the camera writes.")
            profile = args.profile.resolve()
            images = sorted(
                p for p in args.images_dir.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES
            )
            part = f"profile {profile.name}"
        else:
            profile, images = demo_part((args.demo or Path(tmp) / "demo").resolve())
            part = "the demo part (shipped model, 12 references, 224 px renders)"
        if not images:
            raise SystemExit(f"no images in {args.images_dir}; give a folder of PNG/JPEG files.")
        pool = image_pool(images)
        results = []
        for runtime in runtimes:
            work = Path(tmp) / runtime
            results.append(summarise(soak(runtime, args, profile, pool, work), args.warmup_images))
            print_json_line("soak_runtime", results[-1])

    headers = [
        "runtime",
        "images",
        "minutes",
        "CPU s per image",
        "peak RSS MiB",
        "RSS after warm-up MiB",
        "RSS at end MiB",
        "slope KiB/image (95% CI)",
        "slope < 1 KiB/image (whole interval)",
        "lost / duplicated / not done",
    ]
    table = markdown_table(
        headers,
        [
            [
                r["runtime"],
                r["images"],
                f"{r['seconds'] / 60:.0f}",
                r["cpu_s_per_image"],
                r["peak_rss_mib"],
                r["rss_after_warmup_mib"],
                r["rss_end_mib"],
                f"{r['slope_kib_per_image']:+.2f} ± {r['slope_ci95_kib_per_image']:.2f}",
                r["verdict"],
                f"{r['lost']} / {r['duplicated']} / {r['not_done']}",
            ]
            for r in results
        ],
    )
    note = (
        f"{part}; {args.rate:g} images/s written into one camera folder, "
        f"{len(pool)} distinct source images copied under unique names, {args.threads} "
        f"daemon thread(s), RSS sampled every {args.sample_s:g} s; the slope is fitted to the "
        f"samples after the first {args.warmup_images} images."
    )
    print(table)
    print()
    print(note)
    print_json_line("soak", {"rate": args.rate, "threads": args.threads, "runtimes": results})
    if args.write_docs:
        update_docs_section(args.section, f"{table}\n\n{note}", recorded_command())
    failures = [r["runtime"] for r in results if r["lost"] or r["duplicated"] or r["not_done"]]
    if failures:
        raise SystemExit(f"images lost, duplicated or not done on: {', '.join(failures)}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # A stopped soak still stops its daemon and removes its folders.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
