"""What PADFormer's torch ``Detector`` asks of a model's exported graphs in a runtime
(``GraphRunner``), and the sentence for a runtime asked for without them. Loads neither
torch nor a runtime."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class GraphRunner(Protocol):
    """A model's exported graphs in a runtime (``deploy.runners.open_runner`` opens the
    onnxruntime or OpenVINO one), as the detector runs them in place of the torch model.

    Declared here, beside the runners, and handed to the detector, which never opens
    one itself: the caller that knows the graphs' folder does."""

    def encode_references(self, references: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Normalised references [N, 3, S, S] -> (encoder features [1, N, M, E], the
        references' CNN features for a model that reads them, else None)."""
        ...

    def use_features(self, features: np.ndarray, targets: np.ndarray | None = None) -> None:
        """Compute the reference terms of these encodings for every later query."""
        ...

    def reconstruct(
        self, rows: np.ndarray, ids_keep: np.ndarray, ids_restore: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """One batch of masked passes -> (normalised pixels, predicted features or None)."""
        ...


def graphs_needed(runtime: str) -> str:
    """The sentence for a runtime that runs exported graphs when none were given: how to
    make them for a model, and how to store them in a profile."""
    fmt = "openvino" if runtime == "openvino" else "onnx"
    wanted = " --runtime openvino" if runtime == "openvino" else ""
    return (
        f"runtime {runtime} needs the model's exported graphs; run padformer-edge export "
        f"MODEL --format {fmt} --out DIR and pass detect --exported DIR, or store them in a "
        f"profile with padformer-edge profile export NAME{wanted}."
    )
