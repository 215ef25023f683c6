"""Dents, Discoloured, Foreign, Cracks and Bent: real 3D changes, masked to exactly what
changed."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from padformer_edge_training.synth.bent import make_bent
from padformer_edge_training.synth.camera import pixel_size, sample_pose
from padformer_edge_training.synth.dataset import (
    DEPTH_TOLERANCE,
    defect_mask,
    min_mask_pixels,
    render_defect_view,
)
from padformer_edge_training.synth.dents import make_dent
from padformer_edge_training.synth.foreign import make_foreign
from padformer_edge_training.synth.kinds import NEWER_GENERATORS
from padformer_edge_training.synth.loaders import load_model
from padformer_edge_training.synth.procedural import build_object
from padformer_edge_training.synth.renderer import Renderer

SIZE, DRAWS = 96, 8
NEWER = tuple(NEWER_GENERATORS)


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    with Renderer(SIZE) as r:
        yield r


def _visible_draws(renderer: Renderer, model, kind: str, seed: int, draws: int = DRAWS):
    """(clean-of-pose, defective, mask) for the draws whose mask is large enough."""
    rng, kept = np.random.default_rng(seed), []
    for _ in range(draws):
        plain, defective, mask = render_defect_view(renderer, model, kind, sample_pose(rng), rng)
        if mask.sum() >= min_mask_pixels(SIZE):
            kept.append((plain, defective, mask))
    return kept


@pytest.mark.parametrize("kind", NEWER)
@pytest.mark.parametrize("spec", ["builtin:duck", "procedural:0:2"])
def test_masks_cover_exactly_the_changed_pixels(renderer: Renderer, kind: str, spec: str) -> None:
    model = load_model(spec)
    rng = np.random.default_rng(11)
    seen = 0
    for _ in range(DRAWS):
        pose = sample_pose(rng)
        plain, defective, mask = render_defect_view(renderer, model, kind, pose, rng)
        assert np.array_equal(plain.rgb, renderer.render([model], pose).rgb)
        outside = ~mask
        assert np.array_equal(defective.rgb[outside], plain.rgb[outside])
        assert np.array_equal(defective.depth[outside], plain.depth[outside])
        assert np.array_equal(defective.covered[outside], plain.covered[outside])
        if mask.sum() < min_mask_pixels(SIZE):
            continue
        seen += 1
        # the mask holds changed pixels only (a refined mesh may rasterise a stray pixel
        # differently from the plain one; the mask is taken against the refined render)
        assert defect_mask(plain, defective)[mask].mean() > 0.95, f"{kind}: unchanged pixels"
    assert seen > 0, f"{kind} never showed on {spec}"
    renderer.clear()


def test_dents_push_the_surface_in_and_never_out(renderer: Renderer) -> None:
    ball = load_model("builtin:soccerball")
    for plain, dented, mask in _visible_draws(renderer, ball, "Dents", 1):
        assert not (dented.covered & ~plain.covered).any(), "a dent must not add object pixels"
        assert (dented.depth[mask] >= plain.depth[mask] - 1e-4).mean() > 0.98


def test_a_dent_is_a_local_push_along_one_direction() -> None:
    model, rng = build_object(0, 3), np.random.default_rng(2)
    for _ in range(4):
        scene = make_dent(model, sample_pose(rng), rng)
        [clean], [dented] = scene.clean, scene.defective
        moves = np.concatenate(
            [d.vertices - c.vertices for c, d in zip(clean.parts, dented.parts, strict=True)]
        )
        where = np.concatenate([c.vertices for c in clean.parts])
        moved = np.linalg.norm(moves, axis=1) > 0
        assert 0 < moved.sum() < 0.5 * len(moves), "a dent moves a patch, not the whole part"
        directions = moves[moved] / np.linalg.norm(moves[moved], axis=1, keepdims=True)
        assert np.allclose(directions, directions[0], atol=1e-9)
        spread = np.linalg.norm(where[moved] - where[moved].mean(axis=0), axis=1).max()
        assert spread < 0.35


def test_discolouring_changes_colour_only(renderer: Renderer) -> None:
    for spec in ("builtin:duck", "builtin:lego"):
        model = load_model(spec)
        draws = _visible_draws(renderer, model, "Discoloured", 3)
        assert draws, spec
        for plain, changed, mask in draws:
            # only the refined triangulation's float rounding moves depth, far below the mask's
            assert np.abs(plain.depth - changed.depth).max() < 0.1 * DEPTH_TOLERANCE
            assert np.array_equal(plain.covered, changed.covered)
            colour = np.abs(plain.rgb.astype(int) - changed.rgb).max(axis=2)
            assert (colour[mask] > 4).all()
        renderer.clear()


def test_a_foreign_body_rests_on_the_part_in_its_own_colour(renderer: Renderer) -> None:
    ball, rng = load_model("builtin:soccerball"), np.random.default_rng(4)
    for _ in range(4):
        scene = make_foreign(ball, sample_pose(rng), rng)
        assert scene.clean == [ball] and scene.defective[0] is ball
        [body] = scene.defective[1].parts
        radius = np.linalg.norm(body.vertices, axis=1)
        assert radius.min() < 1.0 < radius.max(), "sunk into the surface and standing out of it"
    for plain, fouled, mask in _visible_draws(renderer, ball, "Foreign", 4):
        assert not (plain.covered & ~fouled.covered).any(), "it hides nothing of the background"
        assert (fouled.depth[mask] <= plain.depth[mask] + 1e-4).all(), "it lies in front"


def test_cracks_are_thin_dark_grooves(renderer: Renderer) -> None:
    ball = load_model("builtin:soccerball")
    draws = _visible_draws(renderer, ball, "Cracks", 5, draws=12)
    assert len(draws) >= 3
    core, dark, total = 0, 0, 0
    for plain, cracked, mask in draws:
        assert not (cracked.covered & ~plain.covered).any()
        assert (cracked.depth[mask] >= plain.depth[mask] - 1e-4).mean() > 0.98, (
            "a groove, not a ridge"
        )
        darker = cracked.rgb.astype(int).sum(axis=2) <= plain.rgb.astype(int).sum(axis=2)
        dark += int(darker[mask].sum())
        total += int(mask.sum())
        core += int(cv2.erode(mask.astype(np.uint8), np.ones((5, 5), np.uint8)).sum())
    assert dark > 0.9 * total, "a crack darkens the surface"
    assert core < 0.2 * total, "a crack is a line a few pixels wide, not a patch"


@pytest.mark.parametrize("spec", ["builtin:lego", "procedural:0:3"])
def test_a_bend_turns_one_end_about_one_axis_without_tearing(spec: str) -> None:
    """Only some vertices move, every move is square to one axis (a turn about it), and
    vertices at one place (a creased edge's copies) stay together: no tear opens."""
    model, rng = load_model(spec), np.random.default_rng(7)
    for _ in range(4):
        pose = sample_pose(rng)
        scene = make_bent(model, pose, rng, pixel_size(pose, 64))
        [clean], [bent] = scene.clean, scene.defective
        where = np.concatenate([p.vertices for p in clean.parts])
        after = np.concatenate([p.vertices for p in bent.parts])
        moves = after - where
        moved = np.linalg.norm(moves, axis=1) > 0
        # refining keeps a part's own vertices first: some of those turn, the body's stay
        own = np.concatenate(
            [
                np.linalg.norm(b.vertices[: len(o.vertices)] - o.vertices, axis=1) > 0
                for o, b in zip(model.parts, bent.parts, strict=True)
            ]
        )
        assert own.any() and not own.all(), "a bend moves one end, not the whole part"
        spread = np.linalg.svd(moves[moved], compute_uv=False)
        assert spread[2] < 1e-9 * spread[0], "every move turns about one axis"
        _, first, same_place = np.unique(where, axis=0, return_index=True, return_inverse=True)
        assert np.array_equal(after, after[first][same_place.ravel()]), "a tear opened"


def test_a_bend_moves_depth_and_colour_together(renderer: Renderer) -> None:
    """Neither added nor painted: the bent end's pixels move with it, so both the depth
    and the colour change inside the mask."""
    lego = load_model("builtin:lego")
    draws = _visible_draws(renderer, lego, "Bent", 8)
    assert len(draws) >= 4
    for plain, bent, mask in draws:
        depth = np.abs(plain.depth - bent.depth) > DEPTH_TOLERANCE
        colour = np.abs(plain.rgb.astype(int) - bent.rgb).max(axis=2) > 4
        assert depth[mask].any() and colour[mask].any()
    renderer.clear()


@pytest.mark.parametrize("kind", NEWER)
def test_each_kind_comes_small_and_large(renderer: Renderer, kind: str) -> None:
    """Sizes are drawn from a range: the biggest visible draw is several times the smallest."""
    ball = load_model("builtin:soccerball")
    areas = [int(m.sum()) for _, _, m in _visible_draws(renderer, ball, kind, 6, draws=14)]
    assert len(areas) >= 4 and max(areas) > 3 * min(areas), areas
