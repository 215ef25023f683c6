"""Detection time per image on a CUDA GPU: random-weight presets, or the shipped model on
the demo's rendered part with a parity check against the CPU.

``--model random`` (the first table): one query scored against 4 references with 15
passes (the paper's inference settings), references encoded once outside the timed call,
as the daemon does, for the paper and edge presets in fp32 and bf16; weights are random,
which does not change the work.

``--model shipped`` (the second table): the shipped generic model, references and
queries rendered from the demo's part (``rendered_part``), at each ``--references``
count, ``--metric``, ``--precision`` (fp32, tf32, bf16) and number of images per
``detect`` call (``--per-call``), each setting first scored against the CPU's float32
detection of the same images (``gpu_detect_shipped``).

Times are wall-clock milliseconds with the GPU synchronised before the clock stops (the
median of the repeats after warm-up calls). It runs where a GPU is (``python3
training/gpu_session.py --detect-speed``) and saves its rows as JSON; the docs blocks are
written here from that file, so no figure is typed by hand, and never from a CPU dry run:

    python3 benchmarks/gpu_detect_speed.py --json-out $OUT/gpu_detect_speed.json
    python3 benchmarks/gpu_detect_speed.py --model shipped --json-out $OUT/gpu_detect_shipped.json
    python benchmarks/gpu_detect_speed.py --from-json gpu_detect_shipped.json --write-docs

An fp32 row of the shipped grid outside ``PARITY_RTOL`` fails the run (exit 1, one line on
stderr naming each such row) once its JSON is saved and its table printed or written:
fp32 on CUDA must be the CPU's float32 within the bound.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section

HEADERS = ["preset", "input px", "precision", "ms per image", "images/s"]
SHIPPED_HEADERS = [
    "references",
    "metric",
    "precision",
    "images per call",
    "ms per image",
    "images/s",
    "parity gap",
    "verdicts agree",
]
DRY_RUN = "CPU (dry run)"


def measure(
    preset: str, precision: str, references: int, passes: int, repeats: int, device: str
) -> dict:
    import torch

    def synchronize() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    from benchmarks.common import smooth_photo
    from padformer_edge.detect.settings import DetectionSettings
    from padformer_edge.methods.padformer.detector import Detector
    from padformer_edge.model.padformer import build_model

    torch.manual_seed(0)
    model = build_model(preset).eval()
    size = model.config.img_size
    refs = [smooth_photo(size, seed) for seed in range(references)]
    query = smooth_photo(size, seed=100)
    settings = DetectionSettings(
        metric="auto", passes=passes, device=device, precision=precision, max_batch=passes
    )
    detector = Detector(model, refs, settings)
    for _ in range(3):
        detector.detect([query])
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        detector.detect([query])  # returns numpy maps: the copy back is inside the timing
        synchronize()
        times.append(time.perf_counter() - start)
    ms = statistics.median(times) * 1000
    return {"preset": preset, "size": size, "precision": precision, "ms": ms}


def measure_shipped(args: argparse.Namespace, on_gpu: bool, common: dict) -> dict:
    """The shipped model's grid (``gpu_detect_shipped``) on the rendered part; with
    ``--json-out`` the rows so far are saved after each one, marked ``partial``, so a run
    stopped at a session's deadline still brings back what it measured."""
    from benchmarks.gpu_detect_shipped import measure_grid
    from benchmarks.rendered_part import render_part
    from padformer_edge.model.checkpoint import load_checkpoint
    from padformer_edge.weights import locate_generic_model

    model = load_checkpoint(locate_generic_model())[0].eval()
    size = args.size or model.config.img_size
    with tempfile.TemporaryDirectory(prefix="gpu-detect-render-") as tmp:
        folder = args.render or Path(tmp)
        part = render_part(folder, max(args.references), args.views, size)
    model_batch = args.model_batch or (1024 if on_gpu else 32)
    fixed = {
        **common,
        "model": "shipped",
        "size": size,
        "views": len(part.queries),
        "parity_images": min(args.parity_images, len(part.queries)),
        "model_batch": model_batch,
    }

    def save(rows: list[dict]) -> None:
        print(rows[-1], flush=True)
        if args.json_out:
            args.json_out.write_text(json.dumps({**fixed, "partial": True, "rows": rows}))

    rows = measure_grid(
        model,
        part.references,
        part.queries,
        references=args.references,
        metrics=args.metric or ["fused", "distance", "compare"],
        precisions=args.precision or (["fp32", "tf32", "bf16"] if on_gpu else ["fp32"]),
        per_call=args.per_call,
        passes=args.passes,
        repeats=args.repeats,
        parity_images=fixed["parity_images"],
        device=args.device,
        model_batch=model_batch,
        progress=save,
    )
    return {**fixed, "partial": False, "rows": rows}


def render(payload: dict) -> tuple[str, str]:
    if payload.get("model") == "shipped":
        return render_shipped(payload)
    rows = [
        [r["preset"], r["size"], r["precision"], r["ms"], 1000 / r["ms"]] for r in payload["rows"]
    ]
    summary = (
        f"On {payload['device']} (torch {payload['torch']}), {payload['references']} "
        f"references, {payload['passes']} passes, one image per call, median of "
        f"{payload['repeats']} calls."
    )
    return markdown_table(HEADERS, rows), summary


