"""How fast is one detection, and how close does it come to the machine's matmul peak?

Three measurements in one run, for one query scored with N references and I passes:

(a) naive: the passes in a Python loop, the references encoded again for every pass, as
    a direct transcription of the paper's inference paragraph would do it;
(b) the ``Detector``: references encoded once (outside the timed call) and all passes in
    one batch;
(c) the FLOPs of one detection (and of a naive one), counted by
    ``torch.utils.flop_counter``, and the peak rate of a large ``torch.mm`` on the same
    threads; ``FLOPs / peak`` is the time a perfect implementation would need, so
    ``time(b) / (FLOPs / peak)`` says how far (b) is from the hardware limit.

Both variants use the same masks and the same scoring code, so their maps must agree;
the script checks that before it reports a speed-up.

Times are CPU seconds of this process (see ``timed``), so other jobs on a shared machine
move them little.

    python benchmarks/detect_speed.py --preset small --write-docs

With ``--runtimes`` it instead times the ``Detector`` on each runtime (torch, and
onnxruntime and OpenVINO on graphs exported for the run) and the torch-free
``LineDetector`` a line install runs (numpy scoring), for every thread count in
``--thread-counts`` and reference count in ``--reference-counts``, after checking that
every runtime gives torch's score (1e-4 relative):

    python benchmarks/detect_speed.py --preset edge --runtimes --thread-counts 1,2 \
        --reference-counts 4,12

With ``--profile-graphs`` it instead profiles the exported query graph alone, per operator
type, in onnxruntime and OpenVINO (``graph_profile``), for each reference count:

    python benchmarks/detect_speed.py --preset edge --profile-graphs --thread-counts 1 \
        --reference-counts 4,12

With ``--compare-map`` it instead times the default ``compare`` score's map drawn at the
frame's size against carried at its cells' size, for each of ``--sizes``
(``compare_map_speed``):

    python benchmarks/detect_speed.py --compare-map --sizes 224x224,1024x1280,2048x2448
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# Idle OpenMP threads must sleep rather than spin, or CPU time would count the spinning;
# the OpenMP runtime reads this once, when torch loads it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    count_flops,
    interleaved,
    markdown_table,
    print_json_line,
    smooth_photo,
    timed,
    update_docs_section,
)
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.devices.runtimes import RUNTIMES
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge.methods.padformer.passes import score_query
from padformer_edge.model.padformer import build_model


@torch.inference_mode()
def naive_detect(detector: Detector, references: list[np.ndarray], query: np.ndarray):
    """One detection the slow way: a Python loop over passes, references re-encoded in it."""
    model = detector.model
    refs = torch.stack([detector.to_model_input(image) for image in references]).unsqueeze(0)
    query_model = detector.to_model_input(query).unsqueeze(0)
    passes, features = [], []
    for mask in detector.masks:
        cache = model.encode_references(refs)
        recon = model.reconstruct_all(query_model, cache, mask.unsqueeze(0))
        passes.append(model.denormalize(recon.pixels).clamp(0.0, 1.0))
        if recon.features is not None:
            features.append(recon.features)
    full = torch.from_numpy(query).permute(2, 0, 1).float().div(255.0).unsqueeze(0)
    predicted = torch.cat(features) if features else None
    return score_query(
        detector.metric, full, query_model, torch.cat(passes), predicted, detector.pass_weights
    )


def patchcore_seconds(references: list[np.ndarray], query: np.ndarray, repeats: int) -> tuple:
    """(configuration, CPU s per scored image) of PatchCore as validated (its memory bank
    built outside the timed call, as the Detector's reference encodings are)."""
    from benchmarks.quality import validated_choices
    from padformer_edge_training.evaluation.patchcore import PatchCoreScorer, parse_config

    config = validated_choices()["patchcore"]
    scorer = PatchCoreScorer(*parse_config(config))
    scorer.prepare(references)
    return config, timed(lambda: scorer.score([query]), repeats)[0]


def verdict(ok: bool) -> str:
    return "met" if ok else "not met"


def matmul_peak(size: int, repeats: int) -> float:
    """FLOP per CPU second of a square float32 ``torch.mm``: what these cores can do."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    return 2 * size**3 / timed(lambda: torch.mm(a, b), repeats)[0]


def counts(text: str) -> list[int]:
    """``1,2`` -> [1, 2]: a comma-separated list of positive counts."""
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of positive counts like 1,2")
    return values


TARGET_SPEEDUP = 1.5  # issue 33: the fastest runtime against torch, per image


def line_profiles(
    model: torch.nn.Module,
    references: list[np.ndarray],
    settings: DetectionSettings,
    folder: Path,
) -> Path:
    """Profiles of ``model`` and ``references`` on each graph runtime, as ``profile
    create`` makes them (``line-RUNTIME-REFS`` under the returned folder), for the
    ``LineDetector`` rows."""
    import cv2

    from padformer_edge.devices.runtimes import GRAPH_RUNTIMES
    from padformer_edge.model.checkpoint import save_checkpoint
    from padformer_edge.profiles.create import create_profile

    folder.mkdir(parents=True, exist_ok=True)
    checkpoint = folder / "model.safetensors"
    save_checkpoint(checkpoint, model)
    pictures = folder / f"references-{len(references)}"
    pictures.mkdir(exist_ok=True)
    for index, image in enumerate(references):  # PNG: the same pixels come back
        cv2.imwrite(str(pictures / f"{index}.png"), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    profiles = folder / "profiles"
    for runtime in GRAPH_RUNTIMES:
        name = line_profile_name(runtime, len(references))
        if not (profiles / name).is_dir():
            create_profile(
                profiles, name, checkpoint, pictures, settings=settings.replace(runtime=runtime)
            )
    return profiles


def line_profile_name(runtime: str, references: int) -> str:
    return f"line-{runtime}-{references}"


def line_timings(
    profiles: Path, references: int, threads: int, size: int, repeats: int
) -> dict[str, dict]:
    """``benchmarks/line_timing.py`` in a child process without torch, as on a line PC,
    with ``threads`` as its ``OMP_NUM_THREADS``: by row name, the times and score of each
    graph runtime's ``LineDetector``. (In this process, where torch is loaded, numpy's
    BLAS threads and torch's competed and the numpy scoring ran several times slower than
    it does where torch is absent.)"""
    from padformer_edge.devices.runtimes import GRAPH_RUNTIMES

    names = {line_profile_name(r, references): f"{LINE_ROW}{r}" for r in GRAPH_RUNTIMES}
    command = [sys.executable, str(Path(__file__).with_name("line_timing.py"))]
    command += ["--profiles", str(profiles), "--size", str(size), "--repeats", str(repeats)]
    command += ["--query-seed", str(QUERY_SEED)]
    for name in names:
        command += ["--profile", name]
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(root)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"line_timing.py failed: {done.stderr.strip()[-2000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])["rows"]
    return {names[name]: row for name, row in found.items()}


QUERY_SEED = 100
LINE_ROW = "line: "
"""Row-name prefix of the torch-free ``LineDetector`` rows."""


def runtime_rows(args: argparse.Namespace) -> None:
    """CPU s per detection on each runtime, thread count and reference count (``--runtimes``).

    The graphs are exported once per run from the same random-weight model (``--format
    openvino``: the ONNX graphs and their IR, one folder for both runtimes); each row builds
    its own ``Detector`` after setting torch's thread count, which the runners also take.
    Before timing, every runtime's score on the query must agree with torch's to 1e-4
    relative, so a fast but wrong export cannot make the table. The runtimes are timed in
    turns (``interleaved``). Besides the whole detection,
    the passes alone (``Detector.reconstruct``, the only step a runtime changes) are timed
    in CPU seconds, so the table shows how much of the time the runtime can move at all.
    """
    from padformer_edge.deploy.openvino_export import export_openvino
    from padformer_edge.deploy.runners import open_runner
    from padformer_edge.detect.images import to_unit_tensor

    torch.manual_seed(0)
    model = build_model(args.preset).eval()
    size = model.config.img_size
    query = smooth_photo(size, seed=QUERY_SEED)
    settings = DetectionSettings(
        metric="auto", passes=args.passes, device="cpu", max_batch=args.passes
    )
    exported = Path(tempfile.mkdtemp(prefix="detect_speed_graphs_"))
    export_openvino(model, exported)
    rows, records, best = [], [], {}
    for refs in args.reference_counts:
        references = [smooth_photo(size, seed) for seed in range(refs)]
        for threads in args.thread_counts:
            torch.set_num_threads(threads)
            detectors = {
                runtime: Detector(
                    model,
                    references,
                    settings.replace(runtime=runtime),
                    runner=None if runtime == "torch" else open_runner(model, runtime, exported),
                )
                for runtime in RUNTIMES
            }
            scores = {r: d.detect([query])[0].score for r, d in detectors.items()}
            calls = {}
            for runtime, detector in detectors.items():
                model_in = detector.fit(to_unit_tensor(query, detector.device).unsqueeze(0))
                calls[runtime, "detect"] = lambda d=detector: d.detect([query])
                calls[runtime, "passes"] = lambda d=detector, q=model_in: d.reconstruct(q)
            measured = interleaved(calls, args.repeats)
            seconds = {r: measured[r, "detect"] for r in RUNTIMES}
            passes_cpu = {r: measured[r, "passes"][0] for r in RUNTIMES}
            profiles = line_profiles(model, references, settings, exported / "line")
            line = line_timings(profiles, refs, threads, size, args.repeats)
            for name, row in line.items():
                scores[name] = row["score"]
                seconds[name] = (row["cpu_s"], row["wall_s"])
                passes_cpu[name] = row["passes_cpu_s"]
            names = [*RUNTIMES, *line]
            gaps = {r: abs(scores[r] - scores["torch"]) / abs(scores["torch"]) for r in names}
            for runtime, gap in gaps.items():
                if gap > 1e-4:
                    raise SystemExit(f"{runtime}'s score differs from torch's by {gap:.2e}")
            for runtime in names:
                cpu_s, wall_s = seconds[runtime]
                speedup = seconds["torch"][0] / cpu_s
                passes_s = passes_cpu[runtime]
                passes_speedup = passes_cpu["torch"] / passes_s
                rest_s = max(0.0, cpu_s - passes_s)
                rows.append(
                    [runtime, threads, refs, cpu_s, wall_s, passes_s, rest_s, passes_speedup,
                     speedup]
                )  # fmt: skip
                records.append(
                    {"runtime": runtime, "threads": threads, "references": refs,
                     "cpu_s": cpu_s, "wall_s": wall_s, "passes_cpu_s": passes_s,
                     "scoring_cpu_s": rest_s, "passes_speedup_over_torch": passes_speedup,
                     "speedup_over_torch": speedup, "score_gap": gaps[runtime]}
                )  # fmt: skip
                if runtime != "torch":
                    best[threads, refs] = max(
                        best.get((threads, refs), (0.0, "")), (speedup, runtime)
                    )
    headers = ["runtime", "threads", "references", "CPU s per detection", "wall s (best)"]
    headers += ["passes CPU s", "rest CPU s (scoring, prepare)", "passes speed-up"]
    headers += ["CPU speed-up over torch"]
    table = markdown_table(headers, rows)
    verdicts = "; ".join(
        f"{threads} thread(s), {refs} references: {runtime} {speedup:.2f}x "
        f"({verdict(speedup >= TARGET_SPEEDUP)})"
        for (threads, refs), (speedup, runtime) in best.items()
    )
    summary = (
        f"{args.preset} preset ({size} px), {args.passes} passes, random weights, "
        f"{args.repeats} repeats; onnxruntime and OpenVINO run graphs exported at opset "
        f"{json_opset(exported)} (OpenVINO from its float32 IR). On the torch, onnxruntime "
        f"and openvino rows the torch Detector prepares and scores; the '{LINE_ROW}' rows "
        f"are what a torch-free line install runs: a profile's graphs (made by profile "
        f"create from the same model and references) with the preparing and the scoring "
        f"in numpy and OpenCV (LineDetector), timed in a process of their own without "
        f"torch, as on a line PC, after the other rows. Fastest exported runtime against "
        f"torch, per detection (target {TARGET_SPEEDUP}x): {verdicts}."
    )
    print(table)
    print()
    print(summary)
    print_json_line(
        "detect_speed_runtimes",
        {"preset": args.preset, "passes": args.passes, "repeats": args.repeats, "rows": records},
    )
    if args.write_docs:
        update_docs_section(f"detect_speed_runtimes_{args.preset}", f"{table}\n\n{summary}")


def graph_profile_rows(args: argparse.Namespace) -> None:
    """Per-operator totals of the exported query graph (``--profile-graphs``): one batch
    of ``--passes`` passes of the query, for each reference count, at the first thread
    count, from onnxruntime's profiler and OpenVINO's ``PERF_COUNT`` (``graph_profile``).
    The feeds are the ones the ``Detector`` makes, so the graph runs what a detection runs.
    """
    from benchmarks.graph_profile import onnxruntime_op_totals, openvino_op_totals, top_rows
    from padformer_edge.deploy.graphs import QUERY_GRAPH
    from padformer_edge.deploy.onnx_runner import query_feeds
    from padformer_edge.deploy.openvino_export import export_openvino, ir_name
    from padformer_edge.deploy.runners import open_runner

    torch.manual_seed(0)
    model = build_model(args.preset).eval()
    size = model.config.img_size
    threads = args.thread_counts[0]
    torch.set_num_threads(threads)
    settings = DetectionSettings(
        metric="auto",
        passes=args.passes,
        device="cpu",
        max_batch=args.passes,
        runtime="onnxruntime",
    )
    exported = Path(tempfile.mkdtemp(prefix="detect_speed_profile_"))
    export_openvino(model, exported)
    query = smooth_photo(size, seed=100)
    rows, records = [], []
    for refs in args.reference_counts:
        references = [smooth_photo(size, seed) for seed in range(refs)]
        runner = open_runner(model, settings.runtime, exported)
        detector = Detector(model, references, settings, runner=runner)
        assert detector.runner is not None and detector.mask_ids is not None
        passes = np.zeros(args.passes, dtype=np.int64)  # every row is the one query
        model_in = detector.to_model_input(query).unsqueeze(0).numpy()[passes]
        ids_keep, ids_restore = detector.mask_ids
        feeds = query_feeds(model_in, ids_keep, ids_restore, detector.runner.reference_feeds)
        for runtime, totals in (
            ("onnxruntime", onnxruntime_op_totals(exported / QUERY_GRAPH, feeds, threads, 3)),
            ("openvino", openvino_op_totals(exported / ir_name(QUERY_GRAPH), feeds, threads)),
        ):
            rows += top_rows(runtime, refs, totals, args.profile_top)
            records.append({"runtime": runtime, "references": refs, "ms_by_op": dict(totals)})
    table = markdown_table(
        ["runtime", "references", "operator type", "ms per run (profiled)", "share"], rows
    )
    summary = (
        f"{args.preset} preset ({size} px), query graph alone, {args.passes} passes in one "
        f"batch, {threads} thread(s), random weights; the {args.profile_top} largest "
        "operator types per runtime and reference count. Profiling adds overhead per node: "
        "compare the shares, not the times with the table above."
    )
    print(table)
    print()
    print(summary)
    print_json_line(
        "detect_speed_graph_profile",
        {"preset": args.preset, "passes": args.passes, "threads": threads, "rows": records},
    )
    if args.write_docs:
        update_docs_section(f"detect_speed_graph_profile_{args.preset}", f"{table}\n\n{summary}")


def json_opset(folder: Path) -> int:
    """The opset the manifest in ``folder`` records."""
    import json

    return int(json.loads((folder / "manifest.json").read_text())["opset"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--references", type=int, default=4)
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads; 1 keeps numbers stable on a shared machine",
    )
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument(
        "--runtimes", action="store_true", help="time torch against onnxruntime instead"
    )
    parser.add_argument("--thread-counts", type=counts, default=[1, 2], help="with --runtimes")
    parser.add_argument("--reference-counts", type=counts, default=[4, 12], help="with --runtimes")
    parser.add_argument(
        "--profile-graphs",
        action="store_true",
        help="per-operator totals of the exported query graph instead (onnxruntime, OpenVINO)",
    )
    parser.add_argument("--profile-top", type=int, default=8, help="with --profile-graphs")
    parser.add_argument(
        "--compare-map",
        action="store_true",
        help="the compare map drawn at the frame's size against carried at the cells' instead",
    )
    parser.add_argument("--sizes", default="224x224,1024x1280,2048x2448", help="with --compare-map")
    args = parser.parse_args()
    if args.compare_map:
        from benchmarks.compare_map_speed import print_compare_map, sizes_of

        print_compare_map(sizes_of(args.sizes), args.references, args.repeats)
        return
    if args.profile_graphs:
        graph_profile_rows(args)
        return
    if args.runtimes:
        runtime_rows(args)
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    model = build_model(args.preset).eval()
    size = model.config.img_size
    references = [smooth_photo(size, seed) for seed in range(args.references)]
    query = smooth_photo(size, seed=100)
    settings = DetectionSettings(
        metric="auto", passes=args.passes, device="cpu", max_batch=args.passes
    )
    detector = Detector(model, references, settings)

    fast = detector.detect([query])[0]
    slow = naive_detect(detector, references, query)
    np.testing.assert_allclose(fast.anomaly_map, slow.anomaly_map.numpy(), rtol=1e-3, atol=1e-3)

    naive_s, naive_wall = timed(lambda: naive_detect(detector, references, query), args.repeats)
    detector_s, detector_wall = timed(lambda: detector.detect([query]), args.repeats)
    naive_flops = count_flops(lambda: naive_detect(detector, references, query))
    flops = count_flops(lambda: detector.detect([query]))
    peak = matmul_peak(2048, args.repeats)
    ideal_s = flops / peak

    rows = [
        [
            "(a) naive: pass loop, references re-encoded",
            naive_s,
            naive_flops / 1e9,
            f"{naive_flops / naive_s / peak:.1%}",
            1.0,
        ],
        [
            "(b) Detector: cached references, one batch",
            detector_s,
            flops / 1e9,
            f"{flops / detector_s / peak:.1%}",
            naive_s / detector_s,
        ],
        [
            "(c) ideal: (b)'s FLOPs at the matmul peak",
            ideal_s,
            flops / 1e9,
            "100.0%",
            naive_s / ideal_s,
        ],
    ]
    headers = ["variant", "CPU s per detection", "GFLOP", "of matmul peak", "speed-up over (a)"]
    table = markdown_table(headers, rows)
    speedup, over_ideal = naive_s / detector_s, detector_s / ideal_s
    summary = (
        f"{args.preset} preset ({size} px), {args.references} references, {args.passes} "
        f"passes, {args.threads} thread(s); matmul peak {peak / 1e9:.3g} GFLOP/s. "
        f"(b) is {speedup:.2f}x faster than (a) (target 5x: {verdict(speedup >= 5)}) and takes "
        f"{over_ideal:.2f}x the ideal time (target at most 3x: {verdict(over_ideal <= 3)}). "
        f"Removing repeated work alone gives at most {naive_flops / flops:.2f}x (the FLOP "
        "ratio of (a) to (b)), the rest is batching; even at the matmul peak (b) could be "
        f"only {naive_s / ideal_s:.2f}x faster than (a) with this model's FLOPs."
    )
    section, versus_patchcore = "detect_speed", {}
    if model.config.cnn_tokens:
        config, patchcore_s = patchcore_seconds(references, query, args.repeats)
        ratio = detector_s / patchcore_s
        summary += (
            f" PatchCore {config} (the validated configuration) scores the same query against "
            f"the same references in {patchcore_s:.3f} CPU s, so (b) takes {ratio:.1f}x "
            f"PatchCore's time (target at most 2x: {verdict(ratio <= 2)})."
        )
        section = f"detect_speed_{args.preset}"
        versus_patchcore = {"patchcore": config, "patchcore_s": patchcore_s, "ratio": ratio}
    print(table)
    print()
    print(summary)
    print_json_line(
        "detect_speed",
        {
            "preset": args.preset,
            "references": args.references,
            "passes": args.passes,
            "threads": args.threads,
            "naive_s": naive_s,
            "detector_s": detector_s,
            "naive_wall_s": naive_wall,
            "detector_wall_s": detector_wall,
            "ideal_s": ideal_s,
            "speedup": speedup,
            "time_over_ideal": over_ideal,
            "naive_gflop": naive_flops / 1e9,
            "gflop": flops / 1e9,
            "peak_gflops": peak / 1e9,
            "fraction_of_peak": flops / detector_s / peak,
            **versus_patchcore,
        },
    )
    if args.write_docs:
        update_docs_section(section, f"{table}\n\n{summary}")


if __name__ == "__main__":
    main()
