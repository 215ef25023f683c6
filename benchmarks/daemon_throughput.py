"""Daemon throughput: a burst of images into camera folders, against the Detector alone.

The daemon runs as the real subprocess (`padformer-edge watch`) on a fresh SQLite file;
the benchmark writes a burst of PNG files, round-robin over the camera folders, as
cameras would, and waits until every row is done. It reports

- end-to-end images/s (first file closed -> last row committed) and the p50/p95 latency
  from each file's close to its row's commit (``finished_at``);
- the same images through ``Detector.detect`` alone, in batches of the worker's size, in
  this process with the same thread count;
- the daemon's overhead as a ratio measured in the same run: wall time per image, and
  CPU seconds per image (the daemon's from /proc, the Detector's from process_time).
  On a shared machine other jobs stretch wall time but hardly CPU time, so the CPU ratio
  is the one to compare with the target (overhead <= 15%);
- the daemon's resident memory once a quarter of the images are done and at the end, as
  growth per 1000 images: what a leak would show first on a line PC that runs for months
  (run with a few hundred ``--images`` for that).

Weights are random (detection cost does not depend on them); the profile is made with
the profiles API. Example:

    python benchmarks/daemon_throughput.py --preset small --images 48 --write-docs

On a GPU (``--device cuda``), ``--model shipped`` scores the demo's rendered part with the
shipped model (``rendered_part``; references and camera images are renders, the weights
the real ones), and the run also reports the latency from each file counted complete
(after ``intake.stable_ms``, the row's ``discovered_at``) to its row committed, the GPU
memory the worker's torch held (``/metrics``' ``padformer_gpu_memory_reserved_bytes``,
scraped from the daemon's own page at the end) and, with ``--rate R``, a steady R images/s
offered instead of a burst written at once. Such a run saves JSON (``--json-out``) and
its docs block is rendered from that file, never from a CPU run:

    python3 benchmarks/daemon_throughput.py --device cuda --model shipped --images 2000 \
        --batch 8 --burst-max-batch 64 --json-out $OUT/daemon_burst.json
    python benchmarks/daemon_throughput.py --from-json daemon_burst.json --write-docs

``--stored-maps`` measures the daemon's host side alone (``host_side.py``): the real
daemon with a detector that returns stored real detections of the same images, on 224-px
PNG and 5-megapixel JPEG and PNG images, with ``--profile`` each stage's share:

    python benchmarks/daemon_throughput.py --stored-maps --passes 2 --metric rgb \
        --images 200 --camera-images 40 --profile --write-docs

and with ``--rate R --arrivals write,rename`` at a steady R images/s, once with files
written in place (intake waits ``intake.stable_ms``) and once renamed into place (taken
at once), each set's latency from the file closed or renamed to its row committed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import host_side as host
from benchmarks.common import markdown_table, print_json_line, smooth_photo, update_docs_section
from benchmarks.daemon_run import make_profile, png, run_daemon
from padformer_edge.profiles.profile import load_profile


def run_detector(
    work: Path, images: list[np.ndarray], batch: int, device: str = "cpu"
) -> tuple[float, float]:
    """(wall s, CPU s) of ``Detector.detect`` alone over ``images`` in worker-sized batches."""
    detector = load_profile(work / "profiles", "bench").build_detector(device)
    detector.detect(images[:batch])  # the daemon warms up too
    if device == "cuda":
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(images), batch):
        detector.detect(images[start : start + batch])  # numpy back: synchronised
    return time.perf_counter() - wall, time.process_time() - cpu


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


GPU_HEADERS = [
    "offered", "images", "images/s", "p50 ms", "p95 ms", "p95 ms from file closed",
    "GPU MiB reserved", "Detector alone images/s",
]  # fmt: skip


def render_runs(payloads: list[dict]) -> tuple[str, str]:
    """The table of GPU (or shipped-model) runs, one row per saved run."""
    rows = []
    for run in payloads:
        offered = f"steady {run['rate']:g}/s" if run["rate"] else "burst, all at once"
        reserved = run["gpu_reserved_bytes"]
        rows.append([
            offered, run["images"], run["daemon_images_per_s"], 1000 * run["counted_p50_s"],
            1000 * run["counted_p95_s"], 1000 * run["latency_p95_s"],
            "-" if reserved is None else reserved / 2**20, run["detector_images_per_s"],
        ])  # fmt: skip
    first = payloads[0]
    growth = f", up to {first['burst_max_batch']} in a burst" if first["burst_max_batch"] else ""
    summary = (
        f"On {first['device_name']} (torch {first['torch']}), the {first['model']} model, "
        f"metric {first['metric']}, {first['references']} references, {first['passes']} "
        f"passes, {first['size']} px PNG images over {first['cameras']} camera folders, "
        f"worker batch {first['batch']}{growth}, max_wait_ms {first['max_wait_ms']}. "
        "Latency p50/p95: from the file counted complete (after intake.stable_ms 100) to "
        "its row committed; the next column adds the stability wait (from the file closed). "
        "GPU memory: padformer_gpu_memory_reserved_bytes on the daemon's /metrics at the end."
    )
    return markdown_table(GPU_HEADERS, rows), summary


def measure(args: argparse.Namespace) -> dict:
    """One daemon run as ``args`` ask, and the Detector alone on the same images."""
    shipped = args.model == "shipped"
    with tempfile.TemporaryDirectory(prefix="daemon-bench-") as tmp:
        work = Path(tmp)
        if shipped:
            from benchmarks.rendered_part import render_part

            folder = args.render or work / "render"
            part = render_part(folder, args.references, args.views, args.size)
            bank = part.references
            images = [part.queries[i % len(part.queries)] for i in range(args.images)]
        else:
            bank = None
            images = [smooth_photo(args.size, 1000 + i, cells=6) for i in range(args.images)]
        make_profile(work, args.preset, args.passes, args.size, args.device, bank,
                     args.metric, args.model_batch)  # fmt: skip
        payloads = [png(image) for image in images]
        wall, cpu, latencies, counted, (warm_rss, end_rss), gpu_bytes = run_daemon(
            work, payloads, args.cameras, args.batch, args.threads, args.device, args.rate,
            args.max_wait_ms, args.burst_max_batch,
        )  # fmt: skip
        detector_wall, detector_cpu = run_detector(work, images, args.batch, args.device)
    n = args.images
    on_gpu = args.device == "cuda"
    return {
        "model": args.model,
        "preset": None if shipped else args.preset,
        "metric": args.metric,
        "references": args.references if shipped else 4,
        "passes": args.passes,
        "images": n,
        "size": args.size,
        "cameras": args.cameras,
        "batch": args.batch,
        "burst_max_batch": args.burst_max_batch,
        "max_wait_ms": args.max_wait_ms,
        "rate": args.rate,
        "threads": args.threads,
        "device": args.device,
        "device_name": torch.cuda.get_device_name(0) if on_gpu else "CPU",
        "torch": torch.__version__,
        "detector_images_per_s": n / detector_wall,
        "daemon_images_per_s": n / wall,
        "detector_cpu_s_per_image": detector_cpu / n,
        "daemon_cpu_s_per_image": cpu / n,
        "latency_p50_s": percentile(latencies, 50),
        "latency_p95_s": percentile(latencies, 95),
        "counted_p50_s": percentile(counted, 50),
        "counted_p95_s": percentile(counted, 95),
        "gpu_reserved_bytes": gpu_bytes,
        "cpu_overhead": cpu / detector_cpu - 1,
        "wall_overhead": wall / detector_wall - 1,
        "rss_warm_mib": warm_rss,
        "rss_end_mib": end_rss,
        "rss_growth_mib_per_1000_images": (end_rss - warm_rss) / (n - n // 4) * 1000,
    }


def cpu_table(run: dict) -> tuple[str, str]:
    """The CPU table of the docs (random weights, a burst): overhead against the Detector."""
    n = run["images"]
    table = markdown_table(
        ["path", "images/s (wall)", "CPU s per image", "p50 latency s", "p95 latency s"],
        [
            ["Detector.detect alone", run["detector_images_per_s"],
             run["detector_cpu_s_per_image"], "-", "-"],
            ["daemon end to end", run["daemon_images_per_s"], run["daemon_cpu_s_per_image"],
             run["latency_p50_s"], run["latency_p95_s"]],
        ],
    )  # fmt: skip
    verdict = "met" if run["cpu_overhead"] <= 0.15 else "not met"
    summary = (
        f"{run['preset']} preset, {run['passes']} passes, {n} PNG images of "
        f"{run['size']}x{run['size']} px over {run['cameras']} camera folders, worker batch "
        f"{run['batch']}, {run['threads']} thread(s), random weights. Daemon overhead: "
        f"{run['cpu_overhead']:+.1%} CPU time per image (target at most +15%: {verdict}), "
        f"{run['wall_overhead']:+.1%} wall time per image. Latency is file closed -> row "
        "committed, including the 100 ms size-stability wait and the queueing of a burst "
        f"written all at once. Daemon resident memory: {run['rss_warm_mib']:.0f} MiB once a "
        f"quarter of the images were done, {run['rss_end_mib']:.0f} MiB at the end "
        f"({run['rss_growth_mib_per_1000_images']:+.1f} MiB per 1000 images after warm-up)."
    )
    return table, summary


def host_side(args: argparse.Namespace) -> None:
    """``--stored-maps``: the daemon's host side per image (``host_side.py``)."""

    if args.device != "cpu" or args.model != "random":
        raise SystemExit("--stored-maps runs on the CPU; leave out --device and --model.")
    wrong = sorted(set(args.arrivals) - set(host.ARRIVALS))
    if wrong:
        raise SystemExit(
            f"--arrivals: {', '.join(wrong)} unknown; choose of {', '.join(host.ARRIVALS)}."
        )
    unknown = sorted(set(args.sets) - set(host.SET_KEYS))
    if unknown:
        raise SystemExit(
            f"--sets: {', '.join(unknown)} unknown; choose of {', '.join(host.SET_KEYS)}."
        )
    args.variants = [host.parse_variant(text) for text in args.variants or [""]]
    run = host.measure(args)
    if args.json_out:
        args.json_out.write_text(json.dumps(run, indent=1))
    write_host_side(run, args.write_docs)


