"""Training throughput of candidate CPU presets, to choose the ``small`` preset.

One training step = forward + backward + AdamW step at N=4 references, batch 8. The
candidates are timed round-robin in one process (repeat r of every candidate before
repeat r + 1 of any), so load from other processes on a shared machine hits them alike;
each step records wall time and this process's CPU time. On a machine shared with other
jobs the wall time swings with their load, while CPU time (summed over our threads) barely
does, so the speed ratio against the chosen ``small`` preset is taken from median CPU time;
samples/s comes from the fastest wall-clock step, the one least disturbed by others.

    PYTHONPATH=. python -m benchmarks.small_preset_candidates [--repeats 5] [--write-docs]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time

# Idle OpenMP threads must sleep, not spin: spinning threads burn CPU time while other
# jobs hold the cores, which would make the CPU-time figures measure the machine's load.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.model.config import PRESETS
from padformer_edge.model.padformer import PADFormer

SMALL = PRESETS["small"]
CANDIDATES = {
    "small (chosen)": SMALL,
    "128px p16 enc192x4 dec256x2": dataclasses.replace(
        SMALL, img_size=128, patch_size=16, embed_dim=192, depth=4, num_heads=3,
        decoder_embed_dim=256, decoder_depth=2, decoder_num_heads=8),
    "128px p16 enc256x6 dec256x4": dataclasses.replace(
        SMALL, img_size=128, patch_size=16, embed_dim=256, depth=6, num_heads=4,
        decoder_embed_dim=256, decoder_depth=4, decoder_num_heads=8),
    "96px p8 enc192x4 dec256x4": dataclasses.replace(
        SMALL, img_size=96, patch_size=8, embed_dim=192, depth=4, num_heads=3,
        decoder_embed_dim=256, decoder_depth=4, decoder_num_heads=8),
    "112px p8 enc192x4 dec256x4": dataclasses.replace(
        SMALL, img_size=112, patch_size=8, embed_dim=192, depth=4, num_heads=3,
        decoder_embed_dim=256, decoder_depth=4, decoder_num_heads=8),
    "112px p16 enc192x4 dec256x4": dataclasses.replace(
        SMALL, img_size=112, patch_size=16, embed_dim=192, depth=4, num_heads=3,
        decoder_embed_dim=256, decoder_depth=4, decoder_num_heads=8),
}  # fmt: skip


def train_step_seconds(
    model: PADFormer, opt: torch.optim.Optimizer, batch: int, refs: int
) -> tuple[float, float]:
    """(wall, process CPU) seconds of one optimisation step on random normalised images."""
    size = model.config.img_size
    query = torch.randn(batch, 3, size, size)
    references = torch.randn(batch, refs, 3, size, size)
    start, cpu_start = time.perf_counter(), time.process_time()
    recon = model(query, references)[0].pixels
    loss = (recon - query).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return time.perf_counter() - start, time.process_time() - cpu_start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--refs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    setups = {}
    for name, cfg in CANDIDATES.items():
        model = PADFormer(cfg).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        train_step_seconds(model, opt, args.batch, args.refs)  # warm-up: allocator, kernels
        setups[name] = (model, opt)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in setups}
    for _ in range(args.repeats):
        for name, (model, opt) in setups.items():
            times[name].append(train_step_seconds(model, opt, args.batch, args.refs))

    def cpu(name: str) -> float:
        return statistics.median(c for _, c in times[name])

    rows, results = [], {}
    for name, (model, _) in setups.items():
        cfg, step = model.config, min(w for w, _ in times[name])
        params = sum(p.numel() for p in model.parameters()) / 1e6
        rate, speed = args.batch / step, cpu("small (chosen)") / cpu(name)
        results[name] = {"samples_per_s": rate, "params_m": params, "best_step_s": step,
                         "median_cpu_s": cpu(name), "speed_vs_small": speed}  # fmt: skip
        rows.append([name, f"{cfg.grid_size}x{cfg.grid_size}", f"{params:.2f}", cpu(name),
                     step, rate, rate * 3600, speed])  # fmt: skip
    headers = ["candidate", "grid", "params (M)", "CPU s/step (median)", "best wall s/step",
               "samples/s (best)", "samples/hour", "speed vs small (CPU)"]  # fmt: skip
    table = markdown_table(headers, rows)
    print(table)
    print_json_line(
        "small_preset_candidates",
        {"threads": args.threads, "batch": args.batch, "refs": args.refs, "results": results},
    )
    if args.write_docs:
        command = "python -m benchmarks.small_preset_candidates " + " ".join(sys.argv[1:])
        update_docs_section("small-preset-candidates", table, command.strip())


if __name__ == "__main__":
    main()
