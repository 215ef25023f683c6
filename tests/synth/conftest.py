"""Fixtures for the synthetic benchmark tests: one tiny dataset rendered once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from padformer_edge_training.synth import ViewCounts, render_dataset

TINY = ViewCounts(train=4, test_per_defect=3, test_good=2)
TINY_SIZE = 64
TINY_MESHES = ("builtin:duck", "builtin:r2d2")


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two classes (a textured OBJ and a URDF) at 64 px: a few seconds to render."""
    out = tmp_path_factory.mktemp("synth") / "tiny"
    return render_dataset(TINY_MESHES, out, TINY, size=TINY_SIZE, seed=0)
