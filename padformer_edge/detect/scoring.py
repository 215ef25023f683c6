"""From a query and its per-pass reconstructions to an anomaly map and a score.

Each pass ``i`` gives an error map ``E_i`` at the query's own resolution. The map keeps
the mean error over passes only where the variance over passes is above its median:
errors that every mask pattern reproduces are systematic (blur, texture the model cannot
render) rather than anomalies, while an anomaly is only wrong when its patch was hidden.
The image score is the maximum of that map. The ``fused`` metric reads its passes twice,
once for the map and once for the score, each with its own ``Readout``: its own
LAB/feature mix, with or without that filter, smoothed or not, all chosen on validation
data, because outlining a defect and ranking whole images want different things.

The ``fused`` mix can also add, per stride-8 cell, how far the query's frozen CNN feature
lies from the nearest cell of any reference (one minus the best cosine similarity). It is
the same for every pass, so it moves the pass mean and leaves the variance alone. It is
there because a measurement showed the reconstruction barely reads the references: the
same query scores within a few per cent whichever good references it gets, black ones
included. Without this term, the references would hardly affect the verdict. The
distance can also be averaged over magnified inputs (``reference_zoom``: the CNN sees
the images at 1x, 2x... the model's size): a stride-8 cell of a magnified image covers
less of the part, so small defects stand out more, while the 1x cells keep the context
that tells a large stain from a new view.

Passes are folded in chunks with an exact pairwise mean/variance merge, so a 20 MP camera
frame never needs all passes' colour maps in memory at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import kornia
import torch
import torch.nn.functional as F

from padformer_edge.detect.images import resize_square
from padformer_edge.detect.settings import ERROR_METRICS
from padformer_edge.errors import UserError
from padformer_edge.model.backbone import unfold_from_patches
from padformer_edge.model.config import (
    MAX_READOUT_SIGMA,
    MAX_REFERENCE_WEIGHT,
    MAX_REFERENCE_ZOOM,
)
from padformer_edge.model.padformer import PADFormer

BLUR_KERNEL = 7
BLUR_SIGMA = 1.4
MIN_SIDE = BLUR_KERNEL // 2 + 1  # the blur's reflect padding needs more pixels than its radius
MAX_CHUNK_VALUES = 1 << 25  # float32 values per chunk of colour maps: 128 MiB
SIMILARITY_QUERY_ROWS = 512  # query cells x reference cells per similarity block:
SIMILARITY_BANK_ROWS = 2048  # 1M cosines, 4 MiB, small enough to stay in a core's cache
TURNS_TEXT = "with quarter turns"  # how labels name a reference distance with turns
HIDDEN_ONLY_TEXT = "feature error on hidden patches only"  # ModelConfig.score_masked_cells


@dataclass(frozen=True)
class Readout:
    """How one job (the anomaly map, or the map whose maximum is the image score) reads
    the passes of one error mix: the paper's consistency filter or the plain pass mean,
    then a Gaussian of ``sigma`` pixels of the model's input (0: none).

    Sigma is counted in model pixels so that a readout chosen on 224 px renders smooths
    the same share of the part in a 20 MP camera frame.
    """

    consistency_filter: bool = True
    sigma: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.sigma <= MAX_READOUT_SIGMA:
            raise ValueError(
                f"readout sigma must lie in [0, {MAX_READOUT_SIGMA}], not {self.sigma}."
            )

    def apply(self, mean: torch.Tensor, variance: torch.Tensor, scale: float) -> torch.Tensor:
        """The ``[H, W]`` map of this readout; ``scale`` is query pixels per model pixel."""
        amap = consistency_filter(mean, variance) if self.consistency_filter else mean
        return smooth(amap, self.sigma * scale)

    @property
    def label(self) -> str:
        """'filtered, sigma 0' / 'mean, sigma 4': how the validation sweep names it."""
        return f"{'filtered' if self.consistency_filter else 'mean'}, sigma {self.sigma:g}"


@dataclass(frozen=True)
class Mix:
    """What one ``fused`` job adds up per pass: the LAB weight (the feature error takes the
    rest), the nearest-reference term's weight, the zoom its distance is averaged to, and
    whether the references are also matched turned by quarter turns."""

    lab_weight: float
    reference_weight: float = 0.0
    zoom: int = 1
    turns: bool = False

    @classmethod
    def of(cls, lab_weight: float, reference_weight: float, zoom: int, turns: bool) -> Mix:
        """The mix, with zoom 1 and no turns where there is no reference term for them to
        change."""
        if reference_weight > 0:
            return cls(lab_weight, reference_weight, zoom, turns)
        return cls(lab_weight, reference_weight)

    @property
    def reading(self) -> str:
        """' at zoom 2 with quarter turns': how the reference distance is read, in the words
        every label of a mix uses (empty at zoom 1 without turns)."""
        text = f" at zoom {self.zoom}" if self.zoom > 1 else ""
        return text + (f" {TURNS_TEXT}" if self.turns else "")

    @property
    def label(self) -> str:
        """'LAB weight 0.25', '..., reference weight 6' or '..., reference weight 6 at zoom
        2 with quarter turns': no reference term, zoom 1 or no turns, no mention, so
        signatures recorded before any of them existed still match."""
        text = f"LAB weight {self.lab_weight:g}"
        if self.reference_weight > 0:
            text += f", {self.reference_label}"
        return text

    @property
    def reference_label(self) -> str:
        """'reference weight 6 at zoom 2 with quarter turns': the reference term alone."""
        return f"reference weight {self.reference_weight:g}{self.reading}"


PAPER_READOUT = Readout(consistency_filter=True, sigma=0.0)
"""The paper's map and score: the consistency-filtered pass mean, unsmoothed."""

