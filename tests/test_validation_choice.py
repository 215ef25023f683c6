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
