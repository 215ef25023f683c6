"""The product's fused settings, and the shipped generic model's, are the ones the
validation sweep chose (``benchmarks/validation.json``'s ``edge_scoring`` and
``generic_scoring``, each a ``ScoringConfig`` as JSON)."""

import json
from pathlib import Path

from padformer_edge.methods.padformer.fused_scoring import PRODUCT_SCORING, ScoringConfig

CHOICES = Path(__file__).resolve().parents[2] / "benchmarks" / "validation.json"


def test_fused_settings_are_the_validated_ones():
    choices = json.loads(CHOICES.read_text(encoding="utf-8"))
    assert ScoringConfig.model_validate(choices["edge_scoring"]) == PRODUCT_SCORING


def test_the_shipped_generic_model_carries_its_validated_fused_settings():
    from padformer_edge.model.checkpoint import load_checkpoint
    from padformer_edge.weights import CHECKPOINT_NAME, package_folder

    choices = json.loads(CHOICES.read_text(encoding="utf-8"))
    model, _ = load_checkpoint(package_folder() / CHECKPOINT_NAME)
    chosen = ScoringConfig.model_validate(choices["generic_scoring"])
    assert chosen.is_complete
    assert ScoringConfig.model_validate(model.scoring) == chosen
