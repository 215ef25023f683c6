"""Photos of the demo's part for the GPU benchmarks: rendered, not random, so the shipped
model meets what a line shows it.

The part is the demo's (``padformer-edge demo``'s mesh, at the generic model's input
size); references are training views, queries the held-out views, good and defective,
interleaved so that any prefix of them holds both. The renderer caches a finished
dataset, so a second call on the same folder costs a directory listing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

RENDER_SEED = 4040  # views unlike the demo's own (its seed is 0), fixed per run


@dataclass(frozen=True)
class RenderedPart:
    """Rendered views as RGB arrays: candidate references and queries to score."""

    references: list[np.ndarray]
    queries: list[np.ndarray]
    size: int


def render_part(out: Path, references: int, queries: int, size: int | None = None) -> RenderedPart:
    """``references`` training views and ``queries`` held-out views (seven in ten good, the
    rest spread over the defect kinds) of the demo's part, rendered into ``out``."""
    from padformer_edge.demo.plan import GENERIC
    from padformer_edge.detect.images import read_image
    from padformer_edge_training.synth import DEFECT_KINDS, ViewCounts, render_dataset

    side = size or GENERIC.size
    per_defect = max(1, round(queries * 0.3 / len(DEFECT_KINDS)))
    good = max(1, queries - per_defect * len(DEFECT_KINDS))
    counts = ViewCounts(train=references, test_good=good, test_per_defect=per_defect)
    data = render_dataset([GENERIC.mesh], out, counts, size=side, seed=RENDER_SEED)
    refs = sorted(data.glob("*/train/good/*.png"), key=lambda p: int(p.stem))[:references]
    tests = sorted(data.glob("*/test/*/*.png"), key=lambda p: (int(p.stem), p.parent.name))
    if len(refs) < references or len(tests) < min(queries, good + per_defect):
        raise SystemExit(f"the renderer left too few views in {out}; remove the folder.")
    return RenderedPart(
        [read_image(p) for p in refs], [read_image(p) for p in tests[:queries]], side
    )
