"""Training episodes: one query and N good references of the same procedural object.

The data is a MAD-Sim-layout render of many objects (``padformer-edge synth``): good
training views, and test views with 3D defects of the training families and their masks.
A query is another good view (a pose change, the negative the distance overrates), a
view with a rendered 3D defect, or a good view with an image-space anomaly
(``anomalies``). Images and the frozen cells of everything that can be a reference or an
unchanged query are loaded once; only the image-space anomalies need the CNN per step.
Every draw comes from a generator keyed by (seed, step), so a resumed run samples what
an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch
from safetensors.torch import load_file, save_file

from padformer_edge.detect.array_ops import QUARTER_TURNS
from padformer_edge.detect.images import read_image, resize_square, to_unit_tensor
from padformer_edge.errors import UserError
from padformer_edge.methods.compare.model import ComparisonModel
from padformer_edge_training.comparator.anomalies import DEFAULT_KINDS, make_anomaly
from padformer_edge_training.data.layouts import DatasetIndex
from padformer_edge_training.families import refuse_held_out_dataset

QUERY_KINDS = ("good", "rendered", "synthetic")


@dataclass(frozen=True)
class EpisodeMix:
    """How often each kind of query is drawn, the reference counts trained on, and the
    image-space anomaly kinds a synthetic query draws from (a name repeated is drawn more
    often; the default is the blob kinds, as before the small kinds existed)."""

    good: float = 0.3
    rendered: float = 0.3
    synthetic: float = 0.4
    reference_counts: tuple[int, ...] = (4, 4, 8, 12)
    synthetic_kinds: tuple[str, ...] = DEFAULT_KINDS

    def __post_init__(self) -> None:  # a recipe's list, kept as the tuple a frozen mix holds
        object.__setattr__(self, "synthetic_kinds", tuple(self.synthetic_kinds))

    def probabilities(self) -> np.ndarray:
        p = np.array([self.good, self.rendered, self.synthetic], dtype=np.float64)
        return p / p.sum()


@dataclass
class ObjectViews:
    """One object's images (RGB uint8 at the input size) and cached cells."""

    name: str
    good: list[np.ndarray]
    good_cells: torch.Tensor  # [G, 1 + len(QUARTER_TURNS), C, h, w]: upright, then turned
    defects: list[np.ndarray]
    defect_masks: list[np.ndarray]  # bool, input size
    defect_cells: torch.Tensor  # [D, C, h, w]


@dataclass
class Batch:
    query_cells: torch.Tensor  # [B, C, h, w]: the window of each query's cells
    references: torch.Tensor  # [B, N, C, H, W]: whole grids
    bank: torch.Tensor  # [B, N * 4 * H * W, C]
    masks: torch.Tensor  # [B, 8h, 8w] bool: the window's pixels at the input size
    kinds: list[str]
    origin: list[tuple[int, int]] | None  # each window's top-left cell; None: whole grids


def window_origin(
    mask: np.ndarray, grid: int, window: int, rng: np.random.Generator
) -> tuple[int, int]:
    """Top-left cell of a ``window``-cell square holding the defect's centre, if any."""
    span = grid - window
    if mask.any():
        ys, xs = np.nonzero(mask)
        pick = int(rng.integers(len(ys)))
        cy, cx = ys[pick] // 8, xs[pick] // 8
        low_y, low_x = max(0, cy - window + 1), max(0, cx - window + 1)
        return int(rng.integers(low_y, min(cy, span) + 1)), int(
            rng.integers(low_x, min(cx, span) + 1)
        )
    return int(rng.integers(span + 1)), int(rng.integers(span + 1))


def _square(image: np.ndarray, size: int) -> np.ndarray:
    return cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)


def _cells(model: ComparisonModel, images: Sequence[np.ndarray], chunk: int = 32) -> torch.Tensor:
    out = []
    for start in range(0, len(images), chunk):
        batch = torch.stack(
            [to_unit_tensor(i, torch.device("cpu")) for i in images[start : start + chunk]]
        )
        out.append(model.cells(resize_square(batch, model.config.input_size)))
    return torch.cat(out)