FUSED_LAB_WEIGHT = 0.25
"""The ``fused`` anomaly map is FUSED_LAB_WEIGHT * LAB / its spread + (1 -
FUSED_LAB_WEIGHT) * feature / its spread + FUSED_MAP_REFERENCE_WEIGHT * the
nearest-reference distance averaged over 1x..FUSED_MAP_REFERENCE_ZOOM x inputs (references
also turned by quarter turns where FUSED_MAP_REFERENCE_TURNS), read with
FUSED_MAP_READOUT. All chosen on the validation render (seed 1) by
``benchmarks/tune_validation.py`` for the best AUPRO, never on the test render; README
lists the search."""
FUSED_MAP_REFERENCE_WEIGHT = 12.0
FUSED_MAP_REFERENCE_ZOOM = 2
FUSED_MAP_REFERENCE_TURNS = True
FUSED_MAP_READOUT = Readout(consistency_filter=False, sigma=2.0)

FUSED_SCORE_LAB_WEIGHT = 0.0
"""The same mix and readout for the map whose maximum is the image score, chosen on the
validation render for the best image AUROC. The score leaves colour out and is carried by
the nearest-reference distance: a whole-image verdict gains most from asking whether
anything like each cell was seen in a reference. It reads that distance on 1x and 2x
inputs, as the map does: the finer cells of the 2x input see small defects that a
stride-8 cell of the model's own input averages away. Both jobs match turned references:
a part seen from any side is seen at any roll, and a quarter-turned reference is often a
query's nearest good view. The map reads the plain pass mean, smoothed (the paper's
consistency filter zeroes at least half of every map, defect pixels with a low variance
over passes among them); the score keeps the filter, unsmoothed, which on 360 validation
images ranked images a little better than the smoothed mean, the two within a point."""
FUSED_SCORE_REFERENCE_WEIGHT = 192.0
FUSED_SCORE_REFERENCE_ZOOM = 2
FUSED_SCORE_REFERENCE_TURNS = True
FUSED_SCORE_READOUT = Readout(consistency_filter=True, sigma=0.0)


def blur(images: torch.Tensor) -> torch.Tensor:
    """The paper's query smoothing: Gaussian, sigma 1.4, 7x7, per channel."""
    return kornia.filters.gaussian_blur2d(
        images, (BLUR_KERNEL, BLUR_KERNEL), (BLUR_SIGMA, BLUR_SIGMA), border_type="reflect"
    )


