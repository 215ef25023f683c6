"""Where an exported query graph spends its time: per-operator totals from each runtime's
own profiler (onnxruntime's ``enable_profiling`` trace, OpenVINO's ``PERF_COUNT``).

Used by ``detect_speed.py --profile-graphs``. Totals are per run of the graph, summed over
the nodes of one operator type, so a reformulation of the model's export (a cheaper
resampling, fewer copies) shows up as a type that shrinks or disappears. Profiling adds
its own overhead per node, so the totals are for comparing types, not for timing.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np


def onnxruntime_op_totals(
    graph: Path, feeds: dict[str, np.ndarray], threads: int, runs: int
) -> Counter:
    """Milliseconds per run of ``graph`` on ``feeds`` by onnxruntime operator type (its
    kernels as the profile names them after graph optimisation, fused ones included)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.enable_profiling = True
    options.profile_file_prefix = str(Path(tempfile.mkdtemp(prefix="graph_profile_")) / "ort")
    session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    session.run(None, feeds)  # warm-up, in the trace too: dropped below
    for _ in range(runs):
        session.run(None, feeds)
    events = json.loads(Path(session.end_profiling()).read_text())
    kernels = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    per_run = len(kernels) // (runs + 1)
    totals: Counter = Counter()
    for event in kernels[per_run:]:
        totals[event["args"]["op_name"]] += event["dur"] / 1e3 / runs
    return totals


def openvino_op_totals(graph: Path, feeds: dict[str, np.ndarray], threads: int) -> Counter:
    """Milliseconds of one run of ``graph`` (IR) by OpenVINO node type, with the settings
    ``OpenVinoRunner`` compiles with (float32, one stream, latency) plus ``PERF_COUNT``."""
    import openvino as ov

    config = {
        "INFERENCE_NUM_THREADS": threads,
        "NUM_STREAMS": 1,
        "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "LATENCY",
        "ENABLE_CPU_PINNING": False,
        "PERF_COUNT": True,
    }
    request = ov.Core().compile_model(str(graph), "CPU", config).create_infer_request()
    request.infer(feeds)  # warm-up: the counters below are of the last inference
    request.infer(feeds)
    totals: Counter = Counter()
    for node in request.profiling_info:
        totals[node.node_type] += node.real_time.total_seconds() * 1e3
    return totals


def top_rows(runtime: str, references: int, totals: Counter, count: int) -> list[list]:
    """The ``count`` largest operator types as table rows, each with its share of the
    graph's profiled total, and the rest folded into one row."""
    whole = sum(totals.values())
    rows = [
        [runtime, references, op, ms, f"{ms / whole:.1%}"] for op, ms in totals.most_common(count)
    ]
    rest = whole - sum(row[3] for row in rows)
    rows.append([runtime, references, "(all other types)", rest, f"{rest / whole:.1%}"])
    return rows