def load_objects(
    index: DatasetIndex,
    model: ComparisonModel,
    min_good: int,
    max_good: int | None = None,
    cache: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[ObjectViews]:
    """Every class of ``index`` with at least ``min_good`` good training views (the first
    ``max_good`` of them), its images squeezed to the input size and its cells computed
    once, or read from ``cache`` (a safetensors file this function wrote for the same
    dataset, input size and CNN). A dataset holding a held-out defect family is refused
    (``families``)."""
    refuse_held_out_dataset(index.root, {r.label for r in index.records if not r.is_good})
    size = model.config.input_size
    cached = load_file(str(cache)) if cache is not None and cache.is_file() else {}
    computed: dict[str, torch.Tensor] = {}
    objects = []
    for name, paths in index.good_train().items():
        if len(paths) < min_good:
            continue
        good = [_square(read_image(p), size) for p in paths[:max_good]]
        if f"{name}/good" in cached:
            good_cells = cached[f"{name}/good"]
        else:
            upright = _cells(model, good)
            turned = [_cells(model, [np.rot90(g, k).copy() for g in good]) for k in QUARTER_TURNS]
            good_cells = torch.stack([upright, *turned], 1)
        records = [
            r for r in index.records if r.category == name and r.split == "test" and not r.is_good
        ]
        defects, masks = [], []
        for record in records:
            defects.append(_square(read_image(record.path), size))
            mask = cv2.imread(str(record.mask), cv2.IMREAD_GRAYSCALE)
            masks.append(cv2.resize(mask, (size, size), interpolation=cv2.INTER_AREA) > 127)
        if f"{name}/defects" in cached:
            defect_cells = cached[f"{name}/defects"]
        else:
            defect_cells = _cells(model, defects) if defects else good_cells[:0, 0]
        computed[f"{name}/good"], computed[f"{name}/defects"] = good_cells, defect_cells
        objects.append(ObjectViews(name, good, good_cells, defects, masks, defect_cells))
        if progress is not None:
            progress(1)
    if cache is not None and computed.keys() != cached.keys():
        save_file({k: v.contiguous() for k, v in computed.items()}, str(cache))
    if len(objects) < 2:
        raise UserError(
            f"{index.root} has {len(objects)} object(s) with at least {min_good} good training "
            "views; the comparator trains across many objects: render more with "
            "padformer-edge synth --procedural N."
        )
    return objects


class EpisodeSampler:
    """Draws batches of episodes, each from a generator keyed by (seed, step)."""

    def __init__(
        self,
        objects: list[ObjectViews],
        model: ComparisonModel,
        mix: EpisodeMix,
        seed: int,
    ) -> None:
        self.objects, self.model, self.mix, self.seed = objects, model, mix, seed
        self.with_defects = [i for i, o in enumerate(objects) if o.defects]

    def batch(self, step: int, size: int, window: int | None = None) -> Batch:
        """``size`` episodes; with ``window``, every query is cut to that many cells per
        side around one draw of its defect (anywhere for a good query)."""
        rng = np.random.default_rng([self.seed, step])
        count = int(rng.choice(self.mix.reference_counts))
        queries, refs, banks, masks, kinds = [], [], [], [], []
        synthetic: list[tuple[int, np.ndarray]] = []
        for slot in range(size):
            kind = QUERY_KINDS[int(rng.choice(3, p=self.mix.probabilities()))]
            if kind == "rendered" and not self.with_defects:
                kind = "good"
            pool = self.with_defects if kind == "rendered" else range(len(self.objects))
            obj = self.objects[int(rng.choice(list(pool)))]
            order = rng.permutation(len(obj.good))
            chosen, spare = order[:count], int(order[count % len(order)])
            cells = obj.good_cells[chosen]  # [N, 4, C, h, w]
            refs.append(cells[:, 0])
            banks.append(cells.transpose(0, 1).permute(0, 1, 3, 4, 2).reshape(-1, cells.shape[2]))
            mask = np.zeros(obj.good[0].shape[:2], bool)
            if kind == "rendered":
                pick = int(rng.integers(len(obj.defects)))
                queries.append(obj.defect_cells[pick])
                mask = obj.defect_masks[pick]
            elif kind == "synthetic":
                donors = [self.objects[int(i)].good[0] for i in rng.choice(len(self.objects), 3)]
                anomaly = make_anomaly(obj.good[spare], donors, rng, self.mix.synthetic_kinds)
                if anomaly is None:
                    kind = "good"
                    queries.append(obj.good_cells[spare, 0])
                else:
                    synthetic.append((slot, anomaly.image))
                    queries.append(None)
                    mask = anomaly.mask
            else:
                queries.append(obj.good_cells[spare, 0])
            masks.append(mask)
            kinds.append(kind)
        if synthetic:
            made = _cells(self.model, [image for _, image in synthetic])
            for (slot, _), cells in zip(synthetic, made, strict=True):
                queries[slot] = cells
        query_cells, mask_stack = torch.stack(queries), torch.from_numpy(np.stack(masks))
        origin = None
        if window is not None and window < query_cells.shape[-1]:
            grid = query_cells.shape[-1]
            origin = [window_origin(mask, grid, window, rng) for mask in masks]
            query_cells = torch.stack(
                [
                    q[:, y : y + window, x : x + window]
                    for q, (y, x) in zip(query_cells, origin, strict=True)
                ]
            )
            mask_stack = torch.stack(
                [
                    m[8 * y : 8 * (y + window), 8 * x : 8 * (x + window)]
                    for m, (y, x) in zip(mask_stack, origin, strict=True)
                ]
            )
        return Batch(query_cells, torch.stack(refs), torch.stack(banks), mask_stack, kinds, origin)
