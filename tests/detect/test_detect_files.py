"""Reading images with OpenCV and writing heatmaps atomically."""

import cv2
import numpy as np
import pytest

from padformer_edge.detect.heatmap import (
    JET_COLOURS,
    LABEL_FONT,
    MAX_OVERLAY_SIDE,
    MIN_MARK_SHARE,
    OUTLINE_BGR,
    colour_indices,
    label_layout,
    render_overlay,
    write_heatmap,
)
from padformer_edge.detect.images import ImageReadError, read_image
from padformer_edge.reporting.numbers import plain
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


def colour_of(overlay: np.ndarray, image: np.ndarray) -> np.ndarray:
    """The colour-map layer of a decoded overlay: the blend undone (to within rounding)."""
    base = cv2.cvtColor(image, cv2.COLOR_RGB2BGR).astype(int)
    return 2 * overlay.astype(int) - base


def label_rows(image: np.ndarray) -> int:
    """The rows of the score label's black box at the top (``decoded_heatmap`` draws score
    1 at threshold 1, the taller of its labels); not part of the colour layer."""
    return label_layout(("score 1", "threshold 1"), image.shape).height + 1


def hot_pixels(overlay: np.ndarray, image: np.ndarray) -> np.ndarray:
    """Where the colour layer is in JET's hot half: red well above blue (BGR order);
    the rows of the score label never count."""
    colour = colour_of(overlay, image)
    hot = colour[..., 2] - colour[..., 0] > 16
    hot[: label_rows(image)] = False
    return hot


def outline_pixels(overlay: np.ndarray) -> np.ndarray:
    return np.all(overlay == np.array(OUTLINE_BGR, np.uint8), axis=2)


def decoded_heatmap(tmp_path, name, image, anomaly_map, **scale) -> np.ndarray:
    path = write_heatmap(tmp_path / f"{name}.png", image, anomaly_map, 1.0, **scale)
    return cv2.imread(str(path))


def test_good_part_at_the_profile_scale_is_calm_and_unoutlined(tmp_path):
    image = product_image(80, 100)
    rng = np.random.default_rng(1)
    good_map = rng.uniform(0.0, 0.9, (80, 100)).astype(np.float32)  # all below 1.0
    per_image = decoded_heatmap(tmp_path, "own", image, good_map)
    anchored = decoded_heatmap(tmp_path, "profile", image, good_map, threshold=1.0)
    # Scaled to its own maximum the good part shows red spots; at the profile's scale none.
    assert hot_pixels(per_image, image).sum() > 100
    assert hot_pixels(anchored, image).sum() == 0
    assert outline_pixels(anchored).sum() == 0


def test_defect_is_hot_and_outlined_at_the_profile_scale(tmp_path):
    image = product_image(80, 100)
    defect_map = np.full((80, 100), 0.3, np.float32)
    defect_map[30:50, 40:70] = 1.8  # the defect: above the threshold 1.0
    overlay = decoded_heatmap(tmp_path, "defect", image, defect_map, threshold=1.0)
    outline = outline_pixels(overlay)
    rows, cols = np.nonzero(outline)
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (30, 49, 40, 69)
    hot = hot_pixels(overlay, image)
    assert hot[32:48, 42:68].all()  # inside the outline
    assert not hot[~outline & (defect_map < 1.0)].any()  # calm everywhere else


def test_profile_scale_gives_one_value_one_colour_across_images(tmp_path):
    image = product_image(60, 60)
    first = np.full((60, 60), 0.5, np.float32)
    second = first.copy()
    second[:20, :20] = 3.0  # a defect elsewhere must not recolour the rest of the picture
    own = [decoded_heatmap(tmp_path, f"own{i}", image, m) for i, m in enumerate((first, second))]
    fixed = [
        decoded_heatmap(tmp_path, f"fix{i}", image, m, threshold=1.0)
        for i, m in enumerate((first, second))
    ]
    assert not np.array_equal(own[0][40:, 40:], own[1][40:, 40:])
    np.testing.assert_array_equal(fixed[0][40:, 40:], fixed[1][40:, 40:])


def test_the_stored_colour_table_is_opencvs_jet():
    """The overlay colours through a table built once; every index gets JET's colour."""
    every_index = np.arange(256, dtype=np.uint8).reshape(16, 16)
    np.testing.assert_array_equal(
        cv2.applyColorMap(every_index, JET_COLOURS),
        cv2.applyColorMap(every_index, cv2.COLORMAP_JET),
    )


