"""Multi-pass anomaly detection of query images against a fixed set of good references.

The references are encoded once, when the detector is built, and shared by every later
query through the model's broadcasting ``ReferenceCache``: on a line the reference set
of a product is fixed, so re-encoding it per query (or per pass) would only burn time.
All passes of all queries given to one ``detect`` call are stacked into as few model
calls as ``max_batch`` allows; ``detect_each`` feeds any number of images through in
groups of one model call's worth, and is the one batching loop every caller uses.

Every query gets the same mask schedule, fixed by ``seed``: a query's score then depends
on its own pixels only, not on which other images shared its batch, and the same image
always gets the same score bits on one machine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch

from padformer_edge.deploy.graph_runner import GraphRunner, graphs_needed
from padformer_edge.detect.array_ops import ops_of
from padformer_edge.detect.detection import Detection, GroupedDetection, call_timings
from padformer_edge.detect.device import (
    check_precision,
    detection_device,
    model_precision,
    synchronize,
)
from padformer_edge.detect.images import (
    check_queries,
    check_references,
    resize_square,
    to_unit_tensor,
)
from padformer_edge.detect.masks import hidden_weights, make_masks, mask_indices
from padformer_edge.detect.readout import read_levels
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.detect.signature import Signature
from padformer_edge.devices.allocator import retain_freed_memory
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.metrics import resolve_metric, scoring_signature
from padformer_edge.methods.padformer.passes import call_inputs, score_query
from padformer_edge.methods.padformer.settings import DETECTOR_METRIC
from padformer_edge.model.padformer import PADFormer, Reconstruction, ReferenceCache


class EncodingStore(Protocol):
    """Somewhere reference encodings outlive the process (a profile's cache file).

    Handed to the ``Detector`` rather than overriding one of its methods, so the
    detector's construction order stays its own business.
    """

    def load(self, model: PADFormer, device: torch.device) -> ReferenceCache | None:
        """The stored encodings, or None when there are none made for this model."""
        ...

    def save(self, cache: ReferenceCache) -> None:
        """Keep freshly computed encodings for the next start."""
        ...


class Detector(GroupedDetection):
    """Scores query images with a PADFormer and N cached good references.

    ``settings`` arrive validated and whole (``DetectionSettings``); the detector keeps
    them as they are, except ``max_batch``, which the daemon halves after running out of
    GPU memory. With an ``encodings`` store the reference encodings are read from it
    when it holds a set of the right shape (``cache_hit`` is then True) and written to
    it otherwise.

    With ``settings.runtime`` ``onnxruntime`` or ``openvino`` the reference encoding and
    the passes run the exported graphs in ``runner`` (``deploy.runners.open_runner`` on
    the folder ``padformer-edge export`` wrote) instead of the torch model; preparing the
    inputs and scoring stay the same torch code, so both runtimes differ only by the
    model's float32 rounding.
    """

    def __init__(
        self,
        model: PADFormer,
        references: Sequence[np.ndarray],
        settings: DetectionSettings | None = None,
        *,
        encodings: EncodingStore | None = None,
        runner: GraphRunner | None = None,
    ) -> None:
        settings = DetectionSettings(metric=DETECTOR_METRIC) if settings is None else settings
        retain_freed_memory()  # every call frees tens of MB that the next one needs again
        self.settings = settings
        onnx = settings.runtime != "torch"  # the exported graphs, in either runtime
        if onnx and runner is None:
            raise UserError(graphs_needed(settings.runtime))
        if runner is not None and not onnx:
            raise ValueError("a graph runner runs with runtime onnxruntime or openvino only")
        self.device = detection_device("cpu" if onnx else settings.device)
        check_precision(settings.precision, self.device)
        self.precision = settings.precision
        self.model = model.to(self.device).eval()
        self.img_size: int = model.config.img_size
        self.passes, self.max_batch = settings.passes, settings.max_batch
        self.masks = make_masks(
            settings.schedule,
            settings.passes,
            model.config.num_patches,
            settings.mask_ratio,
            settings.seed,
        ).to(self.device)
        self.pass_weights = hidden_weights(self.masks)  # for models scoring hidden patches
        self.runner = runner
        self.mask_ids = mask_indices(self.masks) if onnx else None
        self.encodings, self.cache_hit = encodings, False
        self.cache = self.load_references(references)
        if self.runner is not None:
            targets = self.cache.targets
            self.runner.use_features(
                self.cache.features.cpu().numpy(),
                None if targets is None else targets.cpu().numpy(),
            )
        with torch.inference_mode():
            references01 = [to_unit_tensor(image, self.device) for image in references]
            self.metric_name, self.metric = resolve_metric(
                settings.metric, self.model, references01, settings.section.scoring
            )

    @property
    def reads_passes(self) -> bool:
        """False for a metric that needs no reconstruction (``distance``): no pass runs."""
        return getattr(self.metric, "reads_passes", True)

    @property
    def scoring(self) -> Signature:
        """How this detector's scores are computed (``scoring_signature``)."""
        return scoring_signature(self.metric_name, self.metric)

    def load_references(self, references: Sequence[np.ndarray]) -> ReferenceCache:
        """The encodings from the store when it has a set for these references, else new."""
        if self.encodings is not None:
            stored = self.encodings.load(self.model, self.device)
            expected = (1, len(references), self.model.config.num_patches)
            if stored is not None and tuple(stored.features.shape[:3]) == expected:
                self.cache_hit = True
                return stored
        cache = self.encode_references(references)
        if self.encodings is not None:
            self.encodings.save(cache)
        return cache

    @torch.inference_mode()
    def encode_references(self, references: Sequence[np.ndarray]) -> ReferenceCache:
        """Encode the references once, as a batch-1 cache that broadcasts to any batch."""
        check_references(references)
        refs = torch.stack([self.to_model_input(image) for image in references])
        if self.runner is not None:
            # a torch cache around the graph's features: it is what an EncodingStore keeps
            features, targets = self.runner.encode_references(refs.cpu().numpy())
            return self.model.cache_from_features(
                torch.from_numpy(features), None if targets is None else torch.from_numpy(targets)
            )
        with model_precision(self.precision, self.device):
            return self.model.encode_references(refs.unsqueeze(0))

    def to_model_input(self, image: np.ndarray) -> torch.Tensor:
        """An RGB array as the model's normalised ``[3, S, S]`` input."""
        return self.fit(to_unit_tensor(image, self.device).unsqueeze(0))[0]

    def fit(self, unit: torch.Tensor) -> torch.Tensor:
        """``[B, 3, H, W]`` in [0, 1] squeezed to the model's size and normalised."""
        return self.model.normalize(resize_square(unit, self.img_size))

    @torch.inference_mode()
    def reconstruct(self, queries: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``[Q * P, 3, S, S]`` reconstructions in [0, 1] (and, for models with CNN tokens,
        the ``[Q * P, M, F]`` predicted features): every pass of every query, query-major,
        computed in chunks of at most ``max_batch`` rows."""
        rows = queries.shape[0] * self.passes
        out, features = [], []
        for start in range(0, rows, self.max_batch):
            index = torch.arange(start, min(rows, start + self.max_batch), device=self.device)
            query_index, pass_index = index // self.passes, index % self.passes
            first, last = start // self.passes, (start + len(index) - 1) // self.passes
            if self.runner is not None:
                recon = self.run_exported(queries[query_index], pass_index)
            else:
                with model_precision(self.precision, self.device):
                    recon = self.model.reconstruct_all(
                        queries[first : last + 1],
                        self.cache,
                        self.masks[pass_index],
                        rows=query_index - first,
                    )
            out.append(self.model.denormalize(recon.pixels.float()).clamp_(0.0, 1.0))
            if recon.features is not None:
                features.append(recon.features.float())
        return torch.cat(out), torch.cat(features) if features else None

    def run_exported(self, rows: torch.Tensor, pass_index: torch.Tensor) -> Reconstruction:
        """``reconstruct_all`` of one chunk through the exported query graph: ``rows`` are
        the chunk's query images, one per pass, ``pass_index`` each row's mask."""
        assert self.runner is not None and self.mask_ids is not None
        ids_keep, ids_restore = (ids[pass_index.cpu().numpy()] for ids in self.mask_ids)
        pixels, features = self.runner.reconstruct(rows.cpu().numpy(), ids_keep, ids_restore)
        return Reconstruction(
            torch.from_numpy(pixels), None if features is None else torch.from_numpy(features)
        )

    @property
    def images_per_call(self) -> int:
        """Query images whose passes fit one model call of at most ``max_batch`` rows."""
        return max(1, self.max_batch // self.passes)

    @torch.inference_mode()
    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]:
        """Score every image (RGB ``uint8``, any size); one ``Detection`` per image.

        ``reconstruction`` also keeps each query's mean reconstruction over passes.
        """
        if len(images) == 0:
            return []
        check_queries(images)
        started = time.perf_counter()
        full = [to_unit_tensor(image, self.device).unsqueeze(0) for image in images]
        model_in = torch.cat([self.fit(query) for query in full])
        synchronize(self.device)
        prepared = time.perf_counter()
        recon = features = None
        if self.reads_passes:
            pixels, features = self.reconstruct(model_in)
            recon = pixels.view(len(images), self.passes, 3, self.img_size, self.img_size)
            if features is not None:
                features = features.view(len(images), self.passes, *features.shape[1:])
        synchronize(self.device)
        reconstructed = time.perf_counter()
        prepare_share = (prepared - started) / len(images)
        recon_share = (reconstructed - prepared) / len(images)
        inputs = call_inputs(self.metric, full, model_in)  # the batched part of the scoring
        batch_share = (time.perf_counter() - reconstructed) / len(images)
        detections = []
        for index, query in enumerate(full):
            score_start = time.perf_counter()
            made = None if inputs is None else inputs[index]
            if recon is None:
                size = (query.shape[-2], query.shape[-1])
                scored = read_levels(self.metric, made, size, self.metric.input_size)  # type: ignore[arg-type]
            else:
                scored = score_query(
                    self.metric,
                    query,
                    model_in[index : index + 1],
                    recon[index],
                    None if features is None else features[index],
                    self.pass_weights,
                    made,
                )
            anomaly_map = ops_of(scored.anomaly_map).to_host(scored.anomaly_map)
            score_time = batch_share + time.perf_counter() - score_start
            timings = call_timings(prepare_share, recon_share, score_time)
            drawn = mean_image(recon[index]) if reconstruction and recon is not None else None
            detections.append(
                Detection(
                    scored.score, anomaly_map, scored.pass_mean, scored.pass_max, timings, drawn
                )
            )
        return detections


def mean_image(passes: torch.Tensor) -> np.ndarray:
    """``[P, 3, S, S]`` in [0, 1] averaged over passes, as an ``S x S x 3`` ``uint8`` array."""
    mean = passes.mean(dim=0).clamp(0, 1)
    return (mean * 255).round().byte().permute(1, 2, 0).cpu().numpy()
