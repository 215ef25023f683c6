"""Runs exported graphs as OpenVINO IR on the CPU, with ``OnnxRunner``'s interface.

The checks are the ONNX runner's (``check_export``: same weights, same settings, graph
bytes unchanged) plus the IR files' own sha256. The graphs open in float32
(``sessions.IrGraph``: OpenVINO's default precision on CPUs with bfloat16 units is bf16).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from padformer_edge.deploy.graphs import QUERY_GRAPH, REFERENCE_GRAPH, TERMS_GRAPH
from padformer_edge.deploy.onnx_runner import (
    check_export,
    check_graphs,
    pixels_and_features,
    query_feeds,
    reads_targets,
    target_feeds,
)
from padformer_edge.deploy.openvino_export import MANIFEST_KEY
from padformer_edge.deploy.sessions import (
    IrGraph,
    import_openvino,
    ir_name,
    refuse_cuda_for_openvino,
)
from padformer_edge.errors import UserError
from padformer_edge.model.padformer import PADFormer


class OpenVinoRunner:
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
        self.term_names: list[str] = list(manifest["term_names"])
        self.reads_targets = reads_targets(manifest)
        self.ov = ov

        def compiled(graph: str) -> IrGraph:
            return IrGraph(ov, self.folder / ir_name(graph), threads)

        self.references = compiled(REFERENCE_GRAPH)
        self.terms = compiled(TERMS_GRAPH)
        self.query = compiled(QUERY_GRAPH)
        self.reference_arrays: dict[str, np.ndarray] = {}
        self.reference_feeds: dict[str, object] | None = None

    def encode_references(self, references: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Normalised references [N, 3, S, S] -> (encoder features [1, N, M, E], the
        references' CNN features [1, N, M, F] for a pointer model, else None)."""
        images = np.ascontiguousarray(references, dtype=np.float32)
        found = self.references.run({"references": images})
        return found[0], found[1] if self.reads_targets else None

    def use_features(self, features: np.ndarray, targets: np.ndarray | None = None) -> None:
        """Derive and keep the reference terms every later ``reconstruct`` reads (and a
        pointer model's ``targets``, which it reads as they are)."""
        features = np.ascontiguousarray(features, dtype=np.float32)
        terms = self.terms.run({"features": features})
        names = ["ref_tokens", *self.term_names]
        # kept as OpenVINO tensors over these arrays, so no query call copies them again
        self.reference_arrays = dict(zip(names, terms, strict=True))
        self.reference_arrays.update(target_feeds(self.reads_targets, targets))
        self.reference_feeds = {
            name: self.ov.Tensor(array, shared_memory=True)
            for name, array in self.reference_arrays.items()
        }

    def reconstruct(
        self, rows: np.ndarray, ids_keep: np.ndarray, ids_restore: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(normalised pixels [B, 3, S, S], predicted features [B, M, F] or None) for
        query rows [B, 3, S, S] (one per pass) and their masks as ``mask_indices``."""
        feeds = query_feeds(rows, ids_keep, ids_restore, self.reference_feeds)
        return pixels_and_features(self.query.run(feeds))
