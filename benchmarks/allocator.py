"""What keeping freed memory mapped (``padformer_edge.devices.allocator``) saves per detection.

The same workloads run in fresh child processes, once with glibc's defaults
(``PADFORMER_EDGE_MALLOC_TUNING=0``) and once tuned, alternating for ``--rounds``:

- a small-preset detection (4 references, 15 passes) on the main thread,
- the same on a worker thread, where the daemon runs it,
- a training step (forward, backward, AdamW; batch 4, N=4).

Each child reports the median CPU seconds per call and the minor page faults per call
(``getrusage``): a fault is one page handed back by the kernel, zero-filled, that the
default allocator had returned a moment before. Ratios compare medians over rounds.

    python benchmarks/allocator.py --write-docs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    markdown_table,
    print_json_line,
    smooth_photo,
    timed,
    update_docs_section,
)
from padformer_edge.devices.allocator import DISABLE_VARIABLE, retain_freed_memory

WORKLOADS = ("detection, main thread", "detection, worker thread", "training step")


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def measure(fn, repeats: int) -> tuple[float, float]:
    """(median CPU seconds, mean minor faults) per call, after one warm-up call."""
    before = faults()
    cpu, _ = timed(fn, repeats)
    return cpu, (faults() - before) / (repeats + 1)


def on_worker_thread(fn, repeats: int) -> tuple[float, float]:
    result: list[tuple[float, float]] = []
    worker = threading.Thread(target=lambda: result.append(measure(fn, repeats)))
    worker.start()
    worker.join()
    return result[0]


def child(repeats: int) -> None:
    """Run the workloads in this process and print their numbers as one JSON object."""
    applied = retain_freed_memory()  # first, as the CLI does, before threads allocate
    import torch

    from padformer_edge.detect.settings import DetectionSettings
    from padformer_edge.methods.padformer.detector import Detector
    from padformer_edge.model.padformer import build_model

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build_model("small")
    references = [smooth_photo(128, seed) for seed in range(4)]
    query = smooth_photo(128, seed=100)
    settings = DetectionSettings(metric="auto", passes=15, device="cpu", max_batch=15)
    detector = Detector(model.eval(), references, settings)
    results = {
        WORKLOADS[0]: measure(lambda: detector.detect([query]), repeats),
        WORKLOADS[1]: on_worker_thread(lambda: detector.detect([query]), repeats),
    }
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    queries, refs = torch.randn(4, 3, 128, 128), torch.randn(4, 4, 3, 128, 128)

    def step() -> None:
        recon = model(queries, refs)[0].pixels
        loss = (recon - queries).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    results[WORKLOADS[2]] = measure(step, repeats)
    print(json.dumps({"applied": applied, "results": results}))


def run_child(tuned: bool, repeats: int) -> dict:
    env = {**os.environ, DISABLE_VARIABLE: "1" if tuned else "0"}
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--repeats", str(repeats)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    if report["applied"] != tuned:
        raise SystemExit(f"the child was to run {'tuned' if tuned else 'untuned'}: {report}")
    return report["results"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(args.repeats)
        return
    import torch

    torch.set_num_threads(1)  # as in the children, so the docs header says so
    runs: dict[bool, list[dict]] = {False: [], True: []}
    for _ in range(args.rounds):
        for tuned in (False, True):
            runs[tuned].append(run_child(tuned, args.repeats))

    def median(tuned: bool, workload: str, index: int) -> float:
        return statistics.median(run[workload][index] for run in runs[tuned])

    rows, payload = [], {}
    for workload in WORKLOADS:
        default_s, tuned_s = median(False, workload, 0), median(True, workload, 0)
        default_faults, tuned_faults = median(False, workload, 1), median(True, workload, 1)
        rows.append(
            [
                workload,
                default_s,
                tuned_s,
                default_s / tuned_s,
                round(default_faults),
                round(tuned_faults),
            ]
        )
        payload[workload.replace(", ", "_").replace(" ", "_")] = {
            "default_s": default_s,
            "tuned_s": tuned_s,
            "speedup": default_s / tuned_s,
            "default_faults": default_faults,
            "tuned_faults": tuned_faults,
        }
    headers = [
        "workload (small preset, 1 thread)",
        "CPU s, glibc defaults",
        "CPU s, tuned",
        "speed-up",
        "page faults per call, defaults",
        "tuned",
    ]
    table = markdown_table(headers, rows)
    print(table)
    print_json_line("allocator", {"rounds": args.rounds, "repeats": args.repeats, **payload})
    if args.write_docs:
        update_docs_section("allocator", table)


if __name__ == "__main__":
    main()
