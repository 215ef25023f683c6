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
included. Without this term, the references would hardly affect the verdict.

Passes are folded in chunks with an exact pairwise mean/variance merge, so a 20 MP camera
frame never needs all passes' colour maps in memory at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import kornia
import torch
import torch.nn.functional as F

from padformer_edge.detect.settings import ERROR_METRICS
from padformer_edge.errors import UserError
from padformer_edge.model import PADFormer
from padformer_edge.model.backbone import unfold_from_patches
from padformer_edge.model.config import MAX_READOUT_SIGMA, MAX_REFERENCE_WEIGHT

BLUR_KERNEL = 7
BLUR_SIGMA = 1.4
MIN_SIDE = BLUR_KERNEL // 2 + 1  # the blur's reflect padding needs more pixels than its radius
MAX_CHUNK_VALUES = 1 << 25  # float32 values per chunk of colour maps: 128 MiB


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


PAPER_READOUT = Readout(consistency_filter=True, sigma=0.0)
"""The paper's map and score: the consistency-filtered pass mean, unsmoothed."""

FUSED_LAB_WEIGHT = 0.25
"""The ``fused`` anomaly map is FUSED_LAB_WEIGHT * LAB / its spread + (1 -
FUSED_LAB_WEIGHT) * feature / its spread + FUSED_MAP_REFERENCE_WEIGHT * the
nearest-reference distance, read with FUSED_MAP_READOUT. All chosen on the validation
render (seed 1) by ``benchmarks/tune_validation.py`` for the best AUPRO, never on the
test render; README lists the search."""
FUSED_MAP_REFERENCE_WEIGHT = 6.0
FUSED_MAP_READOUT = Readout(consistency_filter=False, sigma=2.0)

