"""The torch modules that are traced into ONNX graphs, and the names of their inputs.

A ``PADFormer`` mixes graph work with Python decisions (argsort of the mask, shape checks,
the ``rows`` index); each wrapper here keeps only the tensor work, so the exported graph
computes what the model computes for inputs the runtime prepares the same way
(``mask_indices``). They call the model's own submodules, never copies of them, so a change
to the model reaches the export with no second place to edit.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from padformer_edge.deploy.names import QUERY_GRAPH, REFERENCE_GRAPH, TERMS_GRAPH
from padformer_edge.model.encoder import blank_masked_patches, shuffle_ids
from padformer_edge.model.padformer import PADFormer

__all__ = ["QUERY_GRAPH", "REFERENCE_GRAPH", "TERMS_GRAPH"]


def term_names(model: PADFormer) -> list[str]:
    """The per-layer reference terms a model's cache holds, as graph tensor names, in the
    order the query graph takes them (a term a layer does not have is left out)."""
    cfg, names = model.config, []
    for index in range(cfg.decoder_depth):
        if cfg.use_stn:
            names.append(f"layer{index}_stn")
        if cfg.use_selection:
            names.append(f"layer{index}_key_values")
    return names


class ReferenceGraph(nn.Module):
    """Normalised reference images [N, 3, S, S] -> encoder features [1, N, M, E]: the
    expensive half of a reference cache, and what a profile's cache file stores."""

    def __init__(self, model: PADFormer) -> None:
        super().__init__()
        self.model = model

    def forward(self, references: torch.Tensor) -> torch.Tensor:
        return self.model.encoder(references)[:, 1:].unsqueeze(0)


class TermsGraph(nn.Module):
    """Encoder features [1, N, M, E] -> the decoder's reference tokens and, per layer, the
    terms that depend on them alone (``PADFormer.cache_from_features``)."""

    def __init__(self, model: PADFormer) -> None:
        super().__init__()
        self.model = model

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, ...]:
        cache = self.model.cache_from_features(features)
        terms = [t for layer in cache.layer_terms for t in (layer.stn, layer.key_values)]
        return (cache.tokens, *(t for t in terms if t is not None))


class QueryGraph(nn.Module):
    """One batch of masked passes: query rows [B, 3, S, S] (normalised, one row per pass),
    the mask as ``ids_keep`` [B, V] and ``ids_restore`` [B, M] (``mask_indices``), the
    reference tokens [1, N, M, D] and the per-layer terms -> pixels [B, 3, S, S]
    (normalised) and, for models with CNN tokens, predicted features [B, M, F].

    Mirrors ``PADFormer.reconstruct_all`` with ``rows`` already applied by the caller;
    the mask itself is recovered as ``ids_restore >= V`` (masked patches sort last).
    """

    def __init__(self, model: PADFormer) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        query: torch.Tensor,
        ids_keep: torch.Tensor,
        ids_restore: torch.Tensor,
        ref_tokens: torch.Tensor,
        *terms: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        model = self.model
        if model.config.cnn_tokens:
            mask = ids_restore >= ids_keep.shape[1]
            query = blank_masked_patches(query, mask, model.config.patch_size)
        latent = model.encoder(query, ids_keep)
        tokens = model.decoder(latent, ids_restore, ref_tokens, self.layer_terms(terms))
        pixels = model.unpatchify(model.decoder.head(tokens))
        head = model.decoder.feature_head
        return (pixels,) if head is None else (pixels, head(tokens))

    def layer_terms(self, terms: tuple[torch.Tensor, ...]) -> tuple:
        """The flat graph inputs regrouped as the decoder's ``LayerReferenceTerms``."""
        from padformer_edge.model.decoder import LayerReferenceTerms

        cfg, flat, grouped = self.model.config, iter(terms), []
        for _ in range(cfg.decoder_depth):
            stn = next(flat) if cfg.use_stn else None
            key_values = next(flat) if cfg.use_selection else None
            grouped.append(LayerReferenceTerms(stn, key_values))
        return tuple(grouped)


def mask_indices(masks: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(ids_keep [P, V], ids_restore [P, M]) as int64 arrays for bool masks [P, M]: the
    model's own ``shuffle_ids``, computed once per mask schedule outside the graph (a
    stable argsort has no ONNX operator)."""
    ids_shuffle, ids_restore, visible = shuffle_ids(masks.cpu())
    return ids_shuffle[:, :visible].numpy(), ids_restore.numpy()
