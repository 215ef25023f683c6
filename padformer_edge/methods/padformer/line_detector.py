"""A profile's exported graphs run with onnxruntime or OpenVINO and scored in numpy: no torch.

``LineDetector`` answers the ``Detector``'s calls that the daemon, ``detect --profile``
and calibration make (``detect``, ``detect_each``, ``scoring``...), from the files a
profile export wrote (``line_export``). Every file is checked against the sha256
the profile records before a session opens it: a graph swapped on a line PC would score
with another model than the one the threshold was calibrated on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

from padformer_edge.deploy.cache_files import read_encodings, write_encodings
from padformer_edge.deploy.names import (
    CELLS_GRAPH,
    FEATURES_GRAPH,
    MANIFEST,
    PASSES_FILE,
    QUERY_GRAPH,
    REFERENCE_GRAPH,
    TERMS_GRAPH,
)
from padformer_edge.deploy.sessions import (
    LINE_ONNXRUNTIME_HINT,
    LINE_OPENVINO_HINT,
    open_graphs,
)
from padformer_edge.deploy.verify import read_line_export
from padformer_edge.detect import numpy_ops
from padformer_edge.detect.array_ops import QUARTER_TURNS, turned_bank
from padformer_edge.detect.detection import Detection, GroupedDetection, call_timings
from padformer_edge.detect.readout import ScoredQuery
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.padformer.distance_line import (
    reference_levels,
    reference_maps,
    score_distance,
)
from padformer_edge.methods.padformer.line_scoring import (
    QueryTargets,
    ScoringSpec,
    colour_target,
    score_passes,
)


class LineDetector(GroupedDetection):
    """Scores query images with a profile's exported graphs and its references.

    ``files`` are the export's file names and sha256s as the profile records them; the
    graphs run with ``settings.runtime`` (onnxruntime on the ``.onnx`` files, openvino on
    their IR, which ``profile export --runtime openvino`` adds beside them); ``cache``
    optionally names the profile's reference-encoding cache (path and key,
    ``methods.padformer.reference_cache``), read and written as numpy arrays.
    """

    device = "cpu"
    """Where the graphs run: ``cuda`` when onnxruntime runs them on a GPU; the scoring
    after them is numpy on the CPU either way."""

    def __init__(
        self,
        folder: str | Path,
        files: dict[str, str],
        references: Sequence[np.ndarray],
        settings: DetectionSettings,
        *,
        fix: str = "export the profile again with padformer-edge profile export",
        cache: tuple[Path, str] | None = None,
        threads: int = 1,
    ) -> None:
        runtime = settings.runtime
        hint = LINE_OPENVINO_HINT if runtime == "openvino" else LINE_ONNXRUNTIME_HINT
        graphs = [
            name
            for name in (REFERENCE_GRAPH, TERMS_GRAPH, QUERY_GRAPH, FEATURES_GRAPH, CELLS_GRAPH)
            if name in files
        ]
        self.folder, self.settings = Path(folder), settings
        record = read_line_export(self.folder, files, settings, graphs, hint, fix)
        self.spec = ScoringSpec.from_record(record)
        self.metric_name, self.scoring = self.spec.metric, self.spec.signature
        manifest = json.loads((self.folder / MANIFEST).read_text())
        self.term_names: list[str] = list(manifest["term_names"])
        # a pointer model's reference graph also yields the references' CNN features
        self.reference_outputs: list[str] = list(manifest.get("reference_outputs", ["features"]))
        self.passes, self.max_batch = settings.passes, settings.max_batch
        self.img_size = self.spec.img_size
        # numpy's BLAS on one thread while scoring: its products here are small blocks
        # (a query's cells against a cache-sized slice of the banks), which more threads
        # barely speed up, while BLAS threads that wait by spinning next to the runtime's
        # own threads made the scoring several times slower on two cores
        # (benchmarks/detect_speed.py --runtimes, line rows at 2 threads)
        self.blas = ThreadpoolController()
        self.sessions = open_graphs(
            runtime, self.folder, graphs, threads, hint, device=settings.device
        )
        devices = {graph.device for graph in self.sessions.values()}
        self.device = "cuda" if devices == {"cuda"} else "cpu"
        from safetensors.numpy import load_file

        passes = load_file(str(self.folder / PASSES_FILE))
        self.ids_keep, self.ids_restore = passes["ids_keep"], passes["ids_restore"]
        self.weights = passes["weights"]
        self.cache_hit = False
        encoded = self.reference_features(references, cache)
        feeds = self.sessions[TERMS_GRAPH].run({"features": encoded["features"]})
        self.reference_feeds = dict(zip(["ref_tokens", *self.term_names], feeds, strict=True))
        if "ref_targets" in encoded:  # read by the query graph as the references gave them
            self.reference_feeds["ref_targets"] = encoded["ref_targets"]
        self.banks = self.reference_banks(references) if self.spec.zoom else []
        self.fix_graph_shapes()

    def fix_graph_shapes(self) -> None:
        """OpenVINO's graphs compiled again for the shapes of a one-image call, which a
        line brings at almost every call (``IrGraph.fix_shapes``): the query graph for
        one image's passes and these references, the feature graphs for one query. Other
        shapes (a batch of several images, a third magnification) still run, on the
        dynamic compile. onnxruntime's sessions keep their dynamic shapes."""
        if self.settings.runtime != "openvino":
            return
        side = self.img_size
        if self.reads_passes and QUERY_GRAPH in self.sessions:
            rows = min(self.passes, self.max_batch)
            shapes = {
                "query": (rows, 3, side, side),
                "ids_keep": (rows, self.ids_keep.shape[1]),
                "ids_restore": (rows, self.ids_restore.shape[1]),
                **{name: feed.shape for name, feed in self.reference_feeds.items()},
            }
            self.sessions[QUERY_GRAPH].fix_shapes(shapes)  # type: ignore[attr-defined]
        if self.spec.reads_features and FEATURES_GRAPH in self.sessions:
            features = self.sessions[FEATURES_GRAPH]
            features.fix_shapes({"images": (1, 3, side, side)})  # type: ignore[attr-defined]
        if self.spec.zoom >= 2 and CELLS_GRAPH in self.sessions:
            cells = self.sessions[CELLS_GRAPH]
            cells.fix_shapes({"squares": (1, 3, 2 * side, 2 * side)})  # type: ignore[attr-defined]

    @property
    def reads_passes(self) -> bool:
        return self.spec.reads_passes

    @property
    def images_per_call(self) -> int:
        return max(1, self.max_batch // self.passes)

    def model_input(self, images01: np.ndarray) -> np.ndarray:
        """``[B, 3, H, W]`` in [0, 1] -> the model's normalised ``[B, 3, S, S]``."""
        return self.spec.normalize(numpy_ops.resize_square(images01, self.img_size))

    def reference_features(
        self, references: Sequence[np.ndarray], cache: tuple[Path, str] | None
    ) -> dict[str, np.ndarray]:
        """The reference graph's outputs by name (encoder features [1, N, M, E] and, for a
        pointer model, ``ref_targets`` [1, N, M, F]) from the cache when it holds them
        under its key, else from the reference graph (and then written to the cache)."""
        wanted = self.reference_outputs
        if cache is not None:
            stored = read_encodings(*cache, with_targets="ref_targets" in wanted)
            if stored is not None and stored[0].shape[1] == len(references):
                self.cache_hit = True
                found = [array.astype(np.float32) for array in stored if array is not None]
                return dict(zip(wanted, found, strict=True))
        units = np.concatenate([numpy_ops.unit_image(image) for image in references])
        refs = self.model_input(units).astype(np.float32)
        found = self.sessions[REFERENCE_GRAPH].run({"references": refs})
        encoded = dict(zip(wanted, found, strict=True))
        if cache is not None:
            write_encodings(cache[0], cache[1], encoded["features"], encoded.get("ref_targets"))
        return encoded

    def cells(self, squares01: np.ndarray, level: int) -> np.ndarray:
        """Unit cells [B, C, h, w] of square images in [0, 1] at ``level`` x the model's
        size (``distance_search.level_cells``)."""
        if level == 1:
            images = self.spec.normalize(squares01).astype(np.float32)
            return self.sessions[FEATURES_GRAPH].run({"images": images})[1]
        squares = np.ascontiguousarray(squares01, dtype=np.float32)
        return self.sessions[CELLS_GRAPH].run({"squares": squares})[0]

    def reference_banks(self, references: Sequence[np.ndarray]) -> list[tuple[np.ndarray, int]]:
        """``distance_search.reference_banks``: every reference cell per magnification, upright
        rows first, then the quarter turns when a mix reads them."""
        units = [numpy_ops.unit_image(image) for image in references]
        banks = []
        for level in range(1, self.spec.zoom + 1):
            size = self.img_size * level
            squares = np.concatenate([numpy_ops.resize_square(unit, size) for unit in units])
            banks.append(
                turned_bank(
                    lambda images, level=level: self.cells(images, level),
                    squares,
                    QUARTER_TURNS if self.spec.turns else (),
                )
            )
        return banks

    def reconstruct(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``[Q * P, 3, S, S]`` reconstructions in [0, 1] (and predicted features): every
        pass of every query, query-major, in chunks of at most ``max_batch`` rows."""
        rows = queries.shape[0] * self.passes
        pixels, features = [], []
        for start in range(0, rows, self.max_batch):
            index = np.arange(start, min(rows, start + self.max_batch))
            query_index, pass_index = index // self.passes, index % self.passes
            found = self.sessions[QUERY_GRAPH].run(
                {
                    "query": np.ascontiguousarray(queries[query_index], dtype=np.float32),
                    "ids_keep": self.ids_keep[pass_index],
                    "ids_restore": self.ids_restore[pass_index],
                    **self.reference_feeds,
                },
            )
            pixels.append(np.clip(self.spec.denormalize(found[0]), 0.0, 1.0))
            if len(found) > 1:
                features.append(found[1])
        return np.concatenate(pixels), np.concatenate(features) if features else None

    def targets(self, query01: np.ndarray, query_model: np.ndarray) -> QueryTargets:
        """The colour target, the CNN features and the reference distances of one query."""
        size = query01.shape[-2:]
        features, query_cells = None, []
        if self.spec.reads_features:
            features, cells1 = self.sessions[FEATURES_GRAPH].run(
                {"images": query_model.astype(np.float32)}
            )
            query_cells = [cells1]
            for level in range(2, self.spec.zoom + 1):
                square = numpy_ops.resize_square(query01, self.img_size * level)
                query_cells.append(self.cells(square, level))
        if not self.reads_passes:  # the distance alone: read on its cells
            levels = reference_levels(self.spec.mixes, query_cells, self.banks)
            return QueryTargets(None, features, levels)  # type: ignore[arg-type]
        references = reference_maps(self.spec.mixes, query_cells, self.banks, size)
        return QueryTargets(colour_target(self.spec, query01), features, references)

    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]:
        """Score every image (RGB ``uint8``, any size); one ``Detection`` per image."""
        from padformer_edge.detect.images import check_queries

        if len(images) == 0:
            return []
        check_queries(images)
        started = time.perf_counter()
        full = [numpy_ops.unit_image(image) for image in images]
        model_in = np.concatenate([self.model_input(query) for query in full])
        prepared = time.perf_counter()
        recon = predicted = None
        if self.reads_passes:
            pixels, predicted = self.reconstruct(model_in)
            recon = pixels.reshape(len(images), self.passes, *pixels.shape[1:])
            if predicted is not None:
                predicted = predicted.reshape(len(images), self.passes, *predicted.shape[1:])
        reconstructed = time.perf_counter()
        prepare_share = (prepared - started) / len(images)
        recon_share = (reconstructed - prepared) / len(images)
        detections = []
        for index, query in enumerate(full):
            score_start = time.perf_counter()
            with self.blas.limit(limits=1, user_api="blas"):
                scored = self.score_one(query, model_in[index : index + 1], recon, predicted, index)
            score_time = time.perf_counter() - score_start
            timings = call_timings(prepare_share, recon_share, score_time)
            drawn = None
            if reconstruction and recon is not None:
                mean = np.clip(recon[index].mean(axis=0), 0.0, 1.0)
                drawn = np.round(mean * 255).astype(np.uint8).transpose(1, 2, 0)
            detections.append(
                Detection(
                    scored.score,
                    scored.anomaly_map,
                    scored.pass_mean,
                    scored.pass_max,
                    timings,
                    drawn,
                )
            )
        return detections

    def score_one(
        self,
        query01: np.ndarray,
        query_model: np.ndarray,
        recon: np.ndarray | None,
        predicted: np.ndarray | None,
        index: int,
    ) -> ScoredQuery:
        size = (query01.shape[-2], query01.shape[-1])
        targets = self.targets(query01, query_model)
        if recon is None:
            return score_distance(self.spec, targets.references, size)  # type: ignore[arg-type]
        return score_passes(
            self.spec,
            targets,
            recon[index],
            None if predicted is None else predicted[index],
            self.weights,
            size,
        )
