"""Training throughput of candidate CPU presets, to choose the ``small`` preset.

One training step = forward + backward + AdamW step at N=4 references, batch 8. The
candidates are timed round-robin in one process (repeat r of every candidate before
repeat r + 1 of any), so load from other processes on a shared machine hits them alike;
the table reports each one's fastest step (the one least disturbed by other processes),
its median, and its speed relative to the chosen ``small`` preset.

    PYTHONPATH=. python -m benchmarks.small_preset_candidates [--repeats 5] [--write-readme]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import torch

from benchmarks.common import markdown_table, print_json_line, update_readme_section
from padformer_edge.model import PRESETS, PADFormer

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


def train_step_seconds(model: PADFormer, opt: torch.optim.Optimizer, batch: int, refs: int):
    """Wall time of one optimisation step on random normalised images."""
    size = model.config.img_size
    query = torch.randn(batch, 3, size, size)
    references = torch.randn(batch, refs, 3, size, size)
    start = time.perf_counter()
    recon, _ = model(query, references)
    loss = (recon - query).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--refs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    setups = {}
    for name, cfg in CANDIDATES.items():
        model = PADFormer(cfg).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        train_step_seconds(model, opt, args.batch, args.refs)  # warm-up: allocator, kernels
        setups[name] = (model, opt)
    times: dict[str, list[float]] = {name: [] for name in setups}
    for _ in range(args.repeats):
        for name, (model, opt) in setups.items():
            times[name].append(train_step_seconds(model, opt, args.batch, args.refs))

    base = min(times["small (chosen)"])
    rows, results = [], {}
    for name, (model, _) in setups.items():
        cfg, step, median = model.config, min(times[name]), statistics.median(times[name])
        params = sum(p.numel() for p in model.parameters()) / 1e6
        rate = args.batch / step
        results[name] = {"samples_per_s": rate, "params_m": params, "step_s": step,
                         "median_step_s": median}  # fmt: skip
        rows.append([name, f"{cfg.grid_size}x{cfg.grid_size}", f"{params:.2f}", step, median,
                     rate, rate * 3600, base / step])  # fmt: skip
    headers = ["candidate", "grid", "params (M)", "best step (s)", "median step (s)",
               "samples/s (best)", "samples/hour", "speed vs small"]  # fmt: skip
    table = markdown_table(headers, rows)
    print(table)
    print_json_line(
        "small_preset_candidates",
        {"threads": args.threads, "batch": args.batch, "refs": args.refs, "results": results},
    )
    if args.write_readme:
        command = "python -m benchmarks.small_preset_candidates " + " ".join(sys.argv[1:])
        update_readme_section("small-preset-candidates", table, command.strip())


if __name__ == "__main__":
    main()
