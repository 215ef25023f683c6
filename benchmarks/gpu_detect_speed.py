"""Detection time per image on a CUDA GPU, for the paper and edge presets.

One query scored against 4 references with 15 passes (the paper's inference settings),
references encoded once outside the timed call, as the daemon does. Times are wall-clock
milliseconds with the GPU synchronised before the clock stops (the median of the
repeats after warm-up calls); weights are random, which does not change the work.

It runs where a GPU is (``python3 training/gpu_session.py --detect-speed``) and saves
its rows as JSON; the docs block is written here from that file, so no figure is typed
by hand:

    python3 benchmarks/gpu_detect_speed.py --json-out $OUT/gpu_detect_speed.json
    python benchmarks/gpu_detect_speed.py --from-json gpu_detect_speed.json --write-docs
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section

HEADERS = ["preset", "input px", "precision", "ms per image", "images/s"]


def measure(
    preset: str, precision: str, references: int, passes: int, repeats: int, device: str
) -> dict:
    import torch

    def synchronize() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    from benchmarks.common import smooth_photo
    from padformer_edge.detect.detector import Detector
    from padformer_edge.detect.settings import DetectionSettings
    from padformer_edge.model.padformer import build_model

    torch.manual_seed(0)
    model = build_model(preset).eval()
    size = model.config.img_size
    refs = [smooth_photo(size, seed) for seed in range(references)]
    query = smooth_photo(size, seed=100)
    settings = DetectionSettings(
        passes=passes, device=device, precision=precision, max_batch=passes
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


def render(payload: dict) -> tuple[str, str]:
    rows = [
        [r["preset"], r["size"], r["precision"], r["ms"], 1000 / r["ms"]] for r in payload["rows"]
    ]
    summary = (
        f"On {payload['device']} (torch {payload['torch']}), {payload['references']} "
        f"references, {payload['passes']} passes, one image per call, median of "
        f"{payload['repeats']} calls."
    )
    return markdown_table(HEADERS, rows), summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", default=None)
    parser.add_argument("--references", type=int, default=4)
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--device", default="cuda", help="cpu only to dry-run this script")
    parser.add_argument("--json-out", type=Path, help="save the measured rows here")
    parser.add_argument("--from-json", type=Path, help="render a saved run instead")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    if args.from_json:
        payload = json.loads(args.from_json.read_text())
    else:
        import torch

        on_gpu = args.device == "cuda"
        if on_gpu and not torch.cuda.is_available():
            raise SystemExit("no CUDA GPU is visible; this benchmark times GPU detection.")
        rows = [
            measure(preset, precision, args.references, args.passes, args.repeats, args.device)
            for preset in args.preset or ["paper", "edge"]
            for precision in (("fp32", "bf16") if on_gpu else ("fp32",))
        ]
        payload = {
            "device": torch.cuda.get_device_name(0) if on_gpu else "CPU (dry run)",
            "torch": torch.__version__,
            "references": args.references,
            "passes": args.passes,
            "repeats": args.repeats,
            "rows": rows,
        }
        if args.json_out:
            args.json_out.write_text(json.dumps(payload, indent=1))
    table, summary = render(payload)
    print(table)
    print()
    print(summary)
    print_json_line("gpu_detect_speed", payload)
    if args.write_docs:
        command = "python " + " ".join(sys.argv)
        machine = f"{payload['device']} (a lent GPU machine)"
        update_docs_section("gpu_detect_speed", f"{table}\n\n{summary}", command, machine)


if __name__ == "__main__":
    main()
