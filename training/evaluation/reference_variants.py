"""Variants of the nearest-reference distance, each one change from the shipped form, as
scorers of the evaluation protocol: which maps describe a cell, cosine or Euclidean, which
turned or rescaled copies of each reference enter the bank. ``VARIANTS[0]`` is the
detector's own distance (a test holds it to ``nearest_reference_distances``);
``benchmarks/reference_variants.py`` scores them all on the validation render.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import kornia
import numpy as np
import torch
import torch.nn.functional as F

from padformer_edge.detect.images import resize_square, to_unit_tensor
from padformer_edge.detect.paper_metrics import smooth, upsample
from padformer_edge.detect.reference_distance import ReferenceBank, best_cosines, flat_cells
from padformer_edge.model.backbone import (
    build_efficientnet_lite0,
    require_lite0_weights,
    unit_cells,
)
from padformer_edge.model.padformer import PADFormer
from padformer_edge_training.evaluation.scorers import Scored

SIGMA = 2.0  # the generic model's score smoothing in model pixels (the form this table tests)
QUARTER_TURNS = (0.0, 90.0, 180.0, 270.0)


@dataclass(frozen=True)
class Variant:
    """One way to measure the distance: which maps describe a cell (``describe``: images
    in [0, 1] at the model's size times ``zoom`` -> ``[B, C, h, w]``), cosine or
    Euclidean, which copies of each reference enter the bank (angles in degrees, scales),
    and why it is worth asking."""

    name: str
    why: str
    describe: str = "cells"
    cosine: bool = True
    zooms: tuple[int, ...] = (1,)
    angles: tuple[float, ...] = QUARTER_TURNS
    scales: tuple[float, ...] = (1.0,)


VARIANTS = (
    Variant("shipped", "block-2 cells, standardised, cosine, 1x, quarter turns"),
    Variant("3x3 neighbourhood", "PatchCore's aggregation", describe="pooled cells"),
    Variant("Euclidean", "PatchCore's distance, on raw cells", describe="raw cells", cosine=False),
    Variant(
        "3x3 neighbourhood, Euclidean",
        "PatchCore's patch feature on the model's input",
        describe="raw pooled cells",
        cosine=False,
    ),
    Variant("2x input", "PatchCore's validated input size (448 px for 224 px renders)", zooms=(2,)),
    Variant("mean of 1x and 2x", "the map's reading (zoom 2)", zooms=(1, 2)),
    Variant("block 3", "stride 16: more context per cell", describe="block 3"),
    Variant("blocks 2 and 3", "both, concatenated at stride 8", describe="blocks 2+3"),
    Variant("trained encoder tokens", "the model's own cross-view features", describe="encoder"),
    Variant("eighth turns", "finer roll of the references", angles=tuple(range(0, 360, 45))),
    Variant("scaled references", "references also at 0.85x and 1.15x", scales=(0.85, 1.0, 1.15)),
)


class CellDescriber:
    """Every way ``Variant.describe`` names of turning images into cell maps, sharing one
    model and one frozen block 3 (the edge preset keeps blocks 0-2 only)."""

    def __init__(self, model: PADFormer) -> None:
        self.model = model
        self.block3 = build_efficientnet_lite0(require_lite0_weights("block 3")).blocks[3]
        self.block3.eval()

    def __call__(self, kind: str, squares01: torch.Tensor) -> torch.Tensor:
        model = self.model
        if kind == "encoder":
            grid = model.config.grid_size
            tokens = model.encode_features(model.normalize(squares01)).float()
            return unit_cells(tokens.transpose(1, 2).unflatten(-1, (grid, grid)))
        block2 = model.encoder.patch_embed.cnn(model.normalize(squares01)).float()
        maps: dict[str, Callable[[], torch.Tensor]] = {
            "cells": lambda: unit_cells(block2),
            "raw cells": lambda: block2,
            "pooled cells": lambda: unit_cells(pooled(block2)),
            "raw pooled cells": lambda: pooled(block2),
            "block 3": lambda: unit_cells(self.block3(block2).float()),
            "blocks 2+3": lambda: F.normalize(
                torch.cat([unit_cells(block2), upsampled_block3(self.block3, block2)], 1), dim=1
            ),
        }
        return maps[kind]()


def pooled(maps: torch.Tensor) -> torch.Tensor:
    return F.avg_pool2d(maps, 3, 1, 1, count_include_pad=False)


def upsampled_block3(block3: torch.nn.Module, block2: torch.Tensor) -> torch.Tensor:
    return upsample(unit_cells(block3(block2).float()), block2.shape[-2:])


def turned(squares01: torch.Tensor, angle: float) -> torch.Tensor:
    """Quarter turns exactly; other angles by a rotation whose new corners are white (the
    renders' background)."""
    if angle % 90 == 0:
        return torch.rot90(squares01, int(angle // 90), (-2, -1))
    angles = torch.full((squares01.shape[0],), float(angle))
    return kornia.geometry.transform.rotate(squares01 - 1.0, angles) + 1.0


def rescaled(squares01: torch.Tensor, scale: float) -> torch.Tensor:
    """The same square at ``scale``: centre-cropped when larger, padded white when smaller."""
    if scale == 1.0:
        return squares01
    side = squares01.shape[-1]
    resized = F.interpolate(squares01, scale_factor=scale, mode="bilinear", antialias=True)
    if scale > 1.0:
        start = (resized.shape[-1] - side) // 2
        return resized[..., start : start + side, start : start + side]
    pad = side - resized.shape[-1]
    border = (pad // 2, pad - pad // 2, pad // 2, pad - pad // 2)
    return F.pad(resized - 1.0, border) + 1.0


class VariantScorer:
    """The distance of one ``Variant`` as a scorer of the evaluation protocol."""

    def __init__(self, model: PADFormer, describer: CellDescriber, variant: Variant) -> None:
        self.model, self.describe, self.variant = model, describer, variant
        self.name = variant.name
        self.banks: list[torch.Tensor] = []

    def squares(self, images: Sequence[np.ndarray], zoom: int) -> torch.Tensor:
        side = self.model.config.img_size * zoom
        return torch.cat([resize_square(to_unit_tensor(i, "cpu")[None], side) for i in images])

    @torch.inference_mode()
    def prepare(self, references: Sequence[np.ndarray]) -> None:
        v = self.variant
        self.banks = []
        for zoom in v.zooms:
            squares = self.squares(references, zoom)
            copies = [turned(rescaled(squares, s), a) for s in v.scales for a in v.angles]
            self.banks.append(torch.cat([flat_cells(self.describe(v.describe, c)) for c in copies]))

    @torch.inference_mode()
    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        results = []
        for query in queries:
            size = query.shape[:2]
            maps = []
            for zoom, bank in zip(self.variant.zooms, self.banks, strict=True):
                cells = self.describe(self.variant.describe, self.squares([query], zoom))
                rows = flat_cells(cells)
                if self.variant.cosine:  # the detector's own chunked search, every row upright
                    nearest = 1.0 - best_cosines(rows, ReferenceBank(bank, bank.shape[0]))[0]
                else:
                    nearest = torch.cdist(rows, bank).amin(dim=1)
                grid = nearest.view(1, 1, *cells.shape[-2:])
                maps.append(upsample(grid, size)[0, 0])
            scale = max(size) / self.model.config.img_size
            amap = smooth(torch.stack(maps).mean(0), SIGMA * scale)
            results.append(Scored(float(amap.max()), amap.numpy()))
        return results
