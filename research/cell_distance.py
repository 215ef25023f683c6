"""The nearest-reference distance on richer cells: the candidates for the comparator's input.

The comparator adds a learned correction to one distance: each query cell's cosine distance
to its nearest reference cell, over the references turned by quarter turns. Today those
cells are the frozen CNN's stride-8 block read at 192 px, a grid in which a crack one or two
pixels wide is a small share of one cell. PatchCore, which finds such defects, reads the
photo at 448 px and describes each location by its neighbourhood. This scorer keeps the
comparator's distance (cosine, turned references, the map's maximum) and varies only what
a cell is made of, so that its rows say which cells the comparator should read:

- ``input_size``: the side the photo is resized to before the CNN (192, 320, 448...);
- ``stages``: the CNN blocks tapped (2 = stride 8; 2+3 adds stride 16, upsampled);
- ``neighbourhood``: the side of the average over neighbouring cells (1 = none, 3 as
  PatchCore);
- ``projection``: a fixed random projection to fewer channels (0 = none), which cuts the
  search's arithmetic in proportion;
- ``coreset``: the share of reference cells kept by a greedy farthest-point choice made when
  the references are taken (as a profile would at creation), which cuts the search again;
- ``backbone``: the ImageNet EfficientNet-Lite the cells come from.

The features are PatchCore's (``patchcore.LocalFeatures``), so a row differs from the
validated PatchCore only in the distance (cosine on unit cells rather than Euclidean) and
in the options above.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from padformer_edge.detect.readout import smooth
from padformer_edge.errors import UserError
from padformer_edge.model.config import DEFAULT_BACKBONE
from padformer_edge_training.evaluation.patchcore import (
    BACKBONE_WORDS,
    SMOOTHING_SIGMA,
    LocalFeatures,
)
from padformer_edge_training.evaluation.scorers import Scored

PROJECTION_SEED = 0  # one fixed projection, so two runs of one configuration agree
SEARCH_CHUNK = 1024  # query cells per similarity block: bounds the memory at 448 px


class CellConfig(NamedTuple):
    """What a cell configuration string fixes (``parse_cells`` reads it back)."""

    stages: tuple[int, ...] = (2,)
    input_size: int = 192
    neighbourhood: int = 1
    projection: int = 0
    coreset: float = 1.0
    backbone: str = DEFAULT_BACKBONE

    @property
    def text(self) -> str:
        words = ["+".join(str(s) for s in self.stages) + f"@{self.input_size}"]
        words.append(f"n{self.neighbourhood}")
        if self.projection:
            words.append(f"p{self.projection}")
        if self.coreset < 1.0:
            words.append(f"c{self.coreset:g}")
        if self.backbone != DEFAULT_BACKBONE:
            words.append(self.backbone.removeprefix("efficientnet-"))
        return " ".join(words)


def parse_cells(text: str) -> CellConfig:
    """'2+3@448 n3 p64 c0.1 lite2' -> CellConfig; every word after the first is optional
    (``nN`` neighbourhood, ``pD`` projection, ``cF`` coreset share, a backbone name)."""
    form = "STAGES@SIZE[ nN][ pD][ cF][ lite0|lite2]"
    body, *words = text.split()
    fields: dict[str, object] = {}
    try:
        stages, size = body.split("@")
        fields["stages"] = tuple(sorted(int(s) for s in stages.split("+")))
        fields["input_size"] = int(size)
        for word in words:
            if word in BACKBONE_WORDS:
                fields["backbone"] = BACKBONE_WORDS[word]
            elif word[0] == "n":
                fields["neighbourhood"] = int(word[1:])
            elif word[0] == "p":
                fields["projection"] = int(word[1:])
            elif word[0] == "c":
                fields["coreset"] = float(word[1:])
            else:
                raise ValueError(word)
    except (ValueError, IndexError):
        raise UserError(f"cell configuration '{text}' is not {form}, e.g. 2@448 n3.") from None
    config = CellConfig(**fields)  # type: ignore[arg-type]
    if not all(1 <= s <= 5 for s in config.stages) or config.input_size < 32:
        raise UserError(f"cell configuration '{text}': stages are 1-5, sizes at least 32.")
    if config.neighbourhood < 1 or config.neighbourhood % 2 == 0:
        raise UserError(f"cell configuration '{text}': the neighbourhood is odd: 1, 3, 5.")
    if config.projection < 0 or not 0 < config.coreset <= 1:
        raise UserError(f"cell configuration '{text}': pD with D >= 1, cF with 0 < F <= 1.")
    return config


def farthest_point_coreset(cells: torch.Tensor, keep: int) -> torch.Tensor:
    """Indices of ``keep`` rows of unit ``cells`` ``[N, C]`` chosen greedily, each the row
    farthest (in cosine) from every row chosen before: the few cells that still cover the
    whole bank, as PatchCore's coreset. The first row starts it, so the choice is fixed."""
    chosen = torch.zeros(keep, dtype=torch.long)
    nearest = 1.0 - cells @ cells[0]
    for index in range(1, keep):
        pick = int(torch.argmax(nearest))
        chosen[index] = pick
        nearest = torch.minimum(nearest, 1.0 - cells @ cells[pick])
    return chosen


