"""Helpers every benchmark shares: a markdown table, one JSON line, and docs blocks.

Numbers in the documentation are never typed by hand: a benchmark run with
``--write-docs`` replaces the block between ``<!-- BEGIN name -->`` and
``<!-- END name -->`` with the table it just measured, together with the command that
produced it, the machine and the date. Blocks live in ``docs/benchmarks.md`` (one current
table per benchmark) or ``docs/research.md`` (the findings that explain the design); a
block found in neither is added at the end of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS_PAGE = REPO / "docs" / "benchmarks.md"
RESEARCH_PAGE = REPO / "docs" / "research.md"
DOC_PAGES = (BENCHMARKS_PAGE, RESEARCH_PAGE)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats are shown with 4 significant digits."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_summary() -> str:
    """One line describing where the numbers were measured."""
    try:
        import torch

        torch_info = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
        if torch.cuda.is_available():
            torch_info += f", {torch.cuda.get_device_name(0)}"
    except ImportError:
        torch_info = "no torch"
    return f"{platform.machine()}, {os.cpu_count()} CPUs, {torch_info}"


def parse_and_run(parser: argparse.ArgumentParser, run: Callable[[Any], None]) -> None:
    """Parse the command line, give torch ``--threads`` threads and run; a user error (a
    wrong path, a model that cannot be scored) ends in its one line, not a traceback."""
    import torch

    from padformer_edge.errors import UserError

    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    try:
        run(args)
    except UserError as err:
        sys.exit(f"error: {err}")


def add_episode_arguments(
    parser: argparse.ArgumentParser, section: str, max_per_label: int = 15
) -> None:
    """The options of a benchmark that scores renders with the evaluation protocol:
    which objects, shots, images per label, the reference draw's seed, torch threads,
    and the docs block it writes. One place, so that every such benchmark reads its
    sample the same way."""
    parser.add_argument(
        "--class",
        dest="class_",
        metavar="NAME",
        action="append",
        default=[],
        help="Score only this object (repeat); default every object of the render.",
    )
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--max-per-label", type=int, default=max_per_label)
    parser.add_argument("--seed", type=int, default=0, help="The reference draw's seed.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--section", default=section, help="The docs block to write.")
    parser.add_argument("--write-docs", action="store_true")


def print_json_line(name: str, payload: dict[str, Any]) -> None:
    """The one machine-readable line every benchmark ends with."""
    print(json.dumps({"benchmark": name, **payload}, sort_keys=True))


def portable_command(command: str) -> str:
    """``command`` with this machine's folders left out: the repository root and the
    working folder become relative paths and the home folder ``~``, so that a docs block
    names no path that exists only here."""
    for folder, replacement in ((str(REPO), ""), (os.getcwd(), ""), (str(Path.home()), "~/")):
        if folder not in ("", "/"):
            command = command.replace(folder + "/", replacement)
    return command


def docs_block(
    name: str,
    body: str,
    command: str,
    machine: str,
    date: datetime.date | None = None,
    record: str | None = None,
) -> str:
    """The text of the docs block ``name``: markers, where and when it was measured, body.

    The header names the command that made the table, so a reader can run it again; a
    ``record`` (a table whose inputs left the tree) names instead, in words, where its
    figures come from, since a command that reads files the tree no longer holds runs on
    no checkout."""
    when = (date or datetime.datetime.now(datetime.UTC).date()).isoformat()
    source = f"Recorded from {record}" if record else f"Measured with `{command}`"
    return f"<!-- BEGIN {name} -->\n{source} on {machine}, {when}:\n\n{body}\n<!-- END {name} -->"


def update_docs_section(
    name: str,
    body: str,
    command: str | None = None,
    machine: str | None = None,
    pages: Sequence[Path] = DOC_PAGES,
    date: datetime.date | None = None,
    record: str | None = None,
) -> Path:
    """Replace the docs block named ``name`` with ``body`` (and the command that made it,
    the machine and today's date) in whichever of ``pages`` holds it, else add it at the
    end of the first page. Returns the page written.

    ``machine`` names where the figures were measured when that is not this machine (a
    lent GPU whose results are rendered here from a saved file), ``date`` when that was
    not today (the date its log records), and ``record`` replaces the command with where
    the figures come from (``docs_block``)."""
    command = portable_command(command or "python " + shlex.join(sys.argv))
    block = docs_block(name, body, command, machine or machine_summary(), date, record)
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    for page in pages:
        text = page.read_text(encoding="utf-8") if page.exists() else ""
        if pattern.search(text):
            page.write_text(pattern.sub(lambda _: block, text), encoding="utf-8")
            return page
    page = pages[0]
    text = page.read_text(encoding="utf-8") if page.exists() else ""
    page.write_text(text.rstrip("\n") + "\n\n" + block + "\n", encoding="utf-8")
    return page


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(median process CPU seconds, fastest wall seconds) of ``repeats`` calls after a
    warm-up. On a shared machine other jobs stretch wall time but hardly this process's
    CPU time, so tables compare CPU seconds; the fastest wall time is the call they
    disturbed least."""
    fn()
    cpu, wall = [], []
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    return statistics.median(cpu), min(wall)


def count_flops(fn: Callable[[], object]) -> int:
    """Floating-point operations of one call, as torch's FLOP counter sees them
    (matmuls, convolutions, attention; not grid_sample or topk)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def smooth_photo(size: int, seed: int, cells: int = 4) -> np.ndarray:
    """A smooth random 3-channel uint8 picture (a ``cells`` x ``cells`` noise grid, cubic
    upsampled): image content does not change the cost of encoding or detection."""
    import cv2
    import numpy as np

    coarse = np.random.default_rng(seed).uniform(0, 255, size=(cells, cells, 3))
    photo = cv2.resize(coarse.astype(np.float32), (size, size), interpolation=cv2.INTER_CUBIC)
    return photo.clip(0, 255).astype(np.uint8)


def interleaved(calls: dict, repeats: int) -> dict:
    """``timed`` for several calls taken in turns: (median CPU s, fastest wall s) per key.

    Each repeat runs every call once, so a change of load on a shared machine falls on all
    runtimes alike instead of on whichever was being timed when it came."""
    for call in calls.values():
        call()  # warm-up
    cpu: dict = {key: [] for key in calls}
    wall: dict = {key: [] for key in calls}
    for _ in range(repeats):
        for key, call in calls.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            call()
            wall[key].append(time.perf_counter() - start)
            cpu[key].append(time.process_time() - cpu_start)
    return {key: (statistics.median(cpu[key]), min(wall[key])) for key in calls}
