"""The product's fused settings, and the shipped generic model's, are the ones the
validation sweep chose."""

import json
from pathlib import Path

import pytest

from padformer_edge.detect.scoring import (
    FUSED_LAB_WEIGHT,
    FUSED_MAP_READOUT,
    FUSED_MAP_REFERENCE_TURNS,
    FUSED_MAP_REFERENCE_WEIGHT,
    FUSED_MAP_REFERENCE_ZOOM,
    FUSED_SCORE_LAB_WEIGHT,
    FUSED_SCORE_READOUT,
    FUSED_SCORE_REFERENCE_TURNS,
    FUSED_SCORE_REFERENCE_WEIGHT,
    FUSED_SCORE_REFERENCE_ZOOM,
)

CHOICES = Path(__file__).resolve().parent.parent / "benchmarks" / "validation.json"


def test_fused_settings_are_the_validated_ones():
    choices = json.loads(CHOICES.read_text(encoding="utf-8"))
    assert pytest.approx(choices["fused_lab_weight"]) == FUSED_LAB_WEIGHT
    assert pytest.approx(choices["fused_score_lab_weight"]) == FUSED_SCORE_LAB_WEIGHT
    assert choices["fused_map_filter"] == FUSED_MAP_READOUT.consistency_filter
    assert pytest.approx(choices["fused_map_sigma"]) == FUSED_MAP_READOUT.sigma
    assert choices["fused_score_filter"] == FUSED_SCORE_READOUT.consistency_filter
    assert pytest.approx(choices["fused_score_sigma"]) == FUSED_SCORE_READOUT.sigma
    assert pytest.approx(choices["fused_map_reference_weight"]) == FUSED_MAP_REFERENCE_WEIGHT
    assert pytest.approx(choices["fused_score_reference_weight"]) == FUSED_SCORE_REFERENCE_WEIGHT
    assert choices["fused_map_reference_zoom"] == FUSED_MAP_REFERENCE_ZOOM
    assert choices["fused_score_reference_zoom"] == FUSED_SCORE_REFERENCE_ZOOM
    assert choices["fused_map_reference_turns"] == FUSED_MAP_REFERENCE_TURNS
    assert choices["fused_score_reference_turns"] == FUSED_SCORE_REFERENCE_TURNS


def test_the_shipped_generic_model_carries_its_validated_fused_settings():
    from padformer_edge.model.checkpoint import load_checkpoint
    from padformer_edge.models import CHECKPOINT_NAME, package_folder
    from training.release.ship import FUSED_FIELDS

    choices = json.loads(CHOICES.read_text(encoding="utf-8"))
    model, _ = load_checkpoint(package_folder() / CHECKPOINT_NAME)
    for field in (f for fields in FUSED_FIELDS.values() for f in fields.values()):
        assert pytest.approx(choices[f"generic_{field}"]) == getattr(model.config, field), field
