"""The reference pointer's choice, read as candidates instead of a mix (a diagnostic).

A pointer model (``feature_readout: references``) predicts a hidden patch as the
softmax mix of reference patches it points at. Its reconstruction-alone score ranks
images below the nearest-reference distance; this asks whether the mix (a blur of
several cells) or the choice itself (which reference patches it points at) is what
limits it. ``CandidateReadout`` keeps the pointer's ``candidates`` highest-scoring
reference patches for each query patch and predicts each of the patch's cells as the
nearest of those patches' cells to the query's own cell. The query's content picks only
among cells the pointer proposed from the visible context and the references, so with
every reference patch as a candidate the error is the nearest-reference distance of the
upright references, and with fewer it is that distance restricted to where the pointer
looks: lower ranks than the distance's mean the pointer misses good patches' matches
more often than it excludes a defect's look-alikes.

Evaluation only: the product's readout stays the mix (no detection path builds this).
"""

from __future__ import annotations

import torch

from padformer_edge.errors import UserError
from padformer_edge.model.padformer import PADFormer, Reconstruction, ReferenceCache


def nearest_of_candidates(
    logits: torch.Tensor,
    ref_features: torch.Tensor,
    truth: torch.Tensor,
    candidates: int,
    cells: int,
) -> torch.Tensor:
    """[B, M, F] prediction: each cell of each query patch the nearest (squared distance)
    cell of the ``candidates`` reference patches with the highest ``logits``.

    logits [B, M, N*M] (``ReferencePointer.logits``), ref_features [B or 1, N, M, F]
    and truth [B, M, F] cell-normalised CNN features, channel-major within a patch
    (``F = C * cells * cells``, as ``normalise_cells`` lays them out).
    """
    batch, _, pool = logits.shape
    if not 1 <= candidates <= pool:
        raise ValueError(f"candidates must be between 1 and {pool}, got {candidates}.")
    per_cell = cells * cells
    flat = ref_features.flatten(1, 2).to(truth.dtype).expand(batch, -1, -1)  # [B, N*M, F]
    chosen = logits.topk(candidates, dim=-1).indices  # [B, M, K]
    rows = torch.arange(batch, device=logits.device)[:, None, None]
    proposed = flat[rows, chosen]  # [B, M, K, F]
    # every proposed patch's cells as one pool of [C] vectors per query patch
    pool_cells = proposed.unflatten(-1, (-1, per_cell)).transpose(-1, -2)  # [B, M, K, c2, C]
    pool_cells = pool_cells.flatten(2, 3)  # [B, M, K * c2, C]
    query_cells = truth.unflatten(-1, (-1, per_cell)).transpose(-1, -2)  # [B, M, c2, C]
    squared = (
        query_cells.square().sum(-1, keepdim=True)
        - 2 * query_cells @ pool_cells.transpose(-1, -2)
        + pool_cells.square().sum(-1).unsqueeze(-2)
    )  # [B, M, c2, K * c2]
    nearest = squared.argmin(dim=-1)  # [B, M, c2]
    picked = pool_cells.gather(2, nearest.unsqueeze(-1).expand(-1, -1, -1, pool_cells.shape[-1]))
    return picked.transpose(-1, -2).flatten(-2)  # back to channel-major [B, M, F]


class CandidateReadout(PADFormer):
    """A pointer model whose predicted features are ``nearest_of_candidates`` of its
    pointer's top ``candidates`` reference patches (see the module's docstring)."""

    candidates: int = 1

    @classmethod
    def of(cls, model: PADFormer, candidates: int) -> CandidateReadout:
        """The same weights and scoring as ``model`` (a pointer model), read this way."""
        if not model.reads_reference_features:
            raise UserError(
                "candidate readouts need a model that points at its references "
                "(feature_readout: references); train one with config/train/generic-pointer.yaml."
            )
        twin = cls(model.config, model.preset_name)
        twin.load_state_dict(model.state_dict())
        twin.scoring = dict(model.scoring)
        twin.candidates = candidates
        return twin.to(model.mean.device).eval()

    def reconstruct_all(
        self,
        query: torch.Tensor,
        cache: ReferenceCache,
        mask: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> Reconstruction:
        tokens = self.decode(query, cache, mask, rows)
        truth = self.target_features(query)
        truth = truth if rows is None else truth[rows]
        logits = self.decoder.pointer.logits(tokens, cache.tokens)
        features = nearest_of_candidates(
            logits, cache.targets, truth.float(), self.candidates, self.config.cells_per_side
        )
        return Reconstruction(self.unpatchify(self.decoder.head(tokens)), features)
