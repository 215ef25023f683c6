"""The ``compare`` metric on a line PC: a profile's comparator graphs, scored in numpy.

``LineCompareDetector`` answers the calls ``LineDetector`` answers (``detect``,
``detect_each``, ``scoring``...) from the two graphs ``methods.compare.export`` wrote: the
references' cells, upright and turned by quarter turns, are one bank made once; each
query's cells are compared with it and the per-cell scores are read, at their cells'
size, by the steps the torch metric reads them with (``reading.cell_detections``). Every
file is checked against the sha256 the profile records before a session opens it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from padformer_edge.deploy.sessions import (
    LINE_ONNXRUNTIME_HINT,
    LINE_OPENVINO_HINT,
    open_graphs,
)
from padformer_edge.deploy.verify import read_line_export
from padformer_edge.detect import numpy_ops
from padformer_edge.detect.array_ops import turned_bank
from padformer_edge.detect.detection import Detection, GroupedDetection
from padformer_edge.detect.numpy_ops import F32
from padformer_edge.detect.readout import Readout
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.compare.names import COMPARE_CELLS_GRAPH, COMPARE_GRAPH
from padformer_edge.methods.compare.reading import detect_cells

GRAPHS = (COMPARE_CELLS_GRAPH, COMPARE_GRAPH)


class LineCompareDetector(GroupedDetection):
    """Scores query images with a profile's comparator graphs and its references."""

    reads_passes = False
    cache_hit = False  # the bank is made from the references in a few CNN calls

    def __init__(
        self,
        folder: str | Path,
        files: dict[str, str],
        references: Sequence[np.ndarray],
        settings: DetectionSettings,
        *,
        fix: str = "export the profile again with padformer-edge profile export",
        threads: int = 1,
    ) -> None:
        runtime = settings.runtime
        hint = LINE_OPENVINO_HINT if runtime == "openvino" else LINE_ONNXRUNTIME_HINT
        self.folder, self.settings = Path(folder), settings
        record = read_line_export(self.folder, files, settings, GRAPHS, hint, fix, "compare")
        self.metric_name, self.scoring = "compare", record["signature"]
        self.input_size, self.sigma = int(record["input_size"]), float(record["sigma"])
        self.map_readout = self.score_readout = Readout(consistency_filter=False, sigma=self.sigma)
        self.turns = [int(turn) for turn in record["turns"]]
        self.max_batch = settings.max_batch
        self.sessions = open_graphs(runtime, self.folder, GRAPHS, threads, hint, settings.device)
        devices = {graph.device for graph in self.sessions.values()}
        self.device = "cuda" if devices == {"cuda"} else "cpu"
        self.bank = self.reference_bank(references)

    @property
    def images_per_call(self) -> int:
        return self.max_batch

    def cells(self, squares01: np.ndarray) -> np.ndarray:
        squares = np.ascontiguousarray(squares01, dtype=F32)
        return self.sessions[COMPARE_CELLS_GRAPH].run({"squares": squares})[0]

    def squares(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """``[B, 3, S, S]`` in [0, 1]: each RGB image squeezed to the comparator's size."""
        units = [numpy_ops.resize_square(numpy_ops.unit_image(i), self.input_size) for i in images]
        return np.concatenate(units)

    def reference_bank(self, references: Sequence[np.ndarray]) -> np.ndarray:
        """``scorer.reference_cells``' bank ``[1, R, C]``: upright, then turned."""
        if len(references) == 0:
            raise UserError(
                "no reference images were given; pass at least one good image of the product."
            )
        rows, _ = turned_bank(self.cells, self.squares(references), self.turns)
        return np.ascontiguousarray(rows[None], dtype=F32)

    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]:
        """Score every image (RGB ``uint8``, any size); one ``Detection`` per image."""
        from padformer_edge.detect.images import check_queries

        if len(images) == 0:
            return []
        check_queries(images)
        return detect_cells(self, images, self.squares, self.scores, self.input_size)

    def scores(self, squares: np.ndarray) -> np.ndarray:
        """``[B, h, w]`` per-cell scores of the squares against the references' bank."""
        cells = self.cells(squares)
        found = self.sessions[COMPARE_GRAPH].run({"cells": cells, "bank": self.bank})[0]
        return found.astype(F32)