def render_shipped(payload: dict) -> tuple[str, str]:
    from padformer_edge.detect.parity import PARITY_RTOL

    rows = [
        [
            r["references"],
            r["metric"],
            r["precision"],
            r["per_call"],
            r["ms_per_image"],
            r["images_per_s"],
            r["parity_gap"],
            "yes" if r["verdicts_agree"] else "no",
        ]
        for r in payload["rows"]
    ]
    broken = sorted(
        {(r["metric"], r["precision"]) for r in payload["rows"] if not r["within_parity"]}
    )
    held = (
        "every setting held the CPU parity bound"
        if not broken
        else "outside the bound: " + ", ".join(f"{m} {p}" for m, p in broken)
    )
    summary = (
        f"On {payload['device']} (torch {payload['torch']}), the shipped model on "
        f"{payload['views']} rendered views of the demo's part at {payload['size']} px, "
        f"{payload['passes']} passes, {payload['model_batch']} passes per model call, median "
        f"of {payload['repeats']} calls after a warm-up. Parity gap: the largest difference "
        "of any map pixel or score from the CPU's float32 detection of the same "
        f"{payload['parity_images']} images, in units of each CPU map's maximum (bound "
        f"{PARITY_RTOL:g}); verdicts at the median CPU score as threshold: {held}."
    )
    if payload.get("partial"):
        summary += " The run was stopped at its session's deadline: these are the rows it measured."
    return markdown_table(SHIPPED_HEADERS, rows), summary


def numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def names(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("random", "shipped"), default="random")
    parser.add_argument("--preset", action="append", default=None, help="random: a preset")
    parser.add_argument(
        "--references",
        type=numbers,
        default=None,
        help="reference counts, e.g. 4,12 (random: one; default 4, shipped 4,12)",
    )
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=None, help="timed calls (30; shipped 3)")
    parser.add_argument("--device", default="cuda", help="cpu only to dry-run this script")
    parser.add_argument("--metric", type=names, help="shipped: metrics (fused,distance,compare)")
    parser.add_argument(
        "--precision",
        type=names,
        help="shipped: precisions (fp32,tf32,bf16 on CUDA; fp32 on the CPU)",
    )
    parser.add_argument(
        "--per-call", type=numbers, default=[1, 8, 32, 64], help="shipped: images per detect call"
    )
    parser.add_argument("--parity-images", type=int, default=8)
    parser.add_argument("--views", type=int, default=64, help="shipped: rendered queries")
    parser.add_argument("--size", type=int, help="shipped: render size (the model's)")
    parser.add_argument("--model-batch", type=int, help="passes per model call (1024; CPU 32)")
    parser.add_argument("--render", type=Path, help="shipped: keep the render in this folder")
    parser.add_argument("--json-out", type=Path, help="save the measured rows here")
    parser.add_argument("--from-json", type=Path, help="render a saved run instead")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument(
        "--section",
        help="shipped: the docs block to write (gpu-detect-shipped); a block that is not in "
        "the docs yet is added at the end of benchmarks.md, to be moved into place once",
    )
    args = parser.parse_args()
    if args.from_json:
        payload = json.loads(args.from_json.read_text())
    else:
        import torch

        on_gpu = args.device == "cuda"
        if on_gpu and not torch.cuda.is_available():
            raise SystemExit("no CUDA GPU is visible; this benchmark times GPU detection.")
        shipped = args.model == "shipped"
        args.references = args.references or ([4, 12] if shipped else [4])
        args.repeats = args.repeats or (3 if shipped else 30)
        common = {
            "device": torch.cuda.get_device_name(0) if on_gpu else DRY_RUN,
            "torch": torch.__version__,
            "passes": args.passes,
            "repeats": args.repeats,
        }
        if shipped:
            payload = measure_shipped(args, on_gpu, common)
        else:
            if len(args.references) != 1:
                parser.error("--model random takes one --references count")
            rows = [
                measure(
                    preset, precision, args.references[0], args.passes, args.repeats, args.device
                )
                for preset in args.preset or ["paper", "edge"]
                for precision in (("fp32", "bf16") if on_gpu else ("fp32",))
            ]
            payload = {**common, "references": args.references[0], "rows": rows}
        if args.json_out:
            args.json_out.write_text(json.dumps(payload, indent=1))
    table, summary = render(payload)
    print(table)
    print()
    print(summary)
    print_json_line("gpu_detect_speed", payload)
    broken = broken_rows(payload)
    for line in broken:
        print(line, file=sys.stderr)
    if args.write_docs:
        if payload["device"] == DRY_RUN:
            raise SystemExit("a CPU dry run is no GPU measurement; --write-docs renders GPU runs.")
        command = "python " + " ".join(sys.argv)
        machine = f"{payload['device']} (a lent GPU machine)"
        if payload.get("model") == "shipped":
            if not args.section:
                raise SystemExit("name the shipped model's block: --section gpu-detect-shipped")
            update_docs_section(args.section, f"{table}\n\n{summary}", command, machine)
        else:
            update_docs_section("gpu_detect_speed", f"{table}\n\n{summary}", command, machine)
    if broken:  # after the JSON and the table are kept: the run is a record either way
        raise SystemExit(f"{len(broken)} fp32 row(s) outside the parity bound (above).")


def broken_rows(payload: dict) -> list[str]:
    """The shipped grid's fp32 rows outside ``PARITY_RTOL`` (``broken_fp32_rows``); the
    random presets' table has no parity check."""
    if payload.get("model") != "shipped":
        return []
    from benchmarks.gpu_detect_shipped import broken_fp32_rows

    return broken_fp32_rows(payload["rows"])


if __name__ == "__main__":
    main()
