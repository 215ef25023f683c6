"""The frame's light study (``research/framed_light.py``): each candidate matches a crop's
light as it says, and its product candidate reads frames exactly as a framed profile does."""

from __future__ import annotations

import numpy as np
import pytest

from padformer_edge.detect.framed import FramedDetector, Framing, framed_references
from padformer_edge.detect.framing import relight
from padformer_edge.detect.locate import BeltLight, BeltModel, Located
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge_training.evaluation.scorers import PADFormerScorer
from research.framed_light import ONE_GAIN, PRODUCT, CandidateFraming, matched
from tests import framed_frames


@pytest.fixture(scope="module")
def belt() -> BeltModel:
    return BeltModel.from_photo(framed_frames.belt_photo())


def test_each_candidate_matches_the_light_as_it_says() -> None:
    pixels = np.random.default_rng(0).integers(20, 200, (40, 40, 3), dtype=np.uint8)
    light = BeltLight(seen=(96.0, 72.0, 84.0), photo=(80.0, 80.0, 80.0))
    found = Located((0, 0, 40, 40), light=light)
    assert matched(pixels, found, "none") is pixels
    assert matched(pixels, Located((0, 0, 40, 40)), "shift") is pixels  # no light read
    assert np.array_equal(matched(pixels, found, ONE_GAIN), relight(pixels, light))
    shifted = matched(pixels, found, "shift").astype(float) - pixels
    # the shift is the belt's colour difference, rounded to whole levels with the pixels
    assert np.abs(shifted - np.subtract(light.photo, light.seen)).max() <= 0.5
    scaled = matched(pixels, found, "gain per channel").astype(float)
    # each channel scaled by photo / seen, rounded to whole levels
    assert np.abs(scaled - pixels * np.divide(light.photo, light.seen)).max() <= 0.5
    with pytest.raises(UserError, match="light candidate 'gamma' is unknown"):
        matched(pixels, found, "gamma")


def test_the_product_candidate_scores_as_a_framed_profile(belt: BeltModel) -> None:
    settings = DetectionSettings(device="cpu", metric="compare")
    references = framed_frames.references()
    frames = [framed_frames.framed(110, 70, seed=5, dent=dent)[0] for dent in (False, True)]
    product = Framing(belt, "test")
    candidate = CandidateFraming(belt, "test", product.margin, PRODUCT)
    scores = []
    for framing in (product, candidate):
        scorer = PADFormerScorer(None, "compare", settings)  # type: ignore[arg-type]
        scorer.prepare(framed_references(references, framing))
        assert scorer.detector is not None
        scores.append([d.score for d in FramedDetector(scorer.detector, framing).detect(frames)])
    assert scores[0] == scores[1]
