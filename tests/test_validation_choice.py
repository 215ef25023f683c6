"""The product's fused weight is the one the validation sweep chose."""

import json
from pathlib import Path

import pytest

from padformer_edge.detect.scoring import FUSED_LAB_WEIGHT

CHOICES = Path(__file__).resolve().parent.parent / "benchmarks" / "validation.json"


def test_fused_lab_weight_is_the_validated_one():
    choices = json.loads(CHOICES.read_text(encoding="utf-8"))
    assert pytest.approx(choices["fused_lab_weight"]) == FUSED_LAB_WEIGHT
