"""The torch modules that are traced into ONNX graphs, and the names of their inputs.

A ``PADFormer`` mixes graph work with Python decisions (argsort of the mask, shape checks,
the ``rows`` index); each wrapper here keeps only the tensor work, so the exported graph
computes what the model computes for inputs the runtime prepares the same way
(``detect.masks.mask_indices``). They call the model's own submodules, never copies of
them, so a change to the model reaches the export with no second place to edit.
"""

from __future__ import annotations

import torch
from torch import nn

from padformer_edge.deploy.names import QUERY_GRAPH, REFERENCE_GRAPH, TERMS_GRAPH
from padformer_edge.model.encoder import blank_masked_patches
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


def reference_outputs(model: PADFormer) -> list[str]:
    """The reference graph's outputs: the encoder features, and for a model that reads
    its references' CNN features (``feature_readout: references``) those too, as the query
    graph's ``ref_targets`` input takes them. Both are what a profile's cache file stores."""
    return ["features", "ref_targets"] if model.reads_reference_features else ["features"]


class ReferenceGraph(nn.Module):
    """Normalised reference images [N, 3, S, S] -> encoder features [1, N, M, E] (and, for
    a model that reads them, the references' cell-normalised CNN features [1, N, M, F]):
    the expensive half of a reference cache, and what a profile's cache file stores."""

    def __init__(self, model: PADFormer) -> None:
        super().__init__()
        self.model = model

    def forward(self, references: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        features = self.model.encoder(references)[:, 1:].unsqueeze(0)
        if not self.model.reads_reference_features:
            return features
        return features, self.model.target_features(references).unsqueeze(0)


class TermsGraph(nn.Module):
    """Encoder features [1, N, M, E] -> the decoder's reference tokens and, per layer, the
    terms that depend on them alone: what ``PADFormer.cache_from_features`` derives, from
    the decoder's own ``ref_embed`` and ``reference_terms``. That method is not called
    because for a pointer model it needs the ``targets``, which need no derivation: the
    runtimes pass the reference graph's ``ref_targets`` straight to the query graph."""

    def __init__(self, model: PADFormer) -> None:
        super().__init__()
        self.model = model

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, ...]:
        decoder = self.model.decoder
        tokens = decoder.ref_embed(features)
        layers = decoder.reference_terms(tokens)
        terms = [t for layer in layers for t in (layer.stn, layer.key_values)]
        return (tokens, *(t for t in terms if t is not None))


class QueryGraph(nn.Module):
    """One batch of masked passes: query rows [B, 3, S, S] (normalised, one row per pass),
    the mask as ``ids_keep`` [B, V] and ``ids_restore`` [B, M] (``mask_indices``), the
    reference tokens [1, N, M, D], the per-layer terms and, for a model that reads its
    references' CNN features, ``ref_targets`` [1, N, M, F] (last) -> pixels [B, 3, S, S]
    (normalised) and, for models with CNN tokens, predicted features [B, M, F] (from the
    feature head, or the pointer's mix of ``ref_targets``).

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
        *inputs: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        model = self.model
        pointer = model.decoder.pointer
        terms = inputs if pointer is None else inputs[:-1]
        if model.config.cnn_tokens:
            mask = ids_restore >= ids_keep.shape[1]
            query = blank_masked_patches(query, mask, model.config.patch_size)
        latent = model.encoder(query, ids_keep)
        tokens = model.decoder(latent, ids_restore, ref_tokens, self.layer_terms(terms))
        pixels = model.unpatchify(model.decoder.head(tokens))
        if pointer is not None:
            return pixels, pointer(tokens, ref_tokens, inputs[-1])
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
