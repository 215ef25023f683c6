"""PADFormer: reconstruct a masked query image from N reference images of the product.

Detection encodes a reference set once (``encode_references``) and reuses the cache for
every masked pass (``reconstruct``); training calls ``forward``, which does both. All
images enter normalised (``normalize``) and the output is normalised pixels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from padformer_edge.errors import UserError
from padformer_edge.model.backbone import normalise_cells
from padformer_edge.model.config import PRESETS, ModelConfig
from padformer_edge.model.decoder import LayerReferenceTerms, ReconstructionDecoder
from padformer_edge.model.encoder import (
    ViTEncoder,
    blank_masked_patches,
    block_mask,
    random_mask,
    shuffle_ids,
)

SCORE_SCALE_NAMES = ("lab", "feature")
"""The error maps the ``fused`` metric combines; their spreads on good views are stored
in models with CNN tokens (``score_scales``), in this order."""


@dataclass
class Reconstruction:
    """What one decoder run predicts for every patch of every mask row."""

    pixels: torch.Tensor
    """[B, 3, H, W] normalised pixels."""
    features: torch.Tensor | None
    """[B, M, feature_dim] cell-normalised CNN features (models with CNN tokens), else None."""
    pointer_logits: torch.Tensor | None = None
    """[B, M, N*M] how strongly each patch points at each reference patch
    (``ReferencePointer.logits``; models whose ``feature_readout`` is ``references``),
    which the training's match term scores; else None."""


@dataclass
class ReferenceCache:
    """Encoded references, reusable across queries; batch 1 is shared by any query batch."""

    features: torch.Tensor
    """[B, N, M, embed_dim] encoder features, CLS dropped."""
    tokens: torch.Tensor
    """[B, N, M, decoder_embed_dim] the same, projected for the decoder."""
    layer_terms: tuple[LayerReferenceTerms, ...]
    """Per decoder layer, the work that depends on ``tokens`` alone (the STN's reference
    half, the unbiased cross-attention keys and values), paid once rather than per pass."""
    targets: torch.Tensor | None = None
    """[B, N, M, feature_dim] the references' cell-normalised CNN features: what a model
    whose ``feature_readout`` is ``references`` mixes into its predictions; else None."""

    @property
    def num_references(self) -> int:
        return self.features.shape[1]

    def to(self, device: torch.device | str) -> ReferenceCache:
        terms = tuple(t.to(device) for t in self.layer_terms)
        targets = None if self.targets is None else self.targets.to(device)
        return ReferenceCache(self.features.to(device), self.tokens.to(device), terms, targets)


