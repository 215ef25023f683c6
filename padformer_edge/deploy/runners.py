"""Opening a model's exported graphs in the runtime a detection asks for.

The torch ``Detector`` runs the graphs through the ``GraphRunner`` it is handed; the
runners live here, in the export package, which builds on scoring rather than the
reverse, so the callers that know the graphs' folder open the runner and pass it in.
"""

from __future__ import annotations

from pathlib import Path

import torch

from padformer_edge.deploy.graph_runner import graphs_needed
from padformer_edge.deploy.onnx_runner import OnnxRunner
from padformer_edge.deploy.openvino_runner import OpenVinoRunner
from padformer_edge.errors import UserError
from padformer_edge.model.padformer import PADFormer


def open_runner(
    model: PADFormer, runtime: str, exported: str | Path | None, device: str = "cpu"
) -> OnnxRunner | OpenVinoRunner:
    """The ``runtime``'s runner for ``model``'s exported graphs in ``exported``, or the
    sentence saying why there is none (no folder given, the runtime missing, graphs of
    other weights). ``device`` is where the graphs run (onnxruntime may use a CUDA GPU);
    the torch steps around them stay on the CPU. The runtime's threads follow torch's, so
    one setting (``OMP_NUM_THREADS``, ``torch.set_num_threads``) governs both."""
    if exported is None:
        raise UserError(graphs_needed(runtime))
    threads = torch.get_num_threads()
    if runtime == "openvino":
        return OpenVinoRunner(exported, model, threads=threads, device=device)
    return OnnxRunner(exported, model, threads=threads, device=device)
