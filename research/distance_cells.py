"""Stage A of the small-defect work: the distance alone on richer cells, against PatchCore.

Each ``--cells`` configuration (``research/cell_distance.py``: input size,
stages, neighbourhood, projection, coreset, backbone) scores a render with the comparator's
distance (cosine to the nearest reference cell over quarter-turned references) and no
learned correction, beside ``--patchcore`` configurations and, with ``--shipped``, the
earlier 192-px comparator's distance alone (its own cells) and its learned comparison (the
product's score before the 320-px default). Each ``--comparator-cells SIZE[ nN][ s2+3]`` is
the distance alone on the cells a comparator of that input size and neighbourhood reads (its
own normalisation: what a correction would be added to), and each ``--model PATH`` a trained
comparator's learned comparison; each ``--readout`` (stage C:
``research/comparator_readouts.py``) reads those rows another way. Every row sees the
same references and test images. Rows are cached in ``--cache`` by render, kinds, row,
references, seed and images per label, so that PatchCore's hours of CPU are spent once
per render. Margins are paired bootstrap intervals
over the test images, against the first ``--patchcore`` row and against the 192-px distance
(or the rows ``--bar`` names); with several ``--data`` renders (the test seeds) every figure
is the mean over them and the intervals redraw the renders too.

Prints a table and one JSON line; ``--write-docs`` fills the docs block ``--section``.

    python research/distance_cells.py --data data/val224-s1-held-out --shots 4 \\
        --cells "2@448 n3" --cells "2+3@448 n3" --patchcore "2@448 turned" --shipped
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    add_episode_arguments,
    markdown_table,
    parse_and_run,
    print_json_line,
    update_docs_section,
)
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.protocol import (
    METRICS,
    EvalOptions,
    ImageResult,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.uncertainty import (
    image_auroc_margin,
    margin_over_renders,
)
from research.cell_distance import CellDistanceScorer, parse_cells
from research.comparator_readouts import ComparatorReadout, ReadoutScorer, parse_readout

SHIPPED_DISTANCE = "192-px comparator: distance alone"
SHIPPED_COMPARISON = "192-px comparator: learned comparison"


def row_scorers(args: argparse.Namespace) -> list[tuple[str, object]]:
    """(row label, a scorer built when the row is not cached) in table order."""
    rows: list[tuple[str, object]] = []
    if args.shipped:
        rows += [(SHIPPED_DISTANCE, "distance"), (SHIPPED_COMPARISON, "comparison")]
    rows += [(f"PatchCore {text}", ("patchcore", text)) for text in args.patchcore]
    rows += [(f"distance {parse_cells(text).text}", ("cells", text)) for text in args.cells]
    for word in args.readout or ["s2"]:
        readout = parse_readout(word)
        tag = "" if readout == ComparatorReadout() else f" [{readout.text}]"
        rows += [
            (f"comparator cells {text}: distance alone{tag}", ("comparator-cells", text, readout))
            for text in args.comparator_cells
        ]
        rows += [
            (f"comparator {path.parent.name}/{path.stem}{tag}", ("model", path, readout))
            for path in args.model
        ]
    return rows


def comparator_cells(text: str) -> tuple[int, int, tuple[int, ...]]:
    """'448 n3 s2+3' -> (448, 3, (2, 3)): a comparator's input size, neighbourhood and the
    CNN blocks its cells stack (default block 2 alone)."""
    size, *words = text.split()
    side, stages = 1, (2,)
    try:
        for word in words:
            if word.startswith("n"):
                side = int(word[1:])
            elif word.startswith("s"):
                stages = tuple(int(s) for s in word[1:].split("+"))
            else:
                raise ValueError(word)
        return int(size), side, stages
    except ValueError:
        raise UserError(
            f"comparator cells '{text}' are not SIZE[ nN][ sSTAGES], e.g. 448 n3 s2+3."
        ) from None


def build(kind: object) -> object:
    """The scorer a row names, built only when the row must be computed."""
    if kind in ("distance", "comparison"):
        from padformer_edge.methods.compare.checkpoint import load_comparator
        from padformer_edge.weights import earliest_comparator_sha256, locate_comparator
        from padformer_edge_training.evaluation.comparator_scorer import ComparatorScorer

        model, _ = load_comparator(locate_comparator(earliest_comparator_sha256()))
        return ComparatorScorer(model, str(kind), correction=kind == "comparison")
    family, text, *rest = kind  # type: ignore[misc]
    if family in ("comparator-cells", "model"):
        readout = rest[0]
        from padformer_edge.methods.compare.checkpoint import load_comparator
        from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel

        if family == "model":
            model, _ = load_comparator(text)
            return ReadoutScorer(model, str(text), readout=readout)
        from padformer_edge.model.config import BACKBONES, DEFAULT_BACKBONE

        size, side, stages = comparator_cells(text)
        channels = BACKBONES[DEFAULT_BACKBONE].stage_channels(stages)
        config = ComparatorConfig(
            channels=channels, input_size=size, neighbourhood=side, stages=stages, aligned_k=0,
            use_stn=False,
        )  # fmt: skip
        fresh = ComparisonModel(config)
        fresh.features.load_imagenet()
        return ReadoutScorer(fresh, text, correction=False, readout=readout)
    if family == "patchcore":
        from padformer_edge_training.evaluation.patchcore import PatchCoreScorer, parse_config

        return PatchCoreScorer(*parse_config(text))
    return CellDistanceScorer(parse_cells(text))


def cache_key(args: argparse.Namespace, data: Path, label: str) -> str:
    kinds = ",".join(sorted(args.label)) or "all"
    classes = ",".join(sorted(args.class_)) or "all"
    return (
        f"{data.resolve().name}|{classes}|{kinds}|{label}|refs={args.shots}|"
        f"seed={args.seed}|per-label={args.max_per_label}"
    )


class Render(NamedTuple):
    """One render's test images and every row's cached results on them."""

    name: str
    records: dict[str, Any]  # image path -> its ImageRecord
    rows: dict[str, dict]

    def results(self, label: str) -> list[ImageResult]:
        return [
            ImageResult(self.records[path], score, None, None, {})  # type: ignore[arg-type]
            for path, score in self.rows[label]["scores"].items()
        ]


def score_render(args: argparse.Namespace, data: Path) -> Render:
    """Every row on one render: from the cache, or computed once and cached."""
    index = index_dataset(data, categories=args.class_ or None)
    if args.label:
        keep = {*args.label, "good"}
        index.records = [r for r in index.records if r.split == "train" or r.label in keep]
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    episodes = plan_episodes(index, options)
    records = {str(r.path): r for episode in episodes for r in episode.tests}
    cache = json.loads(args.cache.read_text()) if args.cache.is_file() else {}
    rows: dict[str, dict] = {}
    for label, kind in row_scorers(args):
        key = cache_key(args, data, label)
        if isinstance(kind, tuple) and kind[0] == "model":  # retrained weights: another row
            key += f"|sha256={file_sha256(kind[1])}"
        if key not in cache:
            scored, cpu = run_scorer(build(kind), episodes, options)  # type: ignore[arg-type]
            mean = summarise(scored, per_defect=False)["mean"]
            cache = json.loads(args.cache.read_text()) if args.cache.is_file() else {}
            cache[key] = {
                **{m: mean[m] for m in METRICS},
                "cpu_s_per_image": round(cpu, 4),
                "scores": {str(r.record.path): float(r.score) for r in scored},
            }
            args.cache.parent.mkdir(parents=True, exist_ok=True)
            args.cache.write_text(json.dumps(cache, indent=0, sort_keys=True))
        rows[label] = cache[key]
        print(
            f"{data.name} {label}: { {m: rows[label][m] for m in METRICS} }",
            file=sys.stderr,
            flush=True,
        )
    return Render(data.name, records, rows)


def run(args: argparse.Namespace) -> None:
    renders = [score_render(args, data) for data in args.data]
    labels = list(renders[0].rows)
    bars = [label for label in labels if label.startswith("PatchCore")][:1]
    if args.shipped:
        bars.append(SHIPPED_DISTANCE)
    if args.bar:
        named = {bar: [label for label in labels if label.startswith(bar)] for bar in args.bar}
        for bar, found in named.items():
            if not found:
                raise UserError(f"--bar '{bar}' starts no row's label; rows: {', '.join(labels)}.")
        bars = [found[0] for found in named.values()]

    def margin(label: str, bar: str) -> str:
        if label == bar:
            return "-"
        if len(renders) == 1:
            return image_auroc_margin(renders[0].results(label), renders[0].results(bar)).brief()
        pairs = [(render.results(label), render.results(bar)) for render in renders]
        return margin_over_renders(pairs).brief()

    table_rows, summary = [], {}
    for label in labels:
        mean = {
            m: float(np.mean([r.rows[label][m] for r in renders]))
            for m in (*METRICS, "cpu_s_per_image")
        }
        table_rows.append(
            [
                label,
                *(fmt(mean[m]) for m in METRICS),
                f"{mean['cpu_s_per_image']:.3f}",
                *(margin(label, bar) for bar in bars),
            ]
        )
        if len(renders) > 1:
            table_rows[-1].insert(2, " / ".join(fmt(r.rows[label]["image_auroc"]) for r in renders))
        summary[label] = mean
    headers = ["score", "image AUROC"]
    if len(renders) > 1:
        headers.append("per render")
    headers += ["pixel AUROC", "AUPRO", "CPU s / image"]
    headers += [f"margin over {bar}" for bar in bars]
    table = markdown_table(headers, table_rows)
    records = [record for render in renders for record in render.records.values()]
    kinds = ", ".join(sorted({r.label for r in records if not r.is_good}))
    classes = ", ".join(sorted({r.category for r in records}))
    names = ", ".join(render.name for render in renders)
    if len(renders) == 1:
        sample = f"{len(records)} test images of {classes} in {names} ({kinds})"
        spread = "95% paired bootstrap intervals over the test images"
    else:
        sample = (
            f"the mean over {len(renders)} renders ({names}; {len(records)} test images of "
            f"{classes} in all: {kinds})"
        )
        spread = (
            "95% intervals of a two-level bootstrap (renders redrawn, then each render's "
            "test images)"
        )
    body = (
        f"{sample}, {args.shots} references drawn with seed {args.seed}; margins are "
        f"image-AUROC points with {spread}.\n\n" + table
    )
    print(body)
    print_json_line(
        "distance_cells",
        {"data": [r.name for r in renders], "refs": args.shots, "rows": summary},
    )
    if args.write_docs:
        update_docs_section(args.section, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        action="append",
        required=True,
        help="A render (synth's layout); repeat for the mean over several (test seeds).",
    )
    parser.add_argument("--label", action="append", default=[], help="Defect kinds kept.")
    parser.add_argument(
        "--cells",
        action="append",
        default=[],
        help="A cell configuration, STAGES@SIZE[ nN][ pD][ cF][ lite2] (repeat).",
    )
    parser.add_argument(
        "--patchcore", action="append", default=[], help="A PatchCore configuration (repeat)."
    )
    parser.add_argument(
        "--comparator-cells",
        action="append",
        default=[],
        help="SIZE[ nN][ s2+3]: the distance alone on a comparator's own cells (repeat).",
    )
    parser.add_argument(
        "--model", type=Path, action="append", default=[], help="A trained comparator (repeat)."
    )
    parser.add_argument(
        "--readout",
        action="append",
        default=[],
        help="How --model and --comparator-cells rows read their cell maps: sS, topK, "
        "shift4-mean|max|filter (repeat; default s2, the product's).",
    )
    parser.add_argument(
        "--shipped", action="store_true", help="Add the earlier 192-px comparator's two rows."
    )
    parser.add_argument(
        "--bar",
        action="append",
        default=[],
        help="The rows margins are measured against, each named by the start of its label "
        "(repeat; default the first PatchCore row and, with --shipped, the 192-px distance).",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("runs/distance-cells.json"),
        help="Rows computed before, by render and row: PatchCore's are computed once.",
    )
    add_episode_arguments(parser, "distance-cells-transfer-4", max_per_label=15)
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
