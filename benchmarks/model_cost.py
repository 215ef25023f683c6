"""Parameters, FLOPs and CPU time of PADFormer per training forward and per inference pass.

For each preset and N references (batch 1):
- *train fwd*: ``model(query, refs)``, i.e. encoding the N references and the masked query,
  then decoding; what one training sample costs before the backward pass;
- *ref encode*: ``encode_references`` alone, paid once per reference set at detection;
- *pass*: ``reconstruct(query, cache, mask)``, one of the I masked passes of detection.
FLOPs come from ``torch.utils.flop_counter`` (matmuls, convolutions, attention). The
STN resamples with a dense [M, M] weight matrix per reference (at most 4 non-zeros a
row), which is counted in full although it is cheaper than the ``grid_sample`` it
replaced; the ``grid_sample`` that builds those weights and the top-k are not counted.
The ``croco`` rows switch selection off (every position attends to all N*M aligned
reference tokens) to show what the top-k saves; the edge preset's ``STN unreduced`` row
drops its 1x1 channel reduction before the STN localisation convolution.
Times are this process's CPU milliseconds (summed over ``--threads`` threads, median of
``--repeats`` calls); the JSON line adds the fastest wall-clock time of each.

    PYTHONPATH=. python -m benchmarks.model_cost [--presets paper small edge] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import sys

# Idle OpenMP threads must sleep, not spin: spinning threads burn CPU time while other
# jobs hold the cores, which would make the CPU-time figures measure the machine's load.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from benchmarks.common import (
    count_flops,
    markdown_table,
    print_json_line,
    timed,
    update_docs_section,
)
from padformer_edge.model.padformer import build_model


def measure(preset: str, refs: int, repeats: int, **overrides) -> dict:
    torch.manual_seed(0)
    model = build_model(preset, **overrides).eval()
    size = model.config.img_size
    query = torch.randn(1, 3, size, size)
    references = torch.randn(1, refs, 3, size, size)
    mask = model.random_mask(1, torch.Generator().manual_seed(0))
    with torch.no_grad():
        cache = model.encode_references(references)
        steps = {
            "train_fwd": lambda: model(query, references, mask),
            "ref_encode": lambda: model.encode_references(references),
            "pass": lambda: model.reconstruct(query, cache, mask),
        }
        row = {f"{k}_gflops": count_flops(fn) / 1e9 for k, fn in steps.items()}
        for name, fn in steps.items():
            cpu, wall = timed(fn, repeats)
            row |= {f"{name}_cpu_ms": cpu * 1e3, f"{name}_wall_ms": wall * 1e3}
    row["params_m"] = sum(p.numel() for p in model.parameters()) / 1e6
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["paper", "small", "edge"])
    parser.add_argument("--refs", nargs="+", type=int, default=[2, 4, 10])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    variants = [(p, n, "full", {}) for p in args.presets for n in args.refs]
    variants += [(p, max(args.refs), "croco", {"use_selection": False}) for p in args.presets]
    if "edge" in args.presets:  # what the STN's 1x1 reduction saves
        variants.append(("edge", 4, "STN unreduced", {"stn_channels": 0}))
    rows, results = [], []
    for preset, refs, variant, overrides in variants:
        r = measure(preset, refs, args.repeats, **overrides)
        results.append({"preset": preset, "refs": refs, "variant": variant, **r})
        rows.append([preset, variant, refs, f"{r['params_m']:.2f}", r["train_fwd_gflops"],
                     r["ref_encode_gflops"], r["pass_gflops"], r["train_fwd_cpu_ms"],
                     r["ref_encode_cpu_ms"], r["pass_cpu_ms"]])  # fmt: skip
        print(f"measured {preset} {variant} N={refs}", file=sys.stderr, flush=True)
    headers = ["preset", "variant", "N", "params (M)", "train fwd GFLOPs", "ref encode GFLOPs",
               "pass GFLOPs", "train fwd CPU ms", "ref encode CPU ms", "pass CPU ms"]  # fmt: skip
    table = markdown_table(headers, rows)
    print(table)
    print_json_line("model_cost", {"threads": args.threads, "results": results})
    if args.write_docs:
        command = "python -m benchmarks.model_cost " + " ".join(sys.argv[1:])
        update_docs_section("model-cost", table, command.strip())


if __name__ == "__main__":
    main()