class CellDistanceScorer:
    """The distance alone on cells of ``config``: prepare once per reference set, then
    score queries (the evaluation protocol's ``Scorer``)."""

    def __init__(self, config: CellConfig, name: str | None = None) -> None:
        self.config = config
        self.name = name or f"distance {config.text}"
        self.features = LocalFeatures(config.stages, config.backbone, config.neighbourhood)
        self.projection: torch.Tensor | None = None
        self.bank: torch.Tensor | None = None

    def cells(self, images: Sequence[np.ndarray], turn: int = 0) -> torch.Tensor:
        """``[B, h, w, C]`` unit cells of RGB ``uint8`` images, turned by ``turn`` quarters."""
        batch = (
            torch.stack(
                [torch.from_numpy(np.ascontiguousarray(i)).permute(2, 0, 1) for i in images]
            )
            .float()
            .div_(255)
        )
        size = (self.config.input_size,) * 2
        batch = F.interpolate(batch, size, mode="bilinear", antialias=True).clamp_(0, 1)
        feats = self.features(torch.rot90(batch, turn, (-2, -1))).permute(0, 2, 3, 1)
        if self.config.projection:
            if self.projection is None:
                generator = torch.Generator().manual_seed(PROJECTION_SEED)
                self.projection = torch.randn(
                    feats.shape[-1], self.config.projection, generator=generator
                )
            feats = feats @ self.projection
        return F.normalize(feats, dim=-1)

    @torch.inference_mode()
    def prepare(self, references: Sequence[np.ndarray]) -> None:
        bank = torch.cat([self.cells(references, k).flatten(0, 2) for k in range(4)])
        if self.config.coreset < 1.0:
            keep = max(1, round(self.config.coreset * len(bank)))
            bank = bank[farthest_point_coreset(bank, keep)]
        self.bank = bank.contiguous()

    @torch.inference_mode()
    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        assert self.bank is not None, "prepare() comes first"
        results = []
        for query in queries:
            cells = self.cells([query])[0]
            h, w = cells.shape[:2]
            rows = cells.reshape(h * w, -1)
            best = torch.cat(
                [
                    (rows[start : start + SEARCH_CHUNK] @ self.bank.T).amax(1)
                    for start in range(0, len(rows), SEARCH_CHUNK)
                ]
            )
            distance = (1.0 - best).view(1, 1, h, w)
            amap = F.interpolate(distance, query.shape[:2], mode="bilinear", align_corners=False)
            amap = smooth(amap[0, 0], SMOOTHING_SIGMA)
            results.append(Scored(float(amap.max()), amap.numpy()))
        return results
