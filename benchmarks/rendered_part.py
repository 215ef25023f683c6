"""Photos of the demo's part for the GPU benchmarks: rendered, not random, so the shipped
model meets what a line shows it.

The part is the demo's (``padformer-edge demo``'s mesh, at the generic model's input
size); references are training views, queries the held-out views, good and defective,
interleaved so that any prefix of them holds both. A folder that already holds a finished
render (its ``dataset.json``) is read as it is, without the renderer: a lent GPU machine
lacks the renderer's packages, so the views are rendered on the workstation and sent
along:

    python benchmarks/rendered_part.py .gpu/render --references 12 --views 64
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RENDER_SEED = 4040  # views unlike the demo's own (its seed is 0), fixed per run
FINISHED = "dataset.json"  # what the renderer writes last, into a finished render


@dataclass(frozen=True)
class RenderedPart:
    """Rendered views as RGB arrays: candidate references and queries to score."""

    references: list[np.ndarray]
    queries: list[np.ndarray]
    size: int


def render(out: Path, references: int, queries: int, size: int | None = None) -> Path:
    """Render ``references`` training views and ``queries`` held-out views (seven in ten
    good, the rest spread over the defect kinds) of the demo's part into ``out``."""
    from padformer_edge.demo.plan import GENERIC
    from padformer_edge_training.synth import DEFECT_KINDS, ViewCounts, render_dataset

    per_defect = max(1, round(queries * 0.3 / len(DEFECT_KINDS)))
    good = max(1, queries - per_defect * len(DEFECT_KINDS))
    counts = ViewCounts(train=references, test_good=good, test_per_defect=per_defect)
    return render_dataset([GENERIC.mesh], out, counts, size=size or GENERIC.size, seed=RENDER_SEED)


def render_part(out: Path, references: int, queries: int, size: int | None = None) -> RenderedPart:
    """The views in ``out``, rendered first unless a finished render is there."""
    from padformer_edge.detect.images import read_image

    if not (out / FINISHED).is_file():
        render(out, references, queries, size)
    refs = sorted(out.glob("*/train/good/*.png"), key=lambda p: int(p.stem))[:references]
    tests = sorted(out.glob("*/test/*/*.png"), key=lambda p: (int(p.stem), p.parent.name))
    if len(refs) < references or not tests:
        raise SystemExit(
            f"{out} holds {len(refs)} reference views and {len(tests)} others, fewer than "
            f"asked ({references} references); render it again into an empty folder."
        )
    images = [read_image(p) for p in tests[:queries]]
    return RenderedPart([read_image(p) for p in refs], images, images[0].shape[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="an empty folder, or one this script filled")
    parser.add_argument("--references", type=int, default=12)
    parser.add_argument("--views", type=int, default=64)
    parser.add_argument("--size", type=int, help="image side (the generic model's input size)")
    args = parser.parse_args()
    part = render_part(args.out, args.references, args.views, args.size)
    print(f"{args.out}: {len(part.references)} references, {len(part.queries)} views")


if __name__ == "__main__":
    main()