def smooth(amap: torch.Tensor, sigma: float) -> torch.Tensor:
    """``[H, W]`` map blurred by a Gaussian of ``sigma`` pixels (0: unchanged).

    A wide blur on a large camera frame runs on a frame shrunk by an integer factor (area
    average) and is brought back bilinearly: the result differs from a full-size blur by
    less than the blur removes, and a 20 MP frame does not need a 2,000-tap kernel.
    """
    if sigma <= 0:
        return amap
    factor = max(1, int(sigma // SMOOTH_MAX_SIGMA))
    size = amap.shape[-2:]
    small = amap[None, None]
    if factor > 1:
        small = F.avg_pool2d(small, factor, ceil_mode=True)
    sigma_small = sigma / factor
    radius = min(int(4 * sigma_small + 0.5), min(small.shape[-2:]) - 1)
    if radius < 1:
        return amap
    kernel = 2 * radius + 1
    small = kornia.filters.gaussian_blur2d(
        small, (kernel, kernel), (sigma_small, sigma_small), border_type="reflect"
    )
    return upsample(small, (int(size[0]), int(size[1])))[0, 0]


SMOOTH_MAX_SIGMA = 8.0  # blur at full size up to this sigma; beyond, on a shrunk frame


def upsample(images: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Bilinear resize of ``[B, C, h, w]`` to ``size`` (a no-op at that size already)."""
    if tuple(images.shape[-2:]) == tuple(size):
        return images
    return F.interpolate(images, size=size, mode="bilinear", align_corners=False)


class ErrorMetric(Protocol):
    """A way to compare reconstructions with their query, one error map per pass, and
    how the map and the image score read the passes (``PAPER_READOUT`` unless validated
    otherwise)."""

    map_readout: Readout
    score_readout: Readout

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> torch.Tensor:
        """What every pass is compared with; computed once per query."""
        ...

    def errors(
        self,
        target: torch.Tensor,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``[P, H, W]`` errors of ``P`` reconstructions (``[P, 3, S, S]`` in ``[0, 1]``,
        and for models with CNN tokens their predicted ``[P, M, F]`` features and the
        ``[P, M]`` weight of each pass's error at each patch, ``masks.hidden_weights``,
        for a model that scores hidden patches only); or
        ``[P, 2, H, W]``, the second channel being the errors the image score is taken
        from, for a metric that ranks images with another mix than it draws maps with."""
        ...


class ColourMetric:
    """Squared distance in a colour space, between the blurred query and each upsampled
    reconstruction (``lab``: CIELAB through kornia, the paper's choice; ``rgb``: the same
    with no colour conversion, for the metric ablation)."""

    map_readout = score_readout = PAPER_READOUT

    def __init__(self, space: Literal["lab", "rgb"]) -> None:
        self.space = space

    def convert(self, images01: torch.Tensor) -> torch.Tensor:
        return kornia.color.rgb_to_lab(images01) if self.space == "lab" else images01

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> torch.Tensor:
        return blur(self.convert(query01))

    def errors(
        self,
        target: torch.Tensor,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        recon = self.convert(upsample(recon01, size).clamp_(0.0, 1.0))
        return (target - recon).square_().sum(dim=1)


class FeatureMetric:
    """Squared distance between encoder patch features of the query and of each
    reconstruction, upsampled bilinearly from the patch grid to the query resolution
    (the paper's feature error, with the from-scratch encoder of pixel models)."""

    map_readout = score_readout = PAPER_READOUT

    def __init__(self, model: PADFormer) -> None:
        self.model = model

    def features(self, images_model: torch.Tensor) -> torch.Tensor:
        feats = self.model.encode_features(images_model).float()
        grid = self.model.config.grid_size
        return feats.transpose(1, 2).reshape(feats.shape[0], feats.shape[2], grid, grid)

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> torch.Tensor:
        return self.features(query_model)

    def errors(
        self,
        target: torch.Tensor,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        distance = (self.features(self.model.normalize(recon01)) - target).square_().sum(1)
        return upsample(distance.unsqueeze(1), size).squeeze(1)


class PredictedFeatureMetric:
    """Squared distance between the query's frozen CNN features and the decoder's
    prediction of them, per stride-8 cell, upsampled to the query resolution: the feature
    error of models with CNN tokens, whose ImageNet features see texture and shape."""

    map_readout = score_readout = PAPER_READOUT

    def __init__(self, model: PADFormer) -> None:
        self.model = model

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> torch.Tensor:
        return self.model.target_features(query_model).float()

    def errors(
        self,
        target: torch.Tensor,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if features is None:
            raise ValueError("the feature error of a CNN-token model needs predicted features.")
        cfg = self.model.config
        cells = cfg.cells_per_side
        squared = (features.float() - target).square_()  # [P, M, C * cells * cells]
        per_cell = squared.unflatten(-1, (-1, cells * cells)).sum(-2)  # [P, M, cells^2]
        if cfg.score_masked_cells:
            if weights is None:
                raise ValueError("this model scores its hidden patches only: pass their weights.")
            per_cell = per_cell * weights.unsqueeze(-1).to(per_cell.dtype)
        maps = unfold_from_patches(per_cell, cells, cfg.grid_size)  # [P, 1, g*c, g*c]
        return upsample(maps, size).squeeze(1)


def score_scales_of(model: PADFormer) -> tuple[float, float]:
    """(LAB, feature) spreads on good views stored in an edge checkpoint (``score_scales``),
    in the order ``mix_errors`` takes them."""
    lab_scale, feature_scale = (float(v) for v in model.score_scales)
    return lab_scale, feature_scale


def mix_errors(
    lab: torch.Tensor,
    feature: torch.Tensor,
    scales: tuple[float, float],
    lab_weight: float,
    reference: torch.Tensor | None = None,
    reference_weight: float = 0.0,
    reconstruction_weight: float = 1.0,
) -> torch.Tensor:
    """The ``fused`` mix of ``[P, H, W]`` LAB and feature errors, each divided by its
    spread on good views, plus ``reference_weight`` times the ``[H, W]`` nearest-reference
    distance: the one formula the detector and the validation sweep share.
    ``reconstruction_weight`` 0 weighs the reconstruction out (the ``distance`` metric)."""
    lab_part = lab_weight / scales[0] * reconstruction_weight
    feature_part = (1.0 - lab_weight) / scales[1] * reconstruction_weight
    mixed = lab * lab_part + feature * feature_part
    if reference_weight > 0:
        if reference is None:
            raise ValueError("a reference weight above 0 needs the reference distance map.")
        mixed = mixed + reference_weight * reference
    return mixed


def unit_cells(maps: torch.Tensor) -> torch.Tensor:
    """``[B, C, h, w]`` CNN maps with each cell's channel vector standardised (as the
    feature target is) and then scaled to unit length, so a dot product is a cosine."""
    standard = F.layer_norm(maps.float().permute(0, 2, 3, 1), (maps.shape[1],))
    return F.normalize(standard, dim=-1).permute(0, 3, 1, 2)


def cell_features(model: PADFormer, target_features: torch.Tensor) -> torch.Tensor:
    """``[B, C, h, w]`` unit-length frozen CNN features of every stride-8 cell, from the
    ``[B, M, F]`` ``model.target_features`` of normalised images (the feature error's
    own target, so a query runs the CNN once for both)."""
    cfg = model.config
    cells = unfold_from_patches(target_features.float(), cfg.cells_per_side, cfg.grid_size)
    return F.normalize(cells, dim=1)


def level_cells(model: PADFormer, squares01: torch.Tensor, level: int) -> torch.Tensor:
    """``[B, C, h, w]`` unit cells of ``[B, 3, L, L]`` square images in [0, 1] already at
    ``level`` times the model's size. At 1x they come through ``model.target_features``,
    exactly as the feature error's target (and a query's 1x cells) do; at a higher level
    the frozen CNN reads the magnified image directly (it is fully convolutional)."""
    normalised = model.normalize(squares01)
    if level == 1:
        return cell_features(model, model.target_features(normalised))
    return unit_cells(model.encoder.patch_embed.cnn(normalised))


def flat_cells(cells: torch.Tensor) -> torch.Tensor:
    return cells.permute(0, 2, 3, 1).reshape(-1, cells.shape[1])


@dataclass(frozen=True)
class ReferenceBank:
    """Every cell of the references at one magnification, ``[R, C]``. The first
    ``upright`` rows are the references as taken; any further rows are the same
    references turned by a quarter, a half and three quarters, so one similarity product
    serves a mix that matches turned references and one that does not."""

    cells: torch.Tensor
    upright: int

    @property
    def turned(self) -> bool:
        return self.cells.shape[0] > self.upright


def reference_banks(
    model: PADFormer, references01: list[torch.Tensor], zoom: int, turns: bool = False
) -> list[ReferenceBank]:
    """One bank per magnification 1..``zoom`` of the references (``[3, H, W]`` each, in
    [0, 1], squeezed square like every input), with quarter turns when ``turns``."""
    banks = []
    for level in range(1, zoom + 1):
        size = model.config.img_size * level
        squares = torch.cat([resize_square(image.unsqueeze(0), size) for image in references01])
        upright = flat_cells(level_cells(model, squares, level))
        cells = [upright]
        if turns:
            cells += [
                flat_cells(level_cells(model, torch.rot90(squares, k, (-2, -1)), level))
                for k in (1, 2, 3)
            ]
        banks.append(ReferenceBank(torch.cat(cells), upright.shape[0]))
    return banks


def best_cosines(
    cells: torch.Tensor, bank: ReferenceBank
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``[Q]`` best cosine of each of the ``[Q, C]`` unit cells to the bank's upright rows,
    and (for a turned bank) to all its rows.

    The similarity matrix is made and reduced one cache-sized block at a time
    (``SIMILARITY_QUERY_ROWS`` x ``SIMILARITY_BANK_ROWS``): with C = 40 channels the product
    is cheap and writing a whole chunk of it to memory and reading it back for the maximum
    was most of the cost (at 2x zoom with a dozen turned references, about a gigabyte per
    query); a block is reduced while it is still in the cache. Each cosine is the same dot
    product either way, and a maximum does not depend on the order it is taken in.
    """
    upright = torch.full((cells.shape[0],), -torch.inf, dtype=cells.dtype)
    every = upright.clone() if bank.turned else None
    for start in range(0, cells.shape[0], SIMILARITY_QUERY_ROWS):
        rows = cells[start : start + SIMILARITY_QUERY_ROWS]
        best = upright[start : start + SIMILARITY_QUERY_ROWS]
        _fold_max(rows, bank.cells[: bank.upright], best)
        if every is not None:
            best_every = every[start : start + SIMILARITY_QUERY_ROWS]
            best_every.copy_(best)
            _fold_max(rows, bank.cells[bank.upright :], best_every)
    return upright, every


def _fold_max(rows: torch.Tensor, bank_rows: torch.Tensor, best: torch.Tensor) -> None:
    """``best`` raised in place to each row's largest cosine with any of ``bank_rows``."""
    for start in range(0, bank_rows.shape[0], SIMILARITY_BANK_ROWS):
        block = rows @ bank_rows[start : start + SIMILARITY_BANK_ROWS].T
        torch.maximum(best, block.amax(dim=1), out=best)


Distances = dict[tuple[int, bool], torch.Tensor]
"""(magnification, turned references) -> ``[H, W]`` nearest-reference distance map."""


def nearest_reference_distances(
    model: PADFormer,
    query01: torch.Tensor,
    query_target: torch.Tensor,
    banks: list[ReferenceBank],
    size: tuple[int, int],
) -> Distances:
    """For each magnification of ``banks`` (and, for turned banks, with the turns too): for
    each cell of the query (``query01``, ``[1, 3, H, W]`` in [0, 1]; ``query_target``, its
    ``[1, M, F]`` ``model.target_features``) one minus its best cosine similarity to any
    reference cell, upsampled to ``size``. Any cell, not the same place: the part is seen
    from another side in every reference."""
    distances: Distances = {}
    for level, bank in enumerate(banks, start=1):
        if level == 1:
            cells = cell_features(model, query_target)
        else:
            square = resize_square(query01, model.config.img_size * level)
            cells = level_cells(model, square, level)
        height, width = cells.shape[-2:]
        for turned, best in zip((False, True), best_cosines(flat_cells(cells), bank), strict=True):
            if best is not None:
                distance = (1.0 - best).reshape(1, 1, height, width)
                distances[level, turned] = upsample(distance, size)[0, 0]
    return distances


def reference_distance(distances: Distances, mix: Mix) -> torch.Tensor:
    """The reference distance ``mix`` reads: the mean of its magnifications' maps."""
    maps = [distances[level, mix.turns] for level in range(1, mix.zoom + 1)]
    return torch.stack(maps).mean(0) if len(maps) > 1 else maps[0]


class FusedMetric:
    """LAB error and predicted-feature error, each divided by its spread on good views
    (stored in the checkpoint as ``score_scales``) and mixed with ``lab_weight`` for the
    map and ``score_lab_weight`` for the image score: colour finds stains, features find
    shape and texture, and neither alone finds both. Each job also has its own readout and
    its own nearest-reference term (weight, zoom, turns). Settings not given are the model's
    own validated ones (``ModelConfig.fused_*``) where it has them, else the product's."""

    def __init__(
        self,
        model: PADFormer,
        lab_weight: float | None = None,
        score_lab_weight: float | None = None,
        references01: list[torch.Tensor] | None = None,
        reference_weight: float | None = None,
        score_reference_weight: float | None = None,
        reference_zoom: int | None = None,
        score_reference_zoom: int | None = None,
        reference_turns: bool | None = None,
        score_reference_turns: bool | None = None,
        reconstruction_weight: float = 1.0,
    ) -> None:
        config = model.config
        self.reconstruction_weight = reconstruction_weight
        self.lab_weight, self.score_lab_weight = _per_job(
            "LAB weight",
            (lab_weight, score_lab_weight),
            (config.fused_lab_weight, config.fused_score_lab_weight),
            (FUSED_LAB_WEIGHT, FUSED_SCORE_LAB_WEIGHT),
            float,
            (0.0, 1.0),
        )
        self.reference_weight, self.score_reference_weight = _per_job(
            "reference weight",
            (reference_weight, score_reference_weight),
            (config.fused_map_reference_weight, config.fused_score_reference_weight),
            (FUSED_MAP_REFERENCE_WEIGHT, FUSED_SCORE_REFERENCE_WEIGHT),
            float,
            (0.0, MAX_REFERENCE_WEIGHT),
        )
        self.reference_zoom, self.score_reference_zoom = _per_job(
            "reference zoom",
            (reference_zoom, score_reference_zoom),
            (config.fused_map_reference_zoom, config.fused_score_reference_zoom),
            (FUSED_MAP_REFERENCE_ZOOM, FUSED_SCORE_REFERENCE_ZOOM),
            int,
            (1, MAX_REFERENCE_ZOOM),
        )
        turns, score_turns = _per_job(
            "reference turns",
            (reference_turns, score_reference_turns),
            (config.fused_map_reference_turns, config.fused_score_reference_turns),
            (FUSED_MAP_REFERENCE_TURNS, FUSED_SCORE_REFERENCE_TURNS),
            bool,
            None,
        )
        self.model = model
        # one mix when both jobs take the same settings: then the errors stay [P, H, W]
        map_mix = Mix.of(self.lab_weight, self.reference_weight, self.reference_zoom, turns)
        score_mix = Mix.of(
            self.score_lab_weight,
            self.score_reference_weight,
            self.score_reference_zoom,
            score_turns,
        )
        self.mixes = tuple(dict.fromkeys((map_mix, score_mix)))
        reading = [mix for mix in self.mixes if mix.reference_weight > 0]
        self.zoom = max((mix.zoom for mix in reading), default=0)  # magnifications needed
        self.turns = any(mix.turns for mix in reading)
        self.reads_references = bool(reading)
        self.banks = (
            reference_banks(model, references01, self.zoom, self.turns)
            if self.reads_references and references01 is not None
            else None
        )
        self.map_readout = readout_of(
            config.fused_map_filter, config.fused_map_sigma, FUSED_MAP_READOUT
        )
        self.score_readout = readout_of(
            config.fused_score_filter, config.fused_score_sigma, FUSED_SCORE_READOUT
        )
        self.lab = ColourMetric("lab")
        self.feature = PredictedFeatureMetric(model)
        self.scales = score_scales_of(model)

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> tuple:
        """The LAB and feature targets, and each mix's ``[H, W]`` reference distance (None
        without a reference term): the distance does not change over passes, so it is
        read here once per query, not in ``errors`` once per chunk of passes."""
        feature = self.feature.target(query01, query_model)
        references = self.reference_maps(query01, feature)
        return self.lab.target(query01, query_model), feature, references

    def reference_maps(
        self, query01: torch.Tensor, feature: torch.Tensor
    ) -> list[torch.Tensor | None]:
        """Each mix's ``[H, W]`` reference distance (None without a reference term), from
        the query and its frozen CNN features (``feature.target``)."""
        if not self.reads_references:
            return [None] * len(self.mixes)
        if self.banks is None:
            raise ValueError("this fused metric weighs the references: build it with them.")
        size = (query01.shape[-2], query01.shape[-1])
        distances = nearest_reference_distances(self.model, query01, feature, self.banks, size)
        return [
            reference_distance(distances, mix) if mix.reference_weight > 0 else None
            for mix in self.mixes
        ]

    def errors(
        self,
        target: tuple,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        lab = self.lab.errors(target[0], recon01, size)
        feature = self.feature.errors(target[1], recon01, size, features, weights)
        mixes = [
            mix_errors(
                lab,
                feature,
                self.scales,
                mix.lab_weight,
                reference,
                mix.reference_weight,
                self.reconstruction_weight,
            )
            for mix, reference in zip(self.mixes, target[2], strict=True)
        ]
        return mixes[0] if len(mixes) == 1 else torch.stack(mixes, dim=1)


class DistanceMetric(FusedMetric):
    """The nearest-reference distance alone, with no reconstruction pass: the ``fused``
    metric with the reconstruction weighted out, each job keeping its reference weight,
    zoom, turns and smoothing (a job that weighs the references 0 reads them at weight 1).
    With no passes there is no variance to filter by, so both jobs read the plain map.
    It is the floor the reconstruction must beat, and the fast choice for a weak CPU: it
    costs the frozen CNN's features and a nearest-neighbour search, not 15 decoder passes.
    """

    reads_passes = False

    def __init__(self, model: PADFormer, references01: list[torch.Tensor] | None = None) -> None:
        fused = FusedMetric(model)  # the model's own settings, resolved and checked once
        super().__init__(
            model,
            references01=references01,
            reference_weight=fused.reference_weight or 1.0,
            score_reference_weight=fused.score_reference_weight or 1.0,
            reconstruction_weight=0.0,
        )
        self.map_readout = Readout(consistency_filter=False, sigma=self.map_readout.sigma)
        self.score_readout = Readout(consistency_filter=False, sigma=self.score_readout.sigma)

    def maps(self, query01: torch.Tensor, query_model: torch.Tensor) -> list[torch.Tensor]:
        """Each job's ``[H, W]`` weighted reference distance, map job first (no LAB target:
        nothing here compares colours)."""
        references = self.reference_maps(query01, self.feature.target(query01, query_model))
        return [mix.reference_weight * d for mix, d in zip(self.mixes, references, strict=True)]


def readout_of(consistency_filter: bool | None, sigma: float | None, default: Readout) -> Readout:
    """A model's own readout where its config sets one, field by field, else ``default``."""
    return Readout(
        default.consistency_filter if consistency_filter is None else consistency_filter,
        default.sigma if sigma is None else sigma,
    )


def _per_job(
    name: str,
    given: tuple,
    model_own: tuple,
    product: tuple,
    kind: type,
    bounds: tuple[float, float] | None,
) -> tuple:
    """One fused setting for the map and for the score, each resolved by ``_own`` and held
    to ``bounds``: every setting of a fused job follows the same precedence, so it is
    resolved and checked in one place."""
    values = tuple(kind(_own(*choice)) for choice in zip(given, model_own, product, strict=True))
    for value in values:
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            whole = "a whole number " if kind is int else ""
            raise UserError(
                f"fused {name} {value:g} must be {whole}in [{bounds[0]:g}, {bounds[1]:g}]."
            )
    return values


def _own(given: float | None, model_own: float | None, product: float) -> float:
    """The value given, else the model's own validated one, else the product's."""
    if given is not None:
        return given
    return product if model_own is None else model_own


def build_metric(
    name: str, model: PADFormer, references01: list[torch.Tensor] | None = None
) -> ErrorMetric:
    """The metric called ``name``; an unknown name is a user error. ``references01``
    (``[3, H, W]`` each, in [0, 1]) are the references, for a metric that reads them
    itself; without them the metric can still name its scoring (``scoring_signature``)."""
    if name in ("lab", "rgb"):
        return ColourMetric(name)  # type: ignore[arg-type]
    cnn = model.config.cnn_tokens
    if name == "feature":
        return PredictedFeatureMetric(model) if cnn else FeatureMetric(model)
    reference_metrics = {"fused": FusedMetric, "distance": DistanceMetric}
    if name in reference_metrics:
        if not cnn:
            raise UserError(
                f"the {name} metric needs a model with CNN tokens (preset 'edge'); "
                f"this is a '{model.preset_name}' model: use --metric lab."
            )
        return reference_metrics[name](model, references01=references01)
    raise UserError(f"error metric '{name}' is unknown; choose one of {', '.join(ERROR_METRICS)}.")


def default_metric(model: PADFormer) -> str:
    """``fused`` for models that can compute it, the paper's ``lab`` otherwise."""
    return "fused" if model.config.cnn_tokens else "lab"


def resolve_metric(
    setting: str, model: PADFormer, references01: list[torch.Tensor] | None = None
) -> tuple[str, ErrorMetric]:
    """(name, metric) for a detection setting's ``metric`` (``auto`` picks the default)."""
    name = default_metric(model) if setting == "auto" else setting
    return name, build_metric(name, model, references01)


def scoring_signature(name: str, metric: ErrorMetric) -> str:
    """One line that changes whenever the scores of the same images would: the metric, and
    how its map and its image score read the passes (with the fused metric's weights). A
    profile's threshold is only valid for the signature it was calibrated under."""
    map_text, score_text = metric.map_readout.label, metric.score_readout.label
    if isinstance(metric, DistanceMetric):
        map_mix, score_mix = metric.mixes[0], metric.mixes[-1]
        map_text = f"{map_mix.reference_label}, {map_text}"
        score_text = f"{score_mix.reference_label}, {score_text}"
    elif isinstance(metric, FusedMetric):
        map_mix, score_mix = metric.mixes[0], metric.mixes[-1]
        map_text = f"{map_mix.label}, {map_text}"
        score_text = f"{score_mix.label}, {score_text}"
    signature = _signature(name, map_text, score_text)
    reads_features = isinstance(metric, PredictedFeatureMetric | FusedMetric)
    if reads_features and not isinstance(metric, DistanceMetric):
        signature += f"; {HIDDEN_ONLY_TEXT}" if metric.model.config.score_masked_cells else ""
    return signature


def paper_signature(name: str) -> str:
    """The signature every non-fused metric had before signatures were recorded."""
    return _signature(name, PAPER_READOUT.label, PAPER_READOUT.label)


def _signature(name: str, map_text: str, score_text: str) -> str:
    return f"{name}; map: {map_text}; score: {score_text}"


@dataclass
class PassMoments:
    """Running count, mean and sum of squared deviations of error maps over passes."""

    count: int
    mean: torch.Tensor
    sq_dev: torch.Tensor

    @classmethod
    def of(cls, errors: torch.Tensor) -> PassMoments:
        mean = errors.mean(dim=0)
        return cls(errors.shape[0], mean, (errors - mean).square_().sum(dim=0))

    def merge(self, other: PassMoments) -> PassMoments:
        """Exact combination of two disjoint groups of passes (Chan et al.)."""
        count = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / count)
        sq_dev = self.sq_dev + other.sq_dev + delta.square() * (self.count * other.count / count)
        return PassMoments(count, mean, sq_dev)

    @property
    def variance(self) -> torch.Tensor:
        """Population variance (divide by the number of passes), as the paper defines it."""
        return self.sq_dev / self.count


def consistency_filter(mean: torch.Tensor, variance: torch.Tensor) -> torch.Tensor:
    """Keep ``mean`` where ``variance`` is strictly above its median, zero elsewhere.

    The median is the lower middle value (``kthvalue``, which unlike ``quantile`` has no
    size limit), and ties at it are dropped, so at least half of the pixels are always
    zeroed: a map whose variance is flat everywhere has nothing inconsistent to report.
    """
    flat = variance.reshape(-1)
    median = flat.kthvalue((flat.numel() + 1) // 2).values
    return torch.where(variance > median, mean, torch.zeros_like(mean))


@dataclass
class ScoredQuery:
    """The anomaly map of one query, its score and per-pass error summaries."""

    anomaly_map: torch.Tensor
    score: float
    pass_mean: list[float]
    pass_max: list[float]


def score_query(
    metric: ErrorMetric,
    query01: torch.Tensor,
    query_model: torch.Tensor,
    recon01: torch.Tensor,
    features: torch.Tensor | None = None,
    weights: torch.Tensor | None = None,
) -> ScoredQuery:
    """Score one query (``[1, 3, H, W]`` in [0, 1]) against its ``[P, 3, S, S]`` passes
    (and, for models with CNN tokens, their ``[P, M, F]`` predicted features and the
    ``[P, M]`` weights of their patches' errors, ``masks.hidden_weights``); ``S`` is the
    model's input size, which sets the readouts' pixel scale."""
    size = (query01.shape[-2], query01.shape[-1])
    target = metric.target(query01, query_model)
    chunk = max(1, MAX_CHUNK_VALUES // (3 * size[0] * size[1]))
    moments: PassMoments | None = None
    pass_mean: list[float] = []
    pass_max: list[float] = []
    for start in range(0, recon01.shape[0], chunk):
        part = slice(start, start + chunk)
        part_features = None if features is None else features[part]
        part_weights = None if weights is None else weights[part]
        errors = metric.errors(target, recon01[part], size, part_features, part_weights)
        errors = errors if errors.ndim == 4 else errors.unsqueeze(1)  # [P, map(, score), H, W]
        pass_mean += errors[:, 0].mean(dim=(1, 2)).tolist()
        pass_max += errors[:, 0].amax(dim=(1, 2)).tolist()
        folded = PassMoments.of(errors)
        moments = folded if moments is None else moments.merge(folded)
    assert moments is not None  # recon01 always holds at least two passes
    scale = max(size) / recon01.shape[-1]  # query pixels per model pixel
    anomaly_map = metric.map_readout.apply(moments.mean[0], moments.variance[0], scale)
    # one mix read one way (the paper's metrics) is one map: filter a 20 MP frame once
    same = moments.mean.shape[0] == 1 and metric.score_readout == metric.map_readout
    score_map = (
        anomaly_map
        if same
        else metric.score_readout.apply(moments.mean[-1], moments.variance[-1], scale)
    )
    return ScoredQuery(anomaly_map, float(score_map.max()), pass_mean, pass_max)


def score_without_passes(
    metric: DistanceMetric, query01: torch.Tensor, query_model: torch.Tensor
) -> ScoredQuery:
    """Score one query (``[1, 3, H, W]`` in [0, 1]) with a metric that reads no pass: its
    maps, each read with its job's readout, as ``score_query`` would read passes that all
    agree (no per-pass summaries, since there are no passes)."""
    size = (query01.shape[-2], query01.shape[-1])
    scale = max(size) / metric.model.config.img_size  # query pixels per model pixel
    maps = metric.maps(query01, query_model)
    flat = torch.zeros_like(maps[0])  # no passes, no variance
    anomaly_map = metric.map_readout.apply(maps[0], flat, scale)
    score_map = metric.score_readout.apply(maps[-1], flat, scale)
    return ScoredQuery(anomaly_map, float(score_map.max()), [], [])