def test_anchored_indices_follow_the_two_halves_formula_exactly():
    """The in-place arithmetic gives the indices of the formula written out (calm half
    below the threshold, hot half above, clipped and floored) on every value, the
    threshold itself and values a float32 step either side of it included."""
    rng = np.random.default_rng(7)
    threshold, top = 0.37, 1.1
    values = rng.uniform(0.0, 1.5, (64, 64)).astype(np.float32)
    edge = np.float32(threshold)
    values[0, :3] = [np.nextafter(edge, np.float32(0)), edge, np.nextafter(edge, np.float32(2))]
    calm = values / threshold * 0.5
    hot = 0.5 + (values - threshold) / (top - threshold) * 0.5
    written_out = np.floor(np.clip(np.where(values <= threshold, calm, hot), 0, 1) * 255.999)
    np.testing.assert_array_equal(
        colour_indices(values, vmax=top, threshold=threshold), written_out.astype(np.uint8)
    )


def test_threshold_anchors_the_scale_halves():
    values = np.array([[0.0, 0.5, 1.0, 1.01, 2.0, 9.0]], np.float32)
    indices = colour_indices(values, threshold=1.0)
    assert indices.tolist() == [[0, 63, 127, 129, 255, 255]]
    assert colour_indices(values, vmax=4.0, threshold=1.0)[0, 4] == 127 + 43
    with pytest.raises(ValueError, match="above the threshold"):
        colour_indices(values, vmax=1.0, threshold=1.0)
    # a threshold of 0 (every image anomalous) anchors nothing: the map's own scale, not
    # an error that would cost the daemon a result
    for nothing in (0.0, -1.0):
        np.testing.assert_array_equal(
            colour_indices(values, threshold=nothing), colour_indices(values)
        )


def test_a_region_of_a_pixel_or_two_is_ringed_so_it_can_be_found(tmp_path):
    image = product_image(100, 120)
    anomaly_map = np.full((100, 120), 0.5, np.float32)
    anomaly_map[60, 70] = 1.2  # a score just above the threshold: one pixel passes it
    overlay = decoded_heatmap(tmp_path, "dot", image, anomaly_map, threshold=1.0)
    rows, cols = np.nonzero(outline_pixels(overlay))
    distance = np.hypot(rows - 60, cols - 70)
    assert (distance >= 4).sum() > 20  # a ring of radius 5 (5 % of 100 px), not one dot
    assert distance.max() <= 6


def camera_image(tmp_path, height: int, width: int, suffix: str) -> np.ndarray:
    """A camera picture as the daemon gets it: written by OpenCV, decoded from the file."""
    path = tmp_path / f"camera{suffix}"
    assert cv2.imwrite(str(path), cv2.cvtColor(product_image(height, width), cv2.COLOR_RGB2BGR))
    return read_image(path)


def test_a_5_megapixel_overlay_is_stored_at_1024_px_with_its_small_defect(tmp_path):
    """A 2448 x 2048 camera image's overlay is 1024 px on its longer side, the aspect
    kept to within the rounding of a pixel; a defect of two pixels above the threshold is
    still outlined on it (the comparison is made at full size), and the raw map keeps the
    image's size for tools."""
    image = camera_image(tmp_path, 2048, 2448, ".jpg")
    anomaly_map = np.full((2048, 2448), 0.5, np.float32)
    anomaly_map[1000, 1200:1202] = 1.2
    png, raw = tmp_path / "5mp.png", tmp_path / "5mp.npy"
    write_heatmap(png, image, anomaly_map, 1.2, threshold=1.0, raw_path=raw)
    overlay = cv2.imread(str(png))
    height, width = overlay.shape[:2]
    assert width == MAX_OVERLAY_SIDE
    assert abs(height - 2048 * MAX_OVERLAY_SIDE / 2448) <= 0.5
    rows, cols = np.nonzero(outline_pixels(overlay))
    factor = MAX_OVERLAY_SIDE / 2448
    distance = np.hypot(rows - 1000 * factor, cols - 1200.5 * factor)
    ring = MIN_MARK_SHARE * min(height, width)
    assert distance.min() <= 2  # the region's own outline
    assert ring - 2 <= distance.max() <= ring + 4  # and its ring, thickness 4 at this size
    assert np.load(raw).shape == (2048, 2448)
    calm = write_heatmap(tmp_path / "calm.png", image, np.minimum(anomaly_map, 1.0), 1.0,
                         threshold=1.0)  # fmt: skip
    assert not outline_pixels(cv2.imread(str(calm))).any()  # nothing above: no outline


@pytest.mark.parametrize("size", [224, 1024])
def test_an_image_up_to_1024_px_keeps_its_size(tmp_path, size):
    image = camera_image(tmp_path, size, size - 24, ".png")
    path = write_heatmap(tmp_path / "h.png", image, np.zeros(image.shape[:2], np.float32), 0.1)
    assert cv2.imread(str(path)).shape == image.shape


