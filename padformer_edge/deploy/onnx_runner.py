"""Runs exported graphs with onnxruntime in place of the torch model's own forward pass
(``ExportRunner``: the steps both runtimes take; ``openvino_runner`` opens the IR).

The torch ``Detector`` still prepares inputs and scores in torch; this runner only
replaces ``encode_references`` and ``reconstruct_all``, the work that dominates a
detection (a profile's graphs run torch-free in ``line_detector`` instead). It
refuses graphs exported from other weights than the model it is given (the manifest's
``weights_sha256``) or with other model settings (its ``config``), and graph files whose
bytes changed since export, because each would score with a different model than the one
the command names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from padformer_edge.deploy.export import FORMAT_TAG, MANIFEST, config_record, weights_sha256
from padformer_edge.deploy.graphs import QUERY_GRAPH, REFERENCE_GRAPH, TERMS_GRAPH
from padformer_edge.deploy.sessions import Graph, open_graphs
from padformer_edge.deploy.sessions import import_onnxruntime as import_runtime
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.model.checkpoint import split_legacy_scoring
from padformer_edge.model.padformer import PADFormer

INSTALL_HINT = "pip install 'padformer-edge[onnx]'"


def import_onnxruntime() -> Any:
    """onnxruntime, or the one sentence that says how to install the export extra."""
    return import_runtime(INSTALL_HINT)


def read_manifest(folder: Path) -> dict[str, Any]:
    """The export's manifest, or a UserError saying how to make one."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(
            f"{folder} holds no exported graphs ({MANIFEST} is missing); run "
            f"padformer-edge export MODEL --format onnx --out {folder}."
        ) from None
    except (OSError, ValueError) as err:
        raise UserError(f"{path} cannot be read ({err}); export the model again.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_TAG:
        raise UserError(f"{path} is not a {FORMAT_TAG} manifest; export the model again.")
    return manifest


def check_export(folder: Path, model: PADFormer) -> dict[str, Any]:
    """The manifest of ``folder``'s export once it is proven to be ``model``'s: the same
    weights (``weights_sha256``), the same settings (``config``) and graph files whose
    bytes have not changed since export. Every runtime that reads an export checks this."""
    manifest = read_manifest(folder)
    if manifest["weights_sha256"] != weights_sha256(model):
        raise UserError(
            f"the graphs in {folder} were exported from other weights than this "
            "model; export this checkpoint again with padformer-edge export."
        )
    # graphs exported before the fused score's settings left the model config still hold
    # them there; scoring runs outside the graphs, so they are not part of what they compute
    exported_config, _ = split_legacy_scoring(manifest["config"], {})
    if exported_config != config_record(model):
        raise UserError(
            f"the graphs in {folder} were exported with other model settings than "
            "this model's; export it again with padformer-edge export."
        )
    check_graphs(folder, manifest["graphs"])
    return manifest


def check_graphs(folder: Path, digests: dict[str, str]) -> None:
    """Each named file of ``folder`` exists with its recorded sha256, or a UserError."""
    for name, digest in digests.items():
        path = folder / name
        if not path.is_file() or file_sha256(path) != digest:
            raise UserError(
                f"{path} is missing or differs from its sha256 in {MANIFEST}; "
                "export the model again."
            )


def reads_targets(manifest: dict[str, Any]) -> bool:
    """Whether the export's query graph reads ``ref_targets`` (a pointer model's export;
    manifests written before pointer models exported have no ``reference_outputs``)."""
    return "ref_targets" in manifest.get("reference_outputs", ["features"])


def target_feeds(reads: bool, targets: np.ndarray | None) -> dict[str, np.ndarray]:
    """The query graph's ``ref_targets`` feed when it reads one, or nothing; a pointer
    model's graphs given no targets is a caller's bug, so it is a RuntimeError."""
    if not reads:
        return {}
    if targets is None:
        raise RuntimeError("this export reads the references' CNN features; pass targets.")
    return {"ref_targets": np.ascontiguousarray(targets, dtype=np.float32)}


def query_feeds(
    rows: np.ndarray,
    ids_keep: np.ndarray,
    ids_restore: np.ndarray,
    reference_feeds: dict[str, Any] | None,
) -> dict[str, Any]:
    """The query graph's inputs for one chunk of passes, in the dtypes it was exported
    with, beside the reference inputs ``use_features`` keeps (every runner's)."""
    if reference_feeds is None:
        raise RuntimeError("use_features must run before reconstruct.")
    return {
        "query": np.ascontiguousarray(rows, dtype=np.float32),
        "ids_keep": np.ascontiguousarray(ids_keep, dtype=np.int64),
        "ids_restore": np.ascontiguousarray(ids_restore, dtype=np.int64),
        **reference_feeds,
    }


def pixels_and_features(found: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """The query graph's outputs: pixels, and predicted features where the model has them."""
    return found[0], found[1] if len(found) > 1 else None


class ExportRunner:
    """A model's three exported graphs, opened in either runtime (``sessions.open_graphs``),
    run in place of the torch model: the steps both runtimes take, written once.

    ``share`` wraps the reference terms once for every later query call (OpenVINO keeps
    them as its own tensors over the arrays, so no call copies them again; onnxruntime
    reads the arrays as they are).
    """

    def __init__(
        self,
        graphs: dict[str, Graph],
        manifest: dict[str, Any],
        share: Callable[[np.ndarray], Any] = lambda array: array,
    ) -> None:
        self.term_names: list[str] = list(manifest["term_names"])
        self.reads_targets = reads_targets(manifest)
        self.references = graphs[REFERENCE_GRAPH]
        self.terms = graphs[TERMS_GRAPH]
        self.query = graphs[QUERY_GRAPH]
        self.share = share
        self.reference_arrays: dict[str, np.ndarray] = {}
        self.reference_feeds: dict[str, Any] | None = None

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
        self.reference_arrays = dict(zip(names, terms, strict=True))
        self.reference_arrays.update(target_feeds(self.reads_targets, targets))
        self.reference_feeds = {
            name: self.share(array) for name, array in self.reference_arrays.items()
        }

    def reconstruct(
        self, rows: np.ndarray, ids_keep: np.ndarray, ids_restore: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(normalised pixels [B, 3, S, S], predicted features [B, M, F] or None) for
        query rows [B, 3, S, S] (one per pass) and their masks as ``mask_indices``."""
        found = self.query.run(query_feeds(rows, ids_keep, ids_restore, self.reference_feeds))
        return pixels_and_features(found)


class OnnxRunner(ExportRunner):
    """The three exported graphs in onnxruntime sessions, for one model's weights.

    ``threads`` is onnxruntime's intra-op thread count (the Detector passes torch's, so
    one setting, ``OMP_NUM_THREADS`` or ``torch.set_num_threads``, governs both runtimes).
    """

    def __init__(
        self, folder: str | Path, model: PADFormer, threads: int = 1, device: str = "cpu"
    ) -> None:
        import_onnxruntime()  # a missing package is named before the folder is read
        self.folder = Path(folder)
        manifest = check_export(self.folder, model)
        self.outputs: list[str] = list(manifest["outputs"])
        names = (REFERENCE_GRAPH, TERMS_GRAPH, QUERY_GRAPH)
        graphs = open_graphs("onnxruntime", self.folder, names, threads, INSTALL_HINT, device)
        super().__init__(graphs, manifest)
