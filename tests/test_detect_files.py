"""Reading images with OpenCV and writing heatmaps atomically."""

import cv2
import numpy as np
import pytest

from padformer_edge.detect.heatmap import render_overlay, write_heatmap
from padformer_edge.detect.images import ImageReadError, read_image
from tests.detect_images import product_image


def test_read_image_returns_rgb_from_an_odd_path(tmp_path):
    bgr = np.zeros((6, 9, 3), np.uint8)
    bgr[..., 0] = 200  # blue in OpenCV's channel order
    path = tmp_path / "prüfung Ω #1.png"
    _, data = cv2.imencode(".png", bgr)
    path.write_bytes(data.tobytes())
    rgb = read_image(path)
    assert rgb.shape == (6, 9, 3) and rgb.dtype == np.uint8
    assert (rgb[..., 2] == 200).all() and (rgb[..., 0] == 0).all()


@pytest.mark.parametrize("content", [b"", b"not an image at all", None])
def test_unreadable_images_raise_one_sentence(tmp_path, content):
    path = tmp_path / "broken.png"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ImageReadError) as caught:
        read_image(path)
    message = str(caught.value)
    assert str(path) in message and "\n" not in message


def test_truncated_png_is_unreadable(tmp_path):
    _, data = cv2.imencode(".png", product_image(40, 40))
    path = tmp_path / "cut.png"
    path.write_bytes(data.tobytes()[: len(data) // 3])
    with pytest.raises(ImageReadError, match="not a decodable picture"):
        read_image(path)


def test_heatmap_png_and_raw_map_are_written_and_readable(tmp_path):
    image = product_image(50, 70)
    anomaly_map = np.zeros((50, 70), np.float32)
    anomaly_map[20:30, 40:50] = 7.5
    png, raw = tmp_path / "out" / "7.png", tmp_path / "out" / "7.npy"
    png.parent.mkdir()
    png.write_bytes(b"old content")  # an existing heatmap is replaced, not appended to
    assert write_heatmap(png, image, anomaly_map, 7.5, raw_path=raw) == png
    overlay = cv2.imread(str(png))
    assert overlay.shape == (50, 70, 3)
    np.testing.assert_array_equal(np.load(raw), anomaly_map)
    assert sorted(p.name for p in png.parent.iterdir()) == ["7.npy", "7.png"]
    lowest = cv2.applyColorMap(np.zeros((1, 1), np.uint8), cv2.COLORMAP_JET)[0, 0]
    expected_cold = (cv2.cvtColor(image, cv2.COLOR_RGB2BGR)[45, 5] / 2 + lowest / 2).round()
    assert np.abs(overlay[45, 5].astype(int) - expected_cold).max() <= 1
    hot = overlay[25, 45].astype(int)
    assert hot[2] > hot[0]  # JET's top end is red (BGR order)


def test_overlay_scale_can_be_fixed_across_images():
    image = product_image(40, 40)
    anomaly_map = np.full((40, 40), 1.0, np.float32)
    own = render_overlay(image, anomaly_map, 1.0)
    fixed = render_overlay(image, anomaly_map, 1.0, vmax=10.0)
    assert not np.array_equal(own[30:, 30:], fixed[30:, 30:])