@pytest.mark.parametrize("score, threshold", [(0.0001235, 0.00009877), (11080.0, 9876.0)])
def test_a_224_px_label_is_whole_inside_the_image(tmp_path, score, threshold):
    """The label "score ... / threshold ..." at its longest numbers, on a 224-px camera
    image: every line it is drawn as, measured with OpenCV at the font scale used, lies
    inside the picture with its margins, and together the lines say all of it."""
    image = camera_image(tmp_path, 224, 224, ".png")
    parts = (f"score {plain(score)}", f"threshold {plain(threshold)}")
    label = label_layout(parts, image.shape)
    assert " ".join(label.lines).replace(" / ", " ") == " ".join(parts)
    assert label.scale >= 0.3  # still legible
    heights = []
    for line in label.lines:
        (width, height), baseline = cv2.getTextSize(line, LABEL_FONT, label.scale, label.thickness)
        assert width + 2 * label.margin <= 224
        heights.append(height + baseline)
    assert sum(heights) + (len(heights) + 1) * label.margin <= label.height <= 224
    assert label.width <= 224
    overlay = render_overlay(image, np.zeros((224, 224), np.float32), score, threshold=threshold)
    white = np.all(overlay[: label.height + 1] > 200, axis=-1)  # the label's text
    assert white[:, : label.width].any() and not white[:, label.width + 1 :].any()


def test_an_uncompressed_overlay_holds_the_same_pixels(tmp_path):
    """``png-stored`` (``worker.heatmap_format``) changes only how the PNG is stored: the
    same overlay, decoded, pixel for pixel; the file larger."""
    image = camera_image(tmp_path, 300, 400, ".png")
    anomaly_map = np.linspace(0.0, 2.0, 300 * 400, dtype=np.float32).reshape(300, 400)
    packed = write_heatmap(tmp_path / "packed.png", image, anomaly_map, 1.5, threshold=1.0)
    stored = write_heatmap(
        tmp_path / "stored.png", image, anomaly_map, 1.5, threshold=1.0, encoding="png-stored"
    )
    np.testing.assert_array_equal(cv2.imread(str(stored)), cv2.imread(str(packed)))
    assert stored.stat().st_size > packed.stat().st_size


def plainly_outline(pixels: np.ndarray) -> np.ndarray:
    """For each BGR pixel, whether it lies nearer the outline's magenta than half the
    distance from magenta to the nearest colour the JET map (or the label's black and
    white) draws: the outline then still reads as its own colour, however the map
    beside it is coloured."""
    palette = np.concatenate([JET_COLOURS.reshape(-1, 3), [[0, 0, 0], [255, 255, 255]]])
    magenta = np.array(OUTLINE_BGR, np.float64)
    margin = np.sqrt(((palette - magenta) ** 2).sum(-1)).min() / 2
    return np.sqrt(((pixels.astype(np.float64) - magenta) ** 2).sum(-1)) < margin


@pytest.mark.parametrize("side", [224, 2448])
def test_a_jpeg_overlay_keeps_its_outline(tmp_path, side):
    """The daemon's default overlay format: every pixel of the PNG overlay's outline
    still plainly magenta on the JPEG (4:4:4 colour; JPEG's usual 4:2:0 halves the
    colour planes and turns a one-pixel outline grey-purple), and a name that does not
    say JPEG refused."""
    height = side * 2048 // 2448 if side > 224 else side
    image = camera_image(tmp_path, height, side, ".jpg")
    anomaly_map = np.full((height, side), 0.5, np.float32)
    anomaly_map[height // 3 : height // 2, side // 4 : side // 2] = 1.6  # a defect
    png = write_heatmap(tmp_path / "o.png", image, anomaly_map, 1.6, threshold=1.0)
    jpeg = write_heatmap(
        tmp_path / "o.jpg", image, anomaly_map, 1.6, threshold=1.0, encoding="jpeg"
    )
    exact, lossy = cv2.imread(str(png)), cv2.imread(str(jpeg))
    assert jpeg.read_bytes()[:3] == b"\xff\xd8\xff" and exact.shape == lossy.shape
    outline = np.all(exact == np.array(OUTLINE_BGR, np.uint8), axis=2)
    assert outline.sum() > 0
    assert plainly_outline(lossy[outline]).all()
    with pytest.raises(ValueError, match=r"a jpeg heatmap is named \*\.jpg, not o\.png"):
        write_heatmap(tmp_path / "o.png", image, anomaly_map, 1.6, encoding="jpeg")
