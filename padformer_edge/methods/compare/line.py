"""The ``compare`` metric on a line PC: a profile's comparator graphs, scored in numpy.

``LineCompareDetector`` answers the calls ``LineDetector`` answers (``detect``,
``detect_each``, ``scoring``...) from the two graphs ``methods.compare.export`` wrote: the
references' cells, upright and turned by quarter turns, are one bank made once; each
query's cells are compared with it and the per-cell scores, brought bilinearly to the
query's size, are read by the readout the torch metric reads them with
(``detect.readout``). Every file is checked against the sha256 the profile records before
a session opens it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from padformer_edge.deploy.sessions import (
    LINE_ONNXRUNTIME_HINT,
    LINE_OPENVINO_HINT,
    open_graphs,
)
from padformer_edge.deploy.verify import read_line_export
from padformer_edge.detect import arrays
from padformer_edge.detect.arrays import F32, flat_cells
from padformer_edge.detect.detection import Detection, GroupedDetection, call_timings
from padformer_edge.detect.readout import Readout, read_without_passes
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.compare.names import COMPARE_CELLS_GRAPH, COMPARE_GRAPH

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
        units = [arrays.resize_square(arrays.unit_image(i), self.input_size) for i in images]
        return np.concatenate(units)

    def reference_bank(self, references: Sequence[np.ndarray]) -> np.ndarray:
        """``comparison.reference_cells``' bank ``[1, R, C]``: upright, then turned."""
        if len(references) == 0:
            raise UserError(
                "no reference images were given; pass at least one good image of the product."
            )
        squares = self.squares(references)
        rows = [flat_cells(self.cells(squares))]
        for turn in self.turns:
            turned = np.ascontiguousarray(np.rot90(squares, turn, axes=(-2, -1)))
            rows.append(flat_cells(self.cells(turned)))
        return np.ascontiguousarray(np.concatenate(rows)[None], dtype=F32)

    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]:
        """Score every image (RGB ``uint8``, any size); one ``Detection`` per image."""
        from padformer_edge.detect.images import check_queries

        if len(images) == 0:
            return []
        check_queries(images)
        started = time.perf_counter()
        squares = self.squares(images)
        prepared = time.perf_counter()
        cells = self.cells(squares)
        scores = self.sessions[COMPARE_GRAPH].run({"cells": cells, "bank": self.bank})[0]
        compared = time.perf_counter()
        prepare_share = (prepared - started) / len(images)
        compare_share = (compared - prepared) / len(images)
        detections = []
        for image, cell_scores in zip(images, scores, strict=True):
            score_start = time.perf_counter()
            size = (int(image.shape[0]), int(image.shape[1]))
            upsampled = arrays.upsample(cell_scores.astype(F32), size)
            scored = read_without_passes(self, [upsampled], size, self.input_size)
            score_time = time.perf_counter() - score_start
            timings = call_timings(prepare_share, compare_share, score_time)
            amap = scored.anomaly_map.astype(F32)
            detections.append(Detection(scored.score, amap, [], [], timings))
        return detections