def write_host_side(run: dict, write_docs: bool) -> None:
    """Print a ``--stored-maps`` run's tables, and write its docs block if asked, with
    the command that measured it (also when rendered from its JSON)."""

    body = host.render(run)
    print(body)
    print_json_line("daemon_host_side", run)
    if write_docs:  # a steady rate's latencies have a block of their own
        section = "daemon-host-latency" if run.get("rate") else "daemon-host-side"
        update_docs_section(section, body, run["command"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small", help="random weights of this preset")
    parser.add_argument("--model", choices=("random", "shipped"), default="random")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--metric", default="auto", help="the profile's detection metric")
    parser.add_argument("--references", type=int, default=12, help="shipped: reference views")
    parser.add_argument("--views", type=int, default=64, help="shipped: distinct rendered images")
    parser.add_argument(
        "--render", type=Path, help="shipped: the rendered views' folder (kept, or read as it is)"
    )
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--cameras", type=int, default=3)
    parser.add_argument("--size", type=int, default=None,
                        help="camera image side in pixels (256; shipped: 224)")  # fmt: skip
    parser.add_argument("--batch", type=int, default=4, help="the worker's max_batch")
    parser.add_argument("--burst-max-batch", type=int, help="the worker's burst_max_batch")
    parser.add_argument("--max-wait-ms", type=int, default=100, help="the worker's max_wait_ms")
    parser.add_argument("--model-batch", type=int, help="passes per model call (default passes)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="images offered per second; 0: a burst written at once")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--stored-maps",
        action="store_true",
        help="the host side alone: the daemon with a detector that returns stored real "
        "detections (benchmarks/host_side.py), on 224-px PNG and 5 MP JPEG and PNG images",
    )
    parser.add_argument(
        "--camera-images", type=int, default=40, help="--stored-maps: images per 5 MP set"
    )
    parser.add_argument(
        "--sets", default="224-png,5mp-jpeg,5mp-png,5mp-framed",
        type=lambda text: text.split(","),
        help="--stored-maps: the image sets, of 224-png, 5mp-jpeg, 5mp-png, 5mp-framed (5 MP "
        "JPEG frames of a part on the belt, found by a framed profile)",
    )  # fmt: skip
    parser.add_argument(
        "--arrivals", default="write", type=lambda text: text.split(","),
        help="--stored-maps: how the camera writes each file, of write (in place: intake "
        "waits stable_ms) and rename (a .part name renamed into place); each set runs once "
        "per way, so their latencies compare in one run",
    )  # fmt: skip
    parser.add_argument(
        "--worker", action="append", dest="variants", metavar="KEY=VALUE[,KEY=VALUE]",
        help="--stored-maps: daemon worker settings to run each set with (repeat: one run "
        "each, in one table), e.g. host_threads=1 or host_threads=4,heatmap_format=png; "
        "default: the daemon's defaults",
    )  # fmt: skip
    parser.add_argument(
        "--profile", action="store_true",
        help="--stored-maps: each set again under cProfile (its first arrival and --worker)",
    )  # fmt: skip
    parser.add_argument(
        "--top", type=int, default=8, help="--profile: functions listed by their own CPU"
    )
    parser.add_argument(
        "--profile-dir", type=Path, help="--profile: keep each set's cProfile file here"
    )
    parser.add_argument("--json-out", type=Path, help="save the run here")
    parser.add_argument("--from-json", type=Path, action="append",
                        help="render saved GPU runs (repeat) instead of running")  # fmt: skip
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument(
        "--section",
        help="--from-json: the docs block to write (daemon-throughput-gpu); a block that is "
        "not in the docs yet is added at the end of benchmarks.md, to be moved into place once",
    )
    args = parser.parse_args()
    if args.from_json:
        runs = [json.loads(path.read_text()) for path in args.from_json]
        if len(runs) == 1 and "sets" in runs[0]:  # a --stored-maps run
            torch.set_num_threads(runs[0].get("threads", 1))  # the machine line says it
            write_host_side(runs[0], args.write_docs)
            return
        if any(run["device"] != "cuda" for run in runs):
            raise SystemExit("--from-json renders GPU runs; a CPU run writes its own table.")
        table, summary = render_runs(runs)
        print(table, summary, sep="\n\n")
        if args.write_docs:
            if not args.section:
                raise SystemExit("name the GPU runs' block: --section daemon-throughput-gpu")
            machine = f"{runs[0]['device_name']} (a lent GPU machine)"
            update_docs_section(args.section, f"{table}\n\n{summary}", None, machine)
        return
    args.size = args.size or (224 if args.model == "shipped" else 256)
    torch.set_num_threads(args.threads)
    if args.stored_maps:
        host_side(args)
        return
    run = measure(args)
    if args.json_out:
        args.json_out.write_text(json.dumps(run, indent=1))
    legacy = args.device == "cpu" and args.model == "random" and not args.rate
    table, summary = cpu_table(run) if legacy else render_runs([run])
    print(table)
    print()
    print(summary)
    print_json_line("daemon_throughput", run)
    if args.write_docs:
        if not legacy:
            raise SystemExit(
                "--write-docs here writes the CPU table; render GPU runs with --from-json."
            )
        update_docs_section("daemon-throughput", f"{table}\n\n{summary}")


if __name__ == "__main__":
    main()
