"""What a profile stores so that a line PC scores with it and no torch.

Beside the model's three graphs (``deploy.export``) a line needs: the frozen CNN's
features of a query and its magnified cells as graphs (the fused and distance metrics
compare them with the references), the mask schedule of the profile's settings (made
with torch's random generator, which numpy cannot reproduce) and the metric's settings
resolved by the torch metric (``scoring.json``), so the numpy scoring
(``line_scoring``) has nothing to decide. Needs torch: it runs where profiles are
made, never on the line.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file
from torch import nn

from padformer_edge.deploy.export import OPSET, export_onnx
from padformer_edge.deploy.names import (
    CELLS_GRAPH,
    FEATURES_GRAPH,
    MANIFEST,
    PASSES_FILE,
    SCORING_FILE,
)
from padformer_edge.detect.masks import hidden_weights, make_masks, mask_indices
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.files.atomic import atomic_path
from padformer_edge.files.digest import file_sha256
from padformer_edge.model.padformer import PADFormer

SCORING_TAG = "padformer-edge-line-scoring/1"


class FeaturesGraph(nn.Module):
    """Normalised images [B, 3, S, S] -> the feature error's target [B, M, F] and the
    unit cells at 1x [B, C, h, w] the reference distance compares (``level_cells``)."""

    def __init__(self, model: PADFormer) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from padformer_edge.methods.padformer.distance_search import cell_features

        target = self.model.target_features(images).float()
        return target, cell_features(self.model, target)


class CellsGraph(nn.Module):
    """Square images in [0, 1] at a magnification above 1x [B, 3, L, L] -> their unit
    cells [B, C, L/8, L/8] (``level_cells`` at a level above 1)."""

    def __init__(self, model: PADFormer) -> None:
        super().__init__()
        self.model = model

    def forward(self, squares01: torch.Tensor) -> torch.Tensor:
        maps = self.model.encoder.patch_embed.cnn(self.model.normalize(squares01)).float()
        # ``backbone.unit_cells`` with the channel count as a constant: the exporter cannot
        # take layer_norm's shape from a traced size
        channels = int(maps.shape[1])
        standard = F.layer_norm(maps.permute(0, 2, 3, 1), (channels,))
        return F.normalize(standard, dim=-1).permute(0, 3, 1, 2)


def scoring_record(model: PADFormer, settings: DetectionSettings) -> dict[str, Any]:
    """The metric of ``settings`` for ``model`` as the torch detector resolves it, in the
    terms ``line_scoring.ScoringSpec`` reads."""
    from padformer_edge.methods.padformer.distance_metric import DistanceMetric
    from padformer_edge.methods.padformer.fused_metric import FusedMetric
    from padformer_edge.methods.padformer.metrics import resolve_metric, scoring_signature

    name, metric = resolve_metric(settings.metric, model, None, settings.section.scoring)
    if name not in ("lab", "rgb", "fused", "distance"):
        raise UserError(
            f"metric '{name}' has no line runtime (it needs the torch encoder per pass); "
            "use metric lab, fused, distance or compare for a profile on onnxruntime."
        )
    cfg = model.config
    fused = isinstance(metric, FusedMetric)
    mixes = (
        [
            {
                "lab_weight": mix.lab_weight,
                "reference_weight": mix.reference_weight,
                "zoom": mix.zoom,
                "turns": mix.turns,
            }
            for mix in metric.mixes
        ]
        if fused
        else [{"lab_weight": 1.0, "reference_weight": 0.0, "zoom": 1, "turns": False}]
    )
    return {
        "format": SCORING_TAG,
        "metric": name,
        "signature": scoring_signature(name, metric),
        "settings": settings.export_settings(),
        "map_readout": vars_of(metric.map_readout),
        "score_readout": vars_of(metric.score_readout),
        "mixes": mixes,
        "scales": list(metric.scales) if fused else [1.0, 1.0],
        "reconstruction_weight": metric.reconstruction_weight if fused else 1.0,
        "score_masked_cells": bool(cfg.score_masked_cells)
        and not isinstance(metric, DistanceMetric),
        "img_size": cfg.img_size,
        "grid_size": cfg.grid_size,
        "cells_per_side": cfg.cells_per_side if cfg.cnn_tokens else 1,
        "mean": [float(v) for v in model.mean.flatten()],
        "std": [float(v) for v in model.std.flatten()],
    }


def vars_of(readout: Any) -> dict[str, Any]:
    return {"consistency_filter": bool(readout.consistency_filter), "sigma": float(readout.sigma)}


def export_line(model: PADFormer, settings: DetectionSettings, out_dir: str | Path) -> dict:
    """Write everything a line needs for ``model`` under ``settings`` into ``out_dir``;
    returns ``{file name: sha256}`` of every file written, for the profile to record.
    For ``settings.runtime`` openvino every graph is also converted to IR beside its
    ONNX file (``openvino_export.convert_to_ir``), so the folder serves both runtimes."""
    out = Path(out_dir)
    record = scoring_record(model, settings)  # refuses a metric with no line runtime first
    manifest = export_onnx(model, out)
    model = model.cpu().eval()
    cfg = model.config
    written = [*manifest["graphs"], MANIFEST, SCORING_FILE, PASSES_FILE]
    if cfg.cnn_tokens:
        size = cfg.img_size
        example = torch.rand(2, 3, size, size, generator=torch.Generator().manual_seed(0))
        _export(
            FeaturesGraph(model),
            model.normalize(example),
            out / FEATURES_GRAPH,
            ["images", "target_features", "cells"],
            {"images": {0: "batch"}, "target_features": {0: "batch"}, "cells": {0: "batch"}},
        )
        written.append(FEATURES_GRAPH)
        zoomed = torch.rand(2, 3, 2 * size, 2 * size, generator=torch.Generator().manual_seed(1))
        _export(
            CellsGraph(model),
            zoomed,
            out / CELLS_GRAPH,
            ["squares", "cells"],
            {
                "squares": {0: "batch", 2: "side", 3: "side"},
                "cells": {0: "batch", 2: "cells", 3: "cells"},
            },
        )
        written.append(CELLS_GRAPH)
    masks = make_masks(
        settings.schedule, settings.passes, cfg.num_patches, settings.mask_ratio, settings.seed
    )
    ids_keep, ids_restore = mask_indices(masks)
    with atomic_path(out / PASSES_FILE) as tmp:
        save_file(
            {
                # safetensors writes a view's whole buffer: each array must own its rows
                "ids_keep": np.ascontiguousarray(ids_keep),
                "ids_restore": np.ascontiguousarray(ids_restore),
                "weights": np.ascontiguousarray(hidden_weights(masks).numpy()),
            },
            str(tmp),
        )
    with atomic_path(out / SCORING_FILE) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=2) + "\n")
    digests = {name: file_sha256(out / name) for name in written}
    if settings.runtime == "openvino":
        from padformer_edge.deploy.openvino_export import convert_to_ir

        digests.update(convert_to_ir(out, [name for name in written if name.endswith(".onnx")]))
    return dict(sorted(digests.items()))


def _export(
    module: nn.Module, example: torch.Tensor, path: Path, names: list[str], axes: dict
) -> None:
    """One single-input graph with the TorchScript exporter (as ``export._export``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with atomic_path(path) as tmp:
            torch.onnx.export(
                module,
                (example,),
                str(tmp),
                input_names=names[:1],
                output_names=names[1:],
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
