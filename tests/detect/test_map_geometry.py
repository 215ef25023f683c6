"""The one resize a detection's map takes to the frame (``map_geometry``): torch's
bilinear resize, a box of the frame pasted in place, and the frame's maximum without
drawing the frame."""

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from padformer_edge.detect.heatmap import overlay_map, write_heatmap
from padformer_edge.detect.map_geometry import frame_map, frame_max, whole_frame

SHAPES = [((40, 40), (224, 224)), ((40, 40), (1500, 2700)), ((7, 9), (13, 31)),
          ((612, 512), (2448, 2048)), ((50, 50), (30, 20))]  # fmt: skip


def torch_resize(plane: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    tensor = torch.from_numpy(plane)[None, None]
    return F.interpolate(tensor, size=size, mode="bilinear", align_corners=False)[0, 0].numpy()


@pytest.mark.parametrize("shape, size", SHAPES)
def test_the_whole_frame_is_torch_s_bilinear_resize(shape, size) -> None:
    """The map the readouts drew at the frame's size (``F.interpolate``), within float32
    rounding of two products of two terms."""
    plane = np.random.default_rng(1).random(shape, dtype=np.float32)
    found = frame_map(plane, size)
    assert found.shape == size and found.dtype == np.float32
    np.testing.assert_allclose(found, torch_resize(plane, size), rtol=0, atol=4e-6)
    assert frame_map(found, size) is found  # at the frame's size already: untouched


@pytest.mark.parametrize("shape, size", SHAPES)
@pytest.mark.parametrize("smooth", [False, True], ids=["noise", "smooth"])
def test_the_frame_s_maximum_is_found_without_drawing_the_frame(shape, size, smooth) -> None:
    plane = np.random.default_rng(2).random(shape, dtype=np.float32)
    if smooth:
        plane = cv2.GaussianBlur(plane, (0, 0), 2.0)
    drawn = frame_map(plane, size)
    assert frame_max(plane, size) == pytest.approx(float(drawn.max()), abs=1e-6)
    box = (3.0, 2.0, size[1] - 1.0, size[0] - 1.0)
    assert frame_max(plane, size, box) == pytest.approx(
        float(frame_map(plane, size, box).max()), abs=1e-6
    )


def test_a_box_is_pasted_into_the_frame_and_nothing_else_is_scored() -> None:
    """A crop's map lands on its box, resized to the box alone; the rest of the frame is
    0; at another output size the box scales with it."""
    plane = np.random.default_rng(3).random((10, 16), dtype=np.float32) + 1.0
    frame, box = (100, 200), (50.0, 20.0, 150.0, 70.0)
    found = frame_map(plane, frame, box)
    assert found.shape == frame
    inside = found[20:70, 50:150]
    np.testing.assert_allclose(inside, torch_resize(plane, (50, 100)), rtol=0, atol=4e-6)
    outside = found.copy()
    outside[20:70, 50:150] = 0
    assert not outside.any()
    half = frame_map(plane, frame, box, size=(50, 100))  # the box: rows 10..35, cols 25..75
    assert half.shape == (50, 100) and (half[10:35, 25:75] > 0).all()
    assert not half[:10].any() and not half[35:].any() and not half[:, 75:].any()
    # a box off whole output pixels: every sample inside it is a mean of the map's values
    odd = frame_map(plane, frame, (50.5, 20.25, 149.5, 69.75), size=(37, 81))
    kept = odd[odd > 0]
    assert kept.size and float(kept.min()) >= float(plane.min()) - 1e-6
    assert float(kept.max()) <= float(plane.max()) + 1e-6
    assert whole_frame(frame) == (0.0, 0.0, 200.0, 100.0)
    with pytest.raises(ValueError, match="does not lie inside the frame"):
        frame_map(plane, frame, (0.0, 0.0, 201.0, 100.0))


def test_the_heatmap_resizes_a_cell_map_once_and_stores_it_at_the_frame_s_size(
    tmp_path: Path,
) -> None:
    """A cell-sized map is coloured at the overlay's size straight from the cells, and
    its raw file is the frame-sized map ``frame_map`` draws."""
    rng = np.random.default_rng(4)
    image = rng.integers(0, 255, (1500, 2700, 3), dtype=np.uint8)
    cells = rng.random((40, 40), dtype=np.float32)
    coloured, outlined = overlay_map(cells, image.shape[:2], (569, 1024))
    assert coloured.shape == outlined.shape == (569, 1024)
    np.testing.assert_array_equal(coloured, frame_map(cells, image.shape[:2], size=(569, 1024)))
    raw = tmp_path / "map.npy"
    write_heatmap(tmp_path / "map.png", image, cells, 1.0, threshold=0.5, raw_path=raw)
    np.testing.assert_array_equal(np.load(raw), frame_map(cells, image.shape[:2]))
    assert cv2.imread(str(tmp_path / "map.png")).shape == (569, 1024, 3)
    with pytest.raises(ValueError, match="does not fit image"):
        write_heatmap(tmp_path / "big.png", image[:10, :10], cells, 1.0)


def test_a_map_stored_at_the_frame_s_size_is_compared_with_a_carried_one_in_the_frame() -> None:
    """A detection stored before maps were carried at their cells' size (its map at the
    frame's size) is compared with today's in the frame: the same map gives no gap, and
    a changed cell shows as the change it makes there."""
    from padformer_edge.detect.detection import Detection
    from padformer_edge.detect.parity import on_one_grid, parity_gap

    cells = np.random.default_rng(5).random((40, 40), dtype=np.float32)
    stored = Detection(float(cells.max()), frame_map(cells, (300, 420)), [], [])
    carried = Detection(float(cells.max()), cells, [], [])
    assert parity_gap([stored], [carried]) == 0.0
    first, second = on_one_grid(cells, stored.anomaly_map)
    assert first.shape == second.shape == (300, 420)
    moved = cells.copy()
    moved[20, 20] += 1.0
    changed = Detection(float(cells.max()), moved, [], [])
    drawn = frame_map(moved, (300, 420)) - stored.anomaly_map
    scale = float(stored.anomaly_map.max())
    assert parity_gap([stored], [changed]) == pytest.approx(float(drawn.max()) / scale)
