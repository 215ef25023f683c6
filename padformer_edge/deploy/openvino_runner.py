"""Runs exported graphs as OpenVINO IR on the CPU, with ``OnnxRunner``'s steps
(``onnx_runner.ExportRunner``).

The checks are the ONNX runner's (``check_export``: same weights, same settings, graph
bytes unchanged) plus the IR files' own sha256. The graphs open in float32
(``sessions.IrGraph``: OpenVINO's default precision on CPUs with bfloat16 units is bf16).
"""

from __future__ import annotations

from pathlib import Path

from padformer_edge.deploy.graphs import QUERY_GRAPH, REFERENCE_GRAPH, TERMS_GRAPH
from padformer_edge.deploy.onnx_runner import ExportRunner, check_export, check_graphs
from padformer_edge.deploy.openvino_export import MANIFEST_KEY
from padformer_edge.deploy.sessions import (
    OPENVINO_HINT,
    import_openvino,
    open_graphs,
    refuse_cuda_for_openvino,
)
from padformer_edge.errors import UserError
from padformer_edge.model.padformer import PADFormer


class OpenVinoRunner(ExportRunner):
    """The three exported graphs as OpenVINO compiled models, for one model's weights.

    ``threads`` is OpenVINO's inference thread count (the Detector passes torch's, as it
    does to onnxruntime). One stream and no core pinning: a line PC runs one detection at
    a time and shares its cores with decoding and the page.
    """

    def __init__(
        self, folder: str | Path, model: PADFormer, threads: int = 1, device: str = "cpu"
    ) -> None:
        refuse_cuda_for_openvino(device)
        ov = import_openvino()
        self.folder = Path(folder)
        manifest = check_export(self.folder, model)
        if MANIFEST_KEY not in manifest:
            raise UserError(
                f"{self.folder} holds ONNX graphs only; run padformer-edge export MODEL "
                f"--format openvino --out {self.folder} for the OpenVINO runtime."
            )
        check_graphs(self.folder, manifest[MANIFEST_KEY]["graphs"])
        names = (REFERENCE_GRAPH, TERMS_GRAPH, QUERY_GRAPH)
        graphs = open_graphs("openvino", self.folder, names, threads, OPENVINO_HINT, device)
        # the reference terms as OpenVINO tensors over their arrays: no query call copies them
        super().__init__(graphs, manifest, lambda array: ov.Tensor(array, shared_memory=True))
