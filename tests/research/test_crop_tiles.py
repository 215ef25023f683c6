"""The tiled-crop study (``research/crop_tiles.py``): tiles cover the resized crop row by
row, and one tile per side reads a frame exactly as a framed profile does today."""

from __future__ import annotations

import numpy as np

from padformer_edge.detect.framed import FramedDetector, Framing, framed_references
from padformer_edge.detect.images import resize_square, to_unit_tensor
from padformer_edge.detect.locate import BeltModel
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge_training.evaluation.scorers import PADFormerScorer
from research.crop_tiles import INPUT, TiledScorer, tiles
from tests import framed_frames


def test_tiles_cover_the_resized_crop_row_by_row() -> None:
    """Cut from the crop squeezed to twice the input, in order; one tile is the crop."""
    image = np.random.default_rng(0).integers(0, 256, (500, 500, 3), dtype=np.uint8)
    assert tiles(image, 1)[0] is image
    parts = tiles(image, 2)
    assert [p.shape for p in parts] == [(INPUT, INPUT, 3)] * 4
    joined = np.vstack([np.hstack(parts[:2]), np.hstack(parts[2:])])
    unit = resize_square(to_unit_tensor(image, "cpu")[None], 2 * INPUT)[0]
    expected = (unit.permute(1, 2, 0).numpy() * 255.0).round().astype(np.uint8)
    assert np.array_equal(joined, expected)
    # a smooth image keeps its values: the squeeze is a resize, not a rearrangement
    flat = np.full((500, 500, 3), 77, np.uint8)
    assert all(np.all(p == 77) for p in tiles(flat, 3))


def test_one_tile_per_side_scores_as_the_product_reads_a_frame() -> None:
    framing = Framing(BeltModel.from_photo(framed_frames.belt_photo()), "test")
    settings = DetectionSettings(device="cpu", metric="compare")
    references = framed_frames.references()
    frames = [framed_frames.framed(110, 70, seed=5, dent=dent)[0] for dent in (False, True)]
    tiled = TiledScorer(PADFormerScorer(None, "compare", settings), framing, 1)  # type: ignore[arg-type]
    tiled.prepare(references)
    product = PADFormerScorer(None, "compare", settings)  # type: ignore[arg-type]
    product.prepare(framed_references(references, framing))
    assert product.detector is not None
    expected = FramedDetector(product.detector, framing).detect(frames)
    found = tiled.score(frames)
    # one 320-px tile of a crop larger than 320 px is the crop squeezed as the product does
    assert [s.score for s in found] == [d.score for d in expected]
    two = TiledScorer(PADFormerScorer(None, "compare", settings), framing, 2)  # type: ignore[arg-type]
    two.prepare(references)
    assert all(np.isfinite(s.score) for s in two.score(frames))