class PADFormer(nn.Module):
    """Shared ViT encoder + reference-conditioned cross-attention decoder."""

    def __init__(self, config: ModelConfig, preset_name: str = "custom") -> None:
        super().__init__()
        self.config = config
        self.preset_name = preset_name
        self.scoring: dict[str, Any] = {}
        """The fused score's settings validated for this very model, as its checkpoint's
        header stores them (``methods.padformer.fused_scoring.ScoringConfig``, JSON; empty: the
        product's). Plain data here, so the model imports nothing of detection."""
        self.encoder = ViTEncoder(config)
        self.decoder = ReconstructionDecoder(config)
        shape = (1, 3, 1, 1)
        self.register_buffer("mean", torch.tensor(config.norm_mean).view(shape), False)
        self.register_buffer("std", torch.tensor(config.norm_std).view(shape), False)
        if config.cnn_tokens:
            # Spread of each error map on good views, measured after training
            # (padformer_edge_training.score_scales); stored with the weights so a checkpoint
            # scores alike everywhere. Ones until measured.
            self.register_buffer("score_scales", torch.ones(len(SCORE_SCALE_NAMES)))
        self._init_weights()

    def _init_weights(self) -> None:
        """MAE's recipe: xavier linears (patch embed as a linear too), small-normal tokens."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        proj = self.encoder.patch_embed.proj.weight
        nn.init.xavier_uniform_(proj.view(proj.shape[0], -1))  # a conv in pixel models
        tokens = [self.encoder.cls_token, self.decoder.mask_token]
        if self.config.use_aat:
            tokens += [self.decoder.global_tokens, self.decoder.local_tokens]
        for token in tokens:
            nn.init.normal_(token, std=0.02)
        for layer in self.decoder.layers:
            if layer.stn is not None:
                layer.stn.reset_identity()

    def reconfigured(self, **changes) -> PADFormer:
        """A twin with config fields changed and the same weights: for switches that change
        behaviour, not parameter shapes (a mask, the decoder's isolation, a score setting).
        A change that alters a shape is refused by ``load_state_dict``. A switch that adds
        or drops a whole head (``feature_readout``) keeps every shared weight; the new
        head starts from its initialisation, so training must follow."""
        twin = type(self)(dataclasses.replace(self.config, **changes), self.preset_name)
        missing, unexpected = twin.load_state_dict(self.state_dict(), strict=False)
        swapped = ("decoder.feature_head.", "decoder.pointer.")
        stray = [k for k in (*missing, *unexpected) if not k.startswith(swapped)]
        if stray:
            raise RuntimeError(f"weights do not fit the changed config: {', '.join(stray)}")
        twin.scoring = dict(self.scoring)
        return twin.to(self.mean.device).train(self.training)

    # -- pixels -------------------------------------------------------------------------
    def normalize(self, x01: torch.Tensor) -> torch.Tensor:
        """Float RGB in [0, 1], [..., 3, H, W] (queries or reference stacks) -> model input."""
        return (x01 - self.mean) / self.std

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        """Inverse of ``normalize``."""
        return x * self.std + self.mean

    def patchify(self, imgs: torch.Tensor) -> torch.Tensor:
        """[B, 3, H, W] -> [B, M, p*p*3], each patch row-major with channels last."""
        p, g = self.config.patch_size, self.config.grid_size
        x = imgs.reshape(imgs.shape[0], 3, g, p, g, p)
        return torch.einsum("bchpwq->bhwpqc", x).reshape(imgs.shape[0], g * g, p * p * 3)

    def unpatchify(self, x: torch.Tensor) -> torch.Tensor:
        """Inverse of ``patchify``."""
        p, g = self.config.patch_size, self.config.grid_size
        x = x.reshape(x.shape[0], g, g, p, p, 3)
        return torch.einsum("bhwpqc->bchpwq", x).reshape(x.shape[0], 3, g * p, g * p)

    # -- masking ------------------------------------------------------------------------
    def random_mask(self, batch: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Bool [batch, M], True = masked, exactly ``int(M * mask_ratio)`` per row, shaped
        as the config's ``mask_shape`` says (the masks training draws)."""
        cfg = self.config
        if cfg.mask_shape == "blocks":
            mask = block_mask(batch, cfg.grid_size, cfg.mask_ratio, cfg.mask_block, generator)
        else:
            mask = random_mask(batch, cfg.num_patches, cfg.mask_ratio, generator)
        return mask.to(self.mean.device)

    # -- encoding -----------------------------------------------------------------------
    def _check_images(self, images: torch.Tensor, name: str, dims: int) -> None:
        size = self.config.img_size
        if images.dim() != dims or tuple(images.shape[-3:]) != (3, size, size):
            lead = "B, N, " if dims == 5 else "B, "
            raise ValueError(
                f"{name} must have shape [{lead}3, {size}, {size}], got {list(images.shape)}."
            )

    def encode_features(self, images: torch.Tensor) -> torch.Tensor:
        """[B, M, embed_dim] encoder features of whole (unmasked) images, CLS dropped."""
        self._check_images(images, "images", 4)
        return self.encoder(images)[:, 1:]

    def encode_references(self, refs: torch.Tensor) -> ReferenceCache:
        """Encode each of the [B, N, 3, H, W] references once for any number of passes."""
        self._check_images(refs, "refs", 5)
        flat = refs.flatten(0, 1)
        features = self.encode_features(flat).unflatten(0, refs.shape[:2])
        targets = None
        if self.reads_reference_features:
            targets = self.target_features(flat).unflatten(0, refs.shape[:2])
        return self.cache_from_features(features, targets)

    @property
    def reads_reference_features(self) -> bool:
        """Whether predicted features are mixed from the references' own (``targets``)."""
        return self.decoder.pointer is not None

    def cache_from_features(
        self, features: torch.Tensor, targets: torch.Tensor | None = None
    ) -> ReferenceCache:
        """Rebuild a cache from [B, N, M, embed_dim] encoder features saved earlier (and,
        for a model that reads reference features, their [B, N, M, F] ``targets``).

        The encoder is the expensive part; the decoder-side terms are cheap to derive and
        depend on the implementation, so a file on disk only needs to hold the features.
        """
        if self.reads_reference_features and targets is None:
            raise UserError(
                "this model reads its references' CNN features (feature_readout: "
                "references) and none were given; encode the references with "
                "encode_references, or rebuild the profile's reference cache."
            )
        tokens = self.decoder.ref_embed(features)
        terms = self.decoder.reference_terms(tokens)
        return ReferenceCache(
            features, tokens, terms, targets if self.reads_reference_features else None
        )

    def target_features(self, images: torch.Tensor) -> torch.Tensor:
        """[B, M, feature_dim] cell-normalised CNN features of whole normalised images: what
        the feature head predicts (models with CNN tokens only)."""
        if not self.config.cnn_tokens:
            raise ValueError("only models with CNN tokens predict features.")
        folded = self.encoder.patch_embed.features(images)
        return normalise_cells(folded, self.config.cells_per_side)

    # -- reconstruction -----------------------------------------------------------------
    def forward_encoder(
        self, query: torch.Tensor, mask: torch.Tensor, rows: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(latent [B, 1 + V, d] of the visible patches, ids_restore [B, M]).

        Pixel tokens are embedded once per image and the masked ones dropped. CNN tokens
        are taken from a copy of each row's image with its masked patches blanked first,
        so nothing of a hidden patch reaches the encoder through the CNN's receptive field.
        """
        ids_shuffle, ids_restore, visible = shuffle_ids(mask)
        if self.config.cnn_tokens:
            rows_images = query if rows is None else query[rows]
            query = blank_masked_patches(rows_images, mask, self.config.patch_size)
            rows = None
        return self.encoder(query, ids_shuffle[:, :visible], rows), ids_restore

    def reconstruct(
        self,
        query: torch.Tensor,
        cache: ReferenceCache,
        mask: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Normalised [B, 3, H, W] prediction of every query patch, given a [B, M] mask.

        ``rows`` [B] names, for each mask row, its image in ``query`` [Q, 3, H, W] (all
        passes over one image then share its patch embedding); by default row i is image i.
        """
        return self.reconstruct_all(query, cache, mask, rows).pixels

    def reconstruct_all(
        self,
        query: torch.Tensor,
        cache: ReferenceCache,
        mask: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> Reconstruction:
        """``reconstruct`` plus, for models with CNN tokens, the predicted features."""
        tokens = self.decode(query, cache, mask, rows)
        head, pointer = self.decoder.feature_head, self.decoder.pointer
        features = None if head is None else head(tokens)
        logits = None
        if pointer is not None:
            if cache.targets is None:
                raise ValueError("the reference cache lacks the references' CNN features.")
            logits = pointer.logits(tokens, cache.tokens)
            features = pointer.mix(logits, cache.targets)
        return Reconstruction(self.unpatchify(self.decoder.head(tokens)), features, logits)

    def decode(
        self,
        query: torch.Tensor,
        cache: ReferenceCache,
        mask: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The decoder's final [B, M, decoder_embed_dim] tokens, before any head reads
        them: the one place that checks a reconstruction's inputs and runs both halves."""
        self._check_images(query, "query", 4)
        b, m = query.shape[0] if rows is None else rows.shape[0], self.config.num_patches
        if rows is not None and (
            rows.dim() != 1 or not 0 <= int(rows.min()) <= int(rows.max()) < query.shape[0]
        ):
            raise ValueError(f"rows must be a 1-D index into the {query.shape[0]} query images.")
        if mask.shape != (b, m) or mask.dtype != torch.bool:
            raise ValueError(f"mask must be a bool tensor of shape [{b}, {m}].")
        refs = cache.tokens
        if refs.shape[0] not in (1, b):
            raise ValueError(f"reference cache has batch {refs.shape[0]}; need 1 or {b}.")
        latent, ids_restore = self.forward_encoder(query, mask, rows)
        return self.decoder(latent, ids_restore, refs, cache.layer_terms)

    def forward(
        self,
        query: torch.Tensor,
        refs: torch.Tensor,
        mask: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[Reconstruction, torch.Tensor]:
        """(reconstruction, mask used) for a training step; draws a mask if none is given."""
        if mask is None:
            mask = self.random_mask(query.shape[0], generator)
        return self.reconstruct_all(query, self.encode_references(refs), mask), mask


def build_model(preset: str, **overrides) -> PADFormer:
    """A freshly initialised model from a named preset, with config fields overridden."""
    if preset not in PRESETS:
        raise UserError(
            f"unknown model preset '{preset}'; choose one of {', '.join(sorted(PRESETS))}."
        )
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise UserError(
            f"unknown model setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}."
        )
    try:
        config = dataclasses.replace(PRESETS[preset], **overrides)
    except ValueError as err:
        raise UserError(f"invalid model settings for preset '{preset}': {err}") from None
    model = PADFormer(config, preset_name=preset)
    if config.cnn_tokens:
        model.encoder.patch_embed.cnn.load_imagenet()
    return model
