"""The comparator: a learned per-cell correction to the nearest-reference distance.

The distance (one minus a query cell's best cosine to any cell of any turned reference)
cannot tell which differences matter: a shading change or a seam seen from a new side
scores like a stain. The comparator reads what the distance reads, plus the evidence
around it, and adds a correction in the distance's own units:

* each query cell (frozen stride-8 CNN features, nothing hidden), its nearest reference
  cell, the residual between the two and the ``top_k`` best cosines (how many references
  agree, not only the best one);
* the references through the paper's machinery: an STN per reference aligns the
  upright reference grid to the query grid, the paper's hybrid score (cosine plus grid
  locality) picks ``aligned_k`` aligned cells per query position, and a position-specific
  cross-attention reads them together with the ``top_k`` nearest cells of the turned bank;
* its neighbourhood, through self-attention over the query's cells.

The output is ``score = distance + temperature * correction`` per cell. The correction's
head starts at zero, so an untrained comparator scores exactly the distance, and the
anomaly logit ``(score - offset) / temperature`` is what training fits to defect masks.

``Comparator`` reads unit-length cells (``backbone.unit_cells``); ``ComparisonModel`` adds
the frozen stride-8 CNN that makes them from images, so one checkpoint holds everything a
line needs to score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from padformer_edge.model.backbone import Stride8Features, unit_cells
from padformer_edge.model.config import LITE0_MEAN, LITE0_STD
from padformer_edge.model.posembed import sincos_2d
from padformer_edge.model.selection import select_top_k
from padformer_edge.model.stn import FeatureSTN

NEAREST_BLOCK = 2**21  # cosines (8 MiB of float32) made and reduced at once by ``nearest``
TOP_K_GROUP = 64  # bank rows per group of the two-step top-k (``top_k_cosines``)


def top_k_cosines(cosines: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``cosines.topk(k)`` over the last dimension, in two steps where it is long: the
    row's best cosine in each group of ``TOP_K_GROUP`` bank rows, the ``k`` best groups,
    then the ``k`` best cosines inside them. The ``k`` best cosines lie in the ``k`` groups
    with the best maxima (a group holding one has a maximum at least as high), so the
    result is the same; a full top-k over 76,800 bank rows (twelve references at 320 px)
    costs several times the matrix product that made them, the maxima a fraction of it."""
    length = cosines.shape[-1]
    if length % TOP_K_GROUP or length < 8 * k * TOP_K_GROUP:
        return cosines.topk(k, dim=-1)
    groups = cosines.unflatten(-1, (length // TOP_K_GROUP, TOP_K_GROUP))
    best = groups.amax(-1).topk(k, dim=-1).indices  # [..., k] groups
    inside = torch.gather(groups, -2, best.unsqueeze(-1).expand(*best.shape, TOP_K_GROUP))
    values, position = inside.flatten(-2).topk(k, dim=-1)
    group = torch.gather(best, -1, position // TOP_K_GROUP)
    return values, group * TOP_K_GROUP + position % TOP_K_GROUP


@dataclass(frozen=True)
class ComparatorConfig:
    """Shapes and switches of a comparator; stored in its checkpoint's header."""

    channels: int = 40  # the frozen backbone's stride-8 channels (Lite0: 40)
    input_size: int = 192  # pixels per side the query and references are squeezed to
    dim: int = 96
    depth: int = 2
    heads: int = 4
    mlp_ratio: float = 2.0
    top_k: int = 8  # nearest cells of the turned bank each query cell reads
    aligned_k: int = 4  # STN-aligned upright reference cells, by the paper's hybrid score
    use_stn: bool = True
    selection_weight: float = 0.3  # the hybrid score's locality weight w
    selection_sigma: float = 2.0
    initial_offset: float = 0.25  # distance at which the initial logit crosses zero
    initial_temperature: float = 0.05  # distance units per logit unit at the start
    neighbourhood: int = 1  # side of the mean over neighbouring cells before the distance
    stages: tuple[int, ...] = (2,)  # CNN blocks stacked into a cell: 2 (stride 8), 3 (16)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stages", tuple(self.stages))  # a checkpoint's JSON list

    @property
    def grid(self) -> int:
        return self.input_size // 8

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Comparison:
    """Per-cell outputs, ``[B, h, w]`` each."""

    distance: torch.Tensor
    correction: torch.Tensor
    score: torch.Tensor  # distance + temperature * correction: what maps and scores read
    logits: torch.Tensor  # (score - offset) / temperature: what the loss fits


def flat(cells: torch.Tensor) -> torch.Tensor:
    """``[..., C, h, w]`` -> ``[..., h*w, C]``."""
    return cells.flatten(-2).transpose(-1, -2)


def gather_cells(bank: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows of ``bank`` ``[B, R, C]`` at ``index`` ``[B, Q, k]`` -> ``[B, Q, k, C]``."""
    b, q, k = index.shape
    rows = torch.gather(bank, 1, index.reshape(b, q * k, 1).expand(-1, -1, bank.shape[-1]))
    return rows.view(b, q, k, bank.shape[-1])


class LocalCrossAttention(nn.Module):
    """Each query cell attends over its own ``K`` keys (``[B, Q, K, D]``): the gathered
    form of the paper's position-specific cross-attention, with no shared key set."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        # Elementwise products and sums rather than a batched matmul: with a dozen keys
        # per cell, Q*heads tiny matrix products cost far more in dispatch than arithmetic.
        b, q, k, d = keys.shape
        h = self.heads
        query = self.q(x).view(b, q, 1, h, d // h)
        key, value = self.kv(keys).view(b, q, k, 2, h, d // h).unbind(3)
        weights = ((query * key).sum(-1) / math.sqrt(d // h)).softmax(2)  # [B, Q, K, h]
        return self.proj((weights.unsqueeze(-1) * value).sum(2).reshape(b, q, d))


class ComparatorBlock(nn.Module):
    """Pre-norm: self-attention over the query's cells, cross-attention to each cell's
    reference keys, MLP."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(dim) for _ in range(3))
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.cross = LocalCrossAttention(dim, heads)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        b, q, d = x.shape
        qkv = self.qkv(self.norm1(x)).view(b, q, 3, self.heads, d // self.heads)
        query, key, value = qkv.permute(2, 0, 3, 1, 4)
        x = x + self.proj(
            F.scaled_dot_product_attention(query, key, value).transpose(1, 2).reshape(b, q, d)
        )
        x = x + self.cross(self.norm2(x), keys)
        return x + self.mlp(self.norm3(x))


class Comparator(nn.Module):
    """Query cells + reference cells -> per-cell score in distance units (see module doc)."""

    def __init__(self, config: ComparatorConfig) -> None:
        super().__init__()
        self.config = config
        c, d = config.channels, config.dim
        self.query_embed = nn.Linear(3 * c + 1 + config.top_k, d)
        self.key_embed = nn.Linear(2 * c + 1, d)
        self.key_source = nn.Parameter(torch.zeros(2, d))  # nearest-bank vs aligned keys
        self.register_buffer("pos", sincos_2d(d, config.grid, cls_token=False), False)
        self.stn = FeatureSTN(c, config.grid) if config.use_stn else None
        self.blocks = nn.ModuleList(
            ComparatorBlock(d, config.heads, config.mlp_ratio) for _ in range(config.depth)
        )
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 1)
        self.offset = nn.Parameter(torch.tensor(config.initial_offset))
        self.log_temperature = nn.Parameter(torch.tensor(math.log(config.initial_temperature)))
        self._init_weights()

    def _init_weights(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        nn.init.zeros_(self.head.weight)  # the correction starts at exactly zero
        nn.init.zeros_(self.head.bias)
        if self.stn is not None:
            self.stn.reset_identity()

    @property
    def temperature(self) -> torch.Tensor:
        return self.log_temperature.exp()

    def nearest(self, query: torch.Tensor, bank: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k cosines ``[B, Q, k]`` (best first) and their bank indices, for unit query
        rows ``[B, Q, C]`` against unit bank rows ``[B or 1, R, C]``. No gradient: the
        cells are frozen features, and a choice is discrete.

        The cosines are made and reduced in blocks of query rows of at most
        ``NEAREST_BLOCK`` cosines (the rows of every query together when they share one
        bank): a row's top-k does not depend on the other rows, and a block that stays in
        the CPU's cache is reduced two to three times faster than the whole product, which
        at a fine grid would not even fit in memory (3,136 cells of a 448-px query against
        twelve turned references: 1.9 GB). An exported graph takes them whole (its bank
        size is not known when it is traced)."""
        k = min(self.config.top_k, bank.shape[-2])
        with torch.no_grad():
            if torch.jit.is_tracing():
                return (query @ bank.transpose(-1, -2)).topk(k, dim=-1)
            if bank.shape[0] == 1 < query.shape[0]:  # one bank: all queries' rows as one
                b, q, c = query.shape
                values, index = self.nearest(query.reshape(1, b * q, c), bank)
                return values.view(b, q, k), index.view(b, q, k)
            rows = max(1, NEAREST_BLOCK // (query.shape[0] * bank.shape[-2]))
            turned = bank.transpose(-1, -2).contiguous()
            blocks = [
                top_k_cosines(query[:, start : start + rows] @ turned, k)
                for start in range(0, query.shape[1], rows)
            ]
            if len(blocks) == 1:
                return blocks[0]
            return torch.cat([b[0] for b in blocks], 1), torch.cat([b[1] for b in blocks], 1)

    def aligned_keys(
        self, query_cells: torch.Tensor, references: torch.Tensor, rows: torch.Tensor
    ) -> torch.Tensor:
        """``[B, Q, aligned_k, D]`` keys from the upright references ``[B, N, C, h, w]``
        warped onto the query grid by the STN and picked by the hybrid score."""
        refs = references.expand(query_cells.shape[0], -1, -1, -1, -1)
        if self.stn is not None:
            b, n = refs.shape[:2]
            theta = self.stn.theta(query_cells, refs)
            grid = F.affine_grid(theta.flatten(0, 1), list(refs.flatten(0, 1).shape), False)
            warped = F.grid_sample(refs.flatten(0, 1), grid, align_corners=False)
            refs = F.normalize(warped, dim=1).view(b, n, *refs.shape[2:])
        tokens = flat(refs)  # [B, N, M, C]
        cfg = self.config
        index = select_top_k(rows, tokens, cfg.aligned_k, cfg.selection_weight, cfg.selection_sigma)
        chosen = gather_cells(tokens.flatten(1, 2), index)
        cosines = (chosen * rows.unsqueeze(2)).sum(-1, keepdim=True)
        return self.key_embed(torch.cat([chosen, rows.unsqueeze(2) - chosen, cosines], -1))

    def forward(
        self,
        query_cells: torch.Tensor,
        references: torch.Tensor,
        bank: torch.Tensor,
        origin: Sequence[tuple[int, int]] | None = None,
    ) -> Comparison:
        """``query_cells`` ``[B, C, h, w]``, ``references`` the upright reference cells
        ``[B or 1, N, C, h, w]``, ``bank`` every reference cell to match against
        (turned ones included) ``[B or 1, R, C]``; all unit length per cell.

        ``query_cells`` may be windows of the grid, query ``i``'s top-left cell at
        ``origin[i]`` (training reads windows: a quarter of the search for the same
        defects); the STN-aligned keys need the whole grid."""
        b, _, h, w = query_cells.shape
        if (h, w) != (self.config.grid,) * 2 and self.config.aligned_k:
            raise ValueError("the STN-aligned keys need the whole query grid, not a window")
        rows = flat(query_cells)
        cosines, index = self.nearest(rows, bank)
        bank = bank.expand(b, -1, -1)
        chosen = gather_cells(bank, index)  # [B, Q, k, C]
        distance = 1.0 - cosines[..., 0]
        nearest_cell = chosen[:, :, 0]
        x = self.query_embed(
            torch.cat([rows, nearest_cell, rows - nearest_cell, distance[..., None], cosines], -1)
        )
        grid = self.config.grid
        if origin is None:
            x = x + self.pos
        else:
            table = self.pos.view(grid, grid, -1)
            x = x + torch.stack([table[y : y + h, c : c + w].reshape(h * w, -1) for y, c in origin])
        keys = (
            self.key_embed(
                torch.cat([chosen, rows.unsqueeze(2) - chosen, cosines.unsqueeze(-1)], -1)
            )
            + self.key_source[0]
        )
        if self.config.aligned_k:
            aligned = self.aligned_keys(query_cells, references, rows) + self.key_source[1]
            keys = torch.cat([keys, aligned], 2)
        for block in self.blocks:
            x = block(x, keys)
        correction = self.head(self.norm(x)).squeeze(-1)
        score = distance + self.temperature * correction
        logits = (score - self.offset) / self.temperature
        shape = (b, h, w)
        return Comparison(
            distance.view(shape), correction.view(shape), score.view(shape), logits.view(shape)
        )


class ComparisonModel(nn.Module):
    """The frozen stride-8 CNN (the cells the distance compares) and the comparator."""

    def __init__(self, config: ComparatorConfig, backbone: str = "efficientnet-lite0") -> None:
        super().__init__()
        self.config = config
        self.backbone = backbone
        self.features = Stride8Features(backbone, config.stages)
        self.comparator = Comparator(config)
        shape = (1, 3, 1, 1)
        self.register_buffer("mean", torch.tensor(LITE0_MEAN).view(shape), False)
        self.register_buffer("std", torch.tensor(LITE0_STD).view(shape), False)

    def maps(self, squares01: torch.Tensor) -> torch.Tensor:
        """``[B, C, h, w]`` CNN maps of ``[B, 3, S, S]`` images in [0, 1], each cell the mean
        of its ``neighbourhood`` (as PatchCore describes a location by its surroundings: at
        a fine grid one cell alone is a few pixels); the export's cells graph reads this."""
        maps = self.features((squares01 - self.mean) / self.std)
        side = self.config.neighbourhood
        return maps if side == 1 else F.avg_pool2d(maps, side, 1, side // 2)

    def cells(self, squares01: torch.Tensor) -> torch.Tensor:
        """``[B, C, h, w]`` unit cells of ``[B, 3, S, S]`` images in [0, 1]."""
        with torch.no_grad():
            return unit_cells(self.maps(squares01))

    def forward(
        self,
        query_cells: torch.Tensor,
        references: torch.Tensor,
        bank: torch.Tensor,
        origin: Sequence[tuple[int, int]] | None = None,
    ) -> Comparison:
        return self.comparator(query_cells, references, bank, origin)
