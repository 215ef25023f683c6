"""Defects are real 3D geometry: Missing takes pixels away, Burrs add some, Stains recolour."""

from __future__ import annotations

import numpy as np
import pytest

from padformer_edge_training.synth.camera import sample_pose
from padformer_edge_training.synth.dataset import defect_mask, min_mask_pixels, render_defect_view
from padformer_edge_training.synth.defects import refine_near, sample_anchor
from padformer_edge_training.synth.loaders import load_model
from padformer_edge_training.synth.renderer import Renderer

SIZE, DRAWS = 96, 8


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    with Renderer(SIZE) as r:
        yield r


@pytest.mark.parametrize("name", ["duck", "mug", "r2d2"])
def test_missing_only_ever_removes_surface(renderer: Renderer, name: str) -> None:
    model, rng = load_model(f"builtin:{name}"), np.random.default_rng(0)
    visible = 0
    for _ in range(DRAWS):
        clean, cut, mask = render_defect_view(renderer, model, "Missing", sample_pose(rng), rng)
        assert not (cut.covered & ~clean.covered).any(), "a cut must not add object pixels"
        if not mask.any():
            continue
        visible += 1
        # nothing in front of the old surface; a hole: the inside, or the background
        assert (cut.depth[mask] >= clean.depth[mask] - 1e-4).mean() > 0.98
        opened = (cut.depth > clean.depth + 1e-3) | (clean.covered & ~cut.covered)
        assert opened[mask].mean() > 0.5
    assert visible >= DRAWS // 2


def test_a_hole_shows_the_inside_not_the_background(renderer: Renderer) -> None:
    model, rng = load_model("builtin:soccerball"), np.random.default_rng(6)
    holes = 0
    for _ in range(DRAWS):
        _, cut, mask = render_defect_view(renderer, model, "Missing", sample_pose(rng), rng)
        # a ball's cut never reaches past its far wall, seen from inside
        assert cut.covered[mask].all()
        holes += int(mask.any())
    assert holes > 0


@pytest.mark.parametrize("name", ["duck", "bunny"])
def test_burrs_grow_out_of_the_silhouette(renderer: Renderer, name: str) -> None:
    model, rng = load_model(f"builtin:{name}"), np.random.default_rng(1)
    grown = []
    for _ in range(DRAWS):
        clean, burred, mask = render_defect_view(renderer, model, "Burrs", sample_pose(rng), rng)
        assert not (clean.covered & ~burred.covered).any(), "a burr must not remove pixels"
        assert not (burred.depth[mask] > clean.depth[mask] + 1e-4).any(), "burrs sit in front"
        grown.append(int((burred.covered & ~clean.covered).sum()))
    assert max(grown) > 0


def test_stains_recolour_the_surface_without_changing_its_outline(renderer: Renderer) -> None:
    model, rng = load_model("builtin:soccerball"), np.random.default_rng(2)
    visible = 0
    for _ in range(DRAWS):
        clean, stained, mask = render_defect_view(renderer, model, "Stains", sample_pose(rng), rng)
        if mask.sum() < min_mask_pixels(SIZE):
            continue  # the dataset re-draws these
        visible += 1
        outline_change = (clean.covered != stained.covered).sum()
        assert outline_change <= 0.1 * mask.sum()
        colour = np.abs(clean.rgb.astype(int) - stained.rgb).max(axis=2)
        assert (colour[mask] > 4).mean() > 0.5
    assert visible > 0


def test_masks_cover_exactly_the_changed_pixels(renderer: Renderer) -> None:
    model, rng = load_model("builtin:duck"), np.random.default_rng(3)
    for kind in ("Burrs", "Missing", "Stains"):
        pose = sample_pose(rng)
        clean, defective, mask = render_defect_view(renderer, model, kind, pose, rng)
        assert np.array_equal(clean.rgb, renderer.render([model], pose).rgb)
        assert np.array_equal(defective.rgb[~mask], clean.rgb[~mask])
    assert not defect_mask(clean, clean).any()


@pytest.mark.parametrize("name", ["duck", "lego", "r2d2"])
def test_refining_the_mesh_keeps_its_shape(renderer: Renderer, name: str) -> None:
    model, rng = load_model(f"builtin:{name}"), np.random.default_rng(4)
    pose = sample_pose(rng)
    anchor = sample_anchor(model, pose, rng)
    refined = model.with_parts([refine_near(p, anchor.point, 0.3, 0.03) for p in model.parts])
    assert refined.face_count > model.face_count
    before, after = renderer.render([model], pose), renderer.render([refined], pose)
    renderer.forget(refined)
    # splitting a silhouette edge may flip a few boundary pixels, never a region
    assert (before.covered != after.covered).sum() <= 0.005 * before.covered.sum()
    both = before.covered & after.covered
    assert np.abs(before.depth - after.depth)[both].max() < 1e-3