FUSED_SCORE_LAB_WEIGHT = 0.0
"""The same mix and readout for the map whose maximum is the image score, chosen on the
validation render for the best image AUROC. Both jobs read the plain pass mean: the
paper's filter zeroes at least half of every map, defect pixels with a low variance over
passes among them, and on validation it lost at both jobs. The score weighs the
references twice as much as the map and leaves colour out: a whole-image verdict gains
most from asking whether anything like each cell was seen in a reference, while an
outline also wants colour's sharper edges."""
FUSED_SCORE_REFERENCE_WEIGHT = 12.0
FUSED_SCORE_READOUT = Readout(consistency_filter=False, sigma=2.0)


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
    ) -> torch.Tensor:
        """``[P, H, W]`` errors of ``P`` reconstructions (``[P, 3, S, S]`` in ``[0, 1]``,
        and for models with CNN tokens their predicted ``[P, M, F]`` features); or
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
    ) -> torch.Tensor:
        if features is None:
            raise ValueError("the feature error of a CNN-token model needs predicted features.")
        cfg = self.model.config
        cells = cfg.cells_per_side
        squared = (features.float() - target).square_()  # [P, M, C * cells * cells]
        per_cell = squared.unflatten(-1, (-1, cells * cells)).sum(-2)  # [P, M, cells^2]
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
) -> torch.Tensor:
    """The ``fused`` mix of ``[P, H, W]`` LAB and feature errors, each divided by its
    spread on good views, plus ``reference_weight`` times the ``[H, W]`` nearest-reference
    distance: the one formula the detector and the validation sweep share."""
    mixed = lab * (lab_weight / scales[0]) + feature * ((1.0 - lab_weight) / scales[1])
    if reference_weight > 0:
        if reference is None:
            raise ValueError("a reference weight above 0 needs the reference distance map.")
        mixed = mixed + reference_weight * reference
    return mixed


def cell_features(model: PADFormer, target_features: torch.Tensor) -> torch.Tensor:
    """``[B, C, h, w]`` unit-length frozen CNN features of every stride-8 cell, from the
    ``[B, M, F]`` ``model.target_features`` of normalised images (the feature error's
    own target, so a query runs the CNN once for both)."""
    cfg = model.config
    cells = unfold_from_patches(target_features.float(), cfg.cells_per_side, cfg.grid_size)
    return F.normalize(cells, dim=1)


def reference_bank(model: PADFormer, references_model: torch.Tensor) -> torch.Tensor:
    """``[N * h * w, C]``: every cell of the ``[N, 3, S, S]`` normalised references."""
    cells = cell_features(model, model.target_features(references_model))
    return cells.permute(0, 2, 3, 1).reshape(-1, cells.shape[1])


def nearest_reference_distance(
    model: PADFormer, query_target: torch.Tensor, bank: torch.Tensor, size: tuple[int, int]
) -> torch.Tensor:
    """``[H, W]``: for each cell of the query (``query_target``: its ``[1, M, F]``
    ``model.target_features``), one minus its best cosine similarity to any reference
    cell (``bank``), upsampled to the query's ``size``. Any cell, not the same place: the
    part is seen from another side in every reference."""
    cells = cell_features(model, query_target)[0]  # [C, h, w]
    channels, height, width = cells.shape
    best = (cells.reshape(channels, -1).T @ bank.T).amax(dim=1)
    distance = (1.0 - best).reshape(1, 1, height, width)
    return upsample(distance, size)[0, 0]


class FusedMetric:
    """LAB error and predicted-feature error, each divided by its spread on good views
    (stored in the checkpoint as ``score_scales``) and mixed with ``lab_weight`` for the
    map and ``score_lab_weight`` for the image score: colour finds stains, features find
    shape and texture, and neither alone finds both. Each job also has its own readout.
    Weights and readouts not given are the model's own validated ones
    (``ModelConfig.fused_*``) where it has them, else the product's defaults."""

    def __init__(
        self,
        model: PADFormer,
        lab_weight: float | None = None,
        score_lab_weight: float | None = None,
        references_model: torch.Tensor | None = None,
        reference_weight: float | None = None,
        score_reference_weight: float | None = None,
    ) -> None:
        config = model.config
        if lab_weight is None:
            lab_weight = _first_set(config.fused_lab_weight, FUSED_LAB_WEIGHT)
        if score_lab_weight is None:
            score_lab_weight = _first_set(config.fused_score_lab_weight, FUSED_SCORE_LAB_WEIGHT)
        self.lab_weight, self.score_lab_weight = lab_weight, score_lab_weight
        for weight in (lab_weight, score_lab_weight):
            if not 0.0 <= weight <= 1.0:
                raise UserError(f"fused LAB weight {weight} must lie in [0, 1].")
        if reference_weight is None:
            reference_weight = _first_set(
                config.fused_map_reference_weight, FUSED_MAP_REFERENCE_WEIGHT
            )
        if score_reference_weight is None:
            score_reference_weight = _first_set(
                config.fused_score_reference_weight, FUSED_SCORE_REFERENCE_WEIGHT
            )
        self.reference_weight, self.score_reference_weight = (
            reference_weight,
            score_reference_weight,
        )
        for weight in (self.reference_weight, self.score_reference_weight):
            if not 0.0 <= weight <= MAX_REFERENCE_WEIGHT:
                raise UserError(
                    f"fused reference weight {weight} must lie in [0, {MAX_REFERENCE_WEIGHT:g}]."
                )
        self.model = model
        self.reads_references = max(reference_weight, score_reference_weight) > 0
        self.bank = (
            reference_bank(model, references_model)
            if self.reads_references and references_model is not None
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
        # one mix when both jobs take the same weights: then the errors stay [P, H, W]
        map_mix = (lab_weight, reference_weight)
        self.weights = tuple(dict.fromkeys((map_mix, (score_lab_weight, score_reference_weight))))

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> tuple:
        feature = self.feature.target(query01, query_model)
        reference = None
        if self.reads_references:
            if self.bank is None:
                raise ValueError("this fused metric weighs the references: build it with them.")
            size = (query01.shape[-2], query01.shape[-1])
            reference = nearest_reference_distance(self.model, feature, self.bank, size)
        return self.lab.target(query01, query_model), feature, reference

    def errors(
        self,
        target: tuple,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        lab = self.lab.errors(target[0], recon01, size)
        feature = self.feature.errors(target[1], recon01, size, features)
        mixes = [
            mix_errors(lab, feature, self.scales, weight, target[2], reference_weight)
            for weight, reference_weight in self.weights
        ]
        return mixes[0] if len(mixes) == 1 else torch.stack(mixes, dim=1)


def readout_of(consistency_filter: bool | None, sigma: float | None, default: Readout) -> Readout:
    """A model's own readout where its config sets one, field by field, else ``default``."""
    return Readout(
        default.consistency_filter if consistency_filter is None else consistency_filter,
        default.sigma if sigma is None else sigma,
    )


def _first_set(own: float | None, default: float) -> float:
    return default if own is None else own


def build_metric(
    name: str, model: PADFormer, references_model: torch.Tensor | None = None
) -> ErrorMetric:
    """The metric called ``name``; an unknown name is a user error. ``references_model``
    (``[N, 3, S, S]``, normalised) are the references, for a metric that reads them
    itself; without them the metric can still name its scoring (``scoring_signature``)."""
    if name in ("lab", "rgb"):
        return ColourMetric(name)  # type: ignore[arg-type]
    cnn = model.config.cnn_tokens
    if name == "feature":
        return PredictedFeatureMetric(model) if cnn else FeatureMetric(model)
    if name == "fused":
        if not cnn:
            raise UserError(
                f"the fused metric needs a model with CNN tokens (preset 'edge'); "
                f"this is a '{model.preset_name}' model: use --metric lab."
            )
        return FusedMetric(model, references_model=references_model)
    raise UserError(f"error metric '{name}' is unknown; choose one of {', '.join(ERROR_METRICS)}.")


def default_metric(model: PADFormer) -> str:
    """``fused`` for models that can compute it, the paper's ``lab`` otherwise."""
    return "fused" if model.config.cnn_tokens else "lab"


def resolve_metric(
    setting: str, model: PADFormer, references_model: torch.Tensor | None = None
) -> tuple[str, ErrorMetric]:
    """(name, metric) for a detection setting's ``metric`` (``auto`` picks the default)."""
    name = default_metric(model) if setting == "auto" else setting
    return name, build_metric(name, model, references_model)


def scoring_signature(name: str, metric: ErrorMetric) -> str:
    """One line that changes whenever the scores of the same images would: the metric, and
    how its map and its image score read the passes (with the fused metric's weights). A
    profile's threshold is only valid for the signature it was calibrated under."""
    map_text, score_text = metric.map_readout.label, metric.score_readout.label
    if isinstance(metric, FusedMetric):
        map_text = mix_label(metric.lab_weight, metric.reference_weight) + f", {map_text}"
        score_text = (
            mix_label(metric.score_lab_weight, metric.score_reference_weight) + f", {score_text}"
        )
    return _signature(name, map_text, score_text)


def mix_label(lab_weight: float, reference_weight: float) -> str:
    """'LAB weight 0.25' or 'LAB weight 0.25, reference weight 1': a mix as a signature
    names it (no reference term, no mention, so signatures recorded before the term
    existed still match)."""
    text = f"LAB weight {lab_weight:g}"
    return text + (f", reference weight {reference_weight:g}" if reference_weight > 0 else "")


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
) -> ScoredQuery:
    """Score one query (``[1, 3, H, W]`` in [0, 1]) against its ``[P, 3, S, S]`` passes
    (and their ``[P, M, F]`` predicted features, for models with CNN tokens); ``S`` is
    the model's input size, which sets the readouts' pixel scale."""
    size = (query01.shape[-2], query01.shape[-1])
    target = metric.target(query01, query_model)
    chunk = max(1, MAX_CHUNK_VALUES // (3 * size[0] * size[1]))
    moments: PassMoments | None = None
    pass_mean: list[float] = []
    pass_max: list[float] = []
    for start in range(0, recon01.shape[0], chunk):
        part_features = None if features is None else features[start : start + chunk]
        errors = metric.errors(target, recon01[start : start + chunk], size, part_features)
        errors = errors if errors.ndim == 4 else errors.unsqueeze(1)  # [P, map(, score), H, W]
        pass_mean += errors[:, 0].mean(dim=(1, 2)).tolist()
        pass_max += errors[:, 0].amax(dim=(1, 2)).tolist()
        part = PassMoments.of(errors)
        moments = part if moments is None else moments.merge(part)
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
