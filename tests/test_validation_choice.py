"""The product's fused weights are the ones the validation sweep chose."""

import json
from pathlib import Path

import pytest

from padformer_edge.detect.scoring import FUSED_LAB_WEIGHT, FUSED_SCORE_LAB_WEIGHT

CHOICES = Path(__file__).resolve().parent.parent / "benchmarks" / "validation.json"


def test_fused_weights_are_the_validated_ones():
    choices = json.loads(CHOICES.read_text(encoding="utf-8"))
    assert pytest.approx(choices["fused_lab_weight"]) == FUSED_LAB_WEIGHT
    assert pytest.approx(choices["fused_score_lab_weight"]) == FUSED_SCORE_LAB_WEIGHT


def test_the_shipped_generic_model_carries_its_validated_fused_weights():
    from padformer_edge.model.checkpoint import load_checkpoint
    from padformer_edge.models import CHECKPOINT_NAME, package_folder

    choices = json.loads(CHOICES.read_text(encoding="utf-8"))
    model, _ = load_checkpoint(package_folder() / CHECKPOINT_NAME)
    assert pytest.approx(choices["generic_fused_lab_weight"]) == model.config.fused_lab_weight
    assert (
        pytest.approx(choices["generic_fused_score_lab_weight"])
        == model.config.fused_score_lab_weight
    )
