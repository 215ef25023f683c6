"""A profile's regions to ignore: read from the engineer's YAML file, checked against the
camera's frame, and set or cleared on a profile (``profile create --ignore-regions``,
``profile set-regions``).

The frame is what the references show: they are the camera's own pictures, so a region
reaching past them was drawn for another camera (or in another unit) and is refused
rather than clipped. A change of regions changes the scores, so it drops the threshold
and, once the profile could score, makes a new version (``profiles.versions``), as a new
model does; ``detect.regions`` does the ignoring.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from padformer_edge.config import load_config
from padformer_edge.detect.images import read_image
from padformer_edge.detect.regions import hidden_cells
from padformer_edge.errors import UserError
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.schema import IgnoreRegion, RegionsFile
from padformer_edge.profiles.versions import save_profile, version_for
from padformer_edge.reporting.log import get_logger

EXAMPLE = "ignore_regions: [{name: stamp, points: [[10, 10], [200, 10], [200, 60], [10, 60]]}]"


def read_regions(path: str | Path) -> list[IgnoreRegion]:
    """The regions of the YAML file at ``path`` (``RegionsFile``); a file that is not such
    a list is one sentence per problem, with its line."""
    path = Path(path)
    if not path.is_file():
        raise UserError(
            f"--ignore-regions {path} is not a file; give a YAML file such as: {EXAMPLE}"
        )
    return load_config(path, RegionsFile).ignore_regions


def check_regions_fit(regions: Sequence[IgnoreRegion], frame_size: tuple[int, int]) -> None:
    """Refuse a region that reaches past the ``(height, width)`` frame of the references,
    and regions that together leave nothing of it to score."""
    height, width = frame_size
    for region in regions:
        corners = np.asarray(region.points)
        far_x, far_y = corners.max(axis=0)
        if far_x > width or far_y > height:
            raise UserError(
                f"ignore region '{region.name}' reaches ({far_x:g}, {far_y:g}), past the "
                f"{width} x {height} frame of the references; give its corners in the "
                "camera's frame pixels, from 0 to the frame's width and height."
            )
    if hidden_cells([np.asarray(r.points) for r in regions], frame_size, frame_size).all():
        raise UserError(
            f"the ignore regions cover the whole {width} x {height} frame, which would leave "
            "nothing to score; draw them around the fixtures, labels or stamps only."
        )


def frame_size_of(images: Sequence[np.ndarray]) -> tuple[int, int]:
    """The ``(height, width)`` the regions are checked against: the smallest of the
    references' (a camera's references share one size)."""
    return min(image.shape[0] for image in images), min(image.shape[1] for image in images)


def set_regions(root: str | Path, name: str, path: str | Path | None) -> Profile:
    """Give profile ``name`` the regions of the file at ``path`` (None: none at all). The
    threshold is dropped, as scores without the regions' cells are on another footing;
    exported graphs stay valid (the regions are applied to what they return)."""
    regions = [] if path is None else read_regions(path)
    profile = load_profile(root, name)
    if regions:
        first = read_image(profile.reference_paths[0])
        check_regions_fit(regions, frame_size_of([first]))
    config = profile.config.model_copy(update={"ignore_regions": regions, "calibration": None})
    save_profile(profile, config.model_copy(update={"version": version_for(profile, config)}))
    get_logger("profiles").info(
        "profile.regions_set", name=name, regions=[region.name for region in regions]
    )
    return load_profile(root, name)
