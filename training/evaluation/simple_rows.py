"""The simple rows every quality table shows beside a model's own (fused) score.

The fused score adds the reconstruction error and the nearest-reference distance. Each half
alone is the question a reader asks first: does the reconstruction find defects by itself,
and does it add anything to the distance it is fused with? Both rows are the same weights
scored another way, so they cost no training. The learned comparison (the ``compare``
metric: the distance plus the shipped comparator's correction) stands beside them: the
score the distance alone must be beaten by.
"""

from __future__ import annotations

from padformer_edge.methods.padformer.fused_metric import model_scoring
from padformer_edge.methods.padformer.fused_scoring import ScoringConfig
from padformer_edge.methods.padformer.metrics import default_metric
from padformer_edge.model.padformer import PADFormer

RECONSTRUCTION_ALONE = "reconstruction alone (15 passes)"
DISTANCE_ALONE = "distance alone (no passes)"
LEARNED_COMPARISON = "learned comparison (compare, no passes)"


def reconstruction_only(model: PADFormer) -> PADFormer:
    """The same model with both fused jobs' nearest-reference weights at 0."""
    twin = model.reconfigured()
    unweighted = ScoringConfig.model_validate(
        {job: {"reference_weight": 0.0} for job in ("map", "score")}
    )
    twin.scoring = unweighted.over(model_scoring(model)).changes()
    return twin.eval()


def simple_rows(label: str, model: PADFormer) -> list[tuple[str, PADFormer, dict]]:
    """(row label, model, detection options) of the two halves of ``model``'s fused score
    (none for a model whose own metric is not ``fused``), then the learned comparison
    (the shipped comparator, which any model can be scored with), labelled under
    ``label``."""
    comparison = (f"{label}: {LEARNED_COMPARISON}", model, {"metric": "compare"})
    if default_metric(model) != "fused":
        return [comparison]
    return [
        (f"{label}: {RECONSTRUCTION_ALONE}", reconstruction_only(model), {}),
        (f"{label}: {DISTANCE_ALONE}", model, {"metric": "distance"}),
        comparison,
    ]
