"""What `padformer-edge demo` reports, measured as a user sees it: the command run as a fresh
process, its wall time from start to exit, and the figures it prints (defective parts
flagged, false alarms on good parts), checked against the result database it leaves.

Prints a markdown table and one JSON line; with --write-docs the table replaces the
`demo-figures` docs block (`demo-figures-train` with --train). The demo's seed is
fixed, so the figures are those of this model on this machine.

With ``--shots N`` (repeatable) the demo runs once per value, its profile keeping N
reference photos. A second row per run asks whether the demo's task is within reach of
the bar the quality table sets: the validated PatchCore (benchmarks/validation.json)
scores the same camera images with the same references the profile chose, and its
threshold comes from the same calibration views by the product's own rule
(``false_alarm_threshold`` at the profile's target rate). If it flags no more defects
than PADFormer, the demo's misses are the task's difficulty (views far from every
reference), not only the model's.

    python benchmarks/demo_figures.py [--train] [--quick] [--shots N ...] [--no-baseline]
        [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge_training.evaluation.demo_figures import (
    baseline_figures,
    database_figures,
    picture,
)

REPO = Path(__file__).resolve().parent.parent
VALIDATION = REPO / "benchmarks" / "validation.json"
FIGURES = re.compile(
    r"defective parts flagged: (\d+) of (\d+); good parts flagged \(false alarms\): (\d+) of (\d+)"
)
PART = re.compile(r"rendering (\S+) (?:at (\d+ px)|in (\d+x\d+) camera frames)")


def run_demo(out: Path, options: list[str]) -> tuple[str, float, float]:
    """(stdout, wall seconds, CPU seconds) of one demo run with ``options`` in a fresh
    process, as from the install. The CPU time is user + system of the demo and the daemon
    it starts (both waited for): on a shared machine the wall time also counts the waits
    for a core, the CPU time does not."""
    command = [sys.executable, "-m", "padformer_edge", "--log-format", "json", "demo"]
    command += ["--out", str(out), *options]
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"the demo exited with status {result.returncode}: {tail}")
    return result.stdout, seconds, cpu


def measure(options: list[str], baseline: bool, picture_path: Path | None = None) -> dict:
    """One demo run with ``options``: its printed figures (checked against its database),
    its part, size and wall time, and with ``baseline`` the validated PatchCore's figures
    on the same images."""
    with tempfile.TemporaryDirectory(prefix="demo-figures-") as tmp:
        out = Path(tmp) / "demo"
        stdout, seconds, cpu = run_demo(out, options)
        printed = FIGURES.search(stdout)
        part = PART.search(stdout)
        if printed is None or part is None:
            raise SystemExit("the demo's output has no figures line; has its wording changed?")
        figures = tuple(int(v) for v in printed.groups())
        if figures != database_figures(out / "results.sqlite3"):
            raise SystemExit(f"the printed figures {figures} differ from the result database")
        config = json.loads(VALIDATION.read_text(encoding="utf-8"))["patchcore"]
        shown = picture(out, picture_path) if picture_path is not None else None
        return {
            "command": " ".join(["padformer-edge demo", *options]),
            "part": part.group(1),
            "size": part.group(2) or f"{part.group(3)} frames",
            "figures": figures,
            "seconds": seconds,
            "cpu_seconds": cpu,
            "patchcore": (config, baseline_figures(out, config)) if baseline else None,
            "picture": shown,
        }


def table_rows(run: dict) -> list[list[str]]:
    flagged, defects, false_alarms, good = run["figures"]
    rows = [[
        f"`{run['command']}`", run["part"], run["size"], f"{flagged} of {defects}",
        f"{false_alarms} of {good}", f"{run['seconds']:.0f} s", f"{run['cpu_seconds']:.0f} s",
    ]]  # fmt: skip
    if run["patchcore"] is not None:
        config, (b_flagged, b_defects, b_false, b_good) = run["patchcore"]
        rows.append([
            f"PatchCore {config} (validated), same references, calibration and images",
            run["part"], run["size"], f"{b_flagged} of {b_defects}",
            f"{b_false} of {b_good}", "", "",
        ])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", action="store_true", help="measure `demo --train`")
    parser.add_argument("--quick", action="store_true", help="measure `demo --quick`")
    parser.add_argument(
        "--shots",
        type=int,
        action="append",
        default=None,
        help="measure `demo --shots N` (repeat for one run per value; default: the demo's own)",
    )
    parser.add_argument("--metric", help="measure `demo --metric NAME` (default: the demo's own)")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the PatchCore rows on the same images"
    )
    parser.add_argument("--section", help="docs block to write (default demo-figures[-train])")
    parser.add_argument(
        "--picture",
        type=Path,
        help="write the first run's flagged frame, its part's box and heatmap to this JPEG",
    )
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    common = ["--train"] * args.train + ["--quick"] * args.quick
    common += ["--metric", args.metric] if args.metric else []
    shots = [[]] if args.shots is None else [["--shots", str(n)] for n in args.shots]
    variants = [[*common, *extra] for extra in shots]
    load_before = os.getloadavg()[0]
    baseline = not (args.no_baseline or args.quick)
    runs = [
        measure(options, baseline, args.picture if index == 0 else None)
        for index, options in enumerate(variants)
    ]
    headers = [
        "command", "part", "size", "defects flagged", "false alarms", "wall time", "CPU time",
    ]  # fmt: skip
    table = markdown_table(headers, [row for run in runs for row in table_rows(run)])
    print(table)
    for run in runs:
        flagged, defects, false_alarms, good = run["figures"]
        print_json_line(
            "demo_figures",
            {
                "command": run["command"],
                "part": run["part"],
                "defects_flagged": flagged,
                "defects": defects,
                "false_alarms": false_alarms,
                "good": good,
                "wall_seconds": round(run["seconds"], 1),
                "cpu_seconds": round(run["cpu_seconds"], 1),
                "patchcore": None
                if run["patchcore"] is None
                else {
                    "config": run["patchcore"][0],
                    "defects_flagged": run["patchcore"][1][0],
                    "false_alarms": run["patchcore"][1][2],
                },
            },
        )
    if args.write_docs:
        load = os.getloadavg()[0]
        note = (
            f"\n\n1-minute load average {load_before:.2f} at the start and {load:.2f} at the "
            f"end on {os.cpu_count()} cores. CPU "
            "time is user + system of the demo and its daemon; wall time also counts the "
            "waits for a core on a shared machine."
        )
        section = args.section or "demo-figures" + "-train" * args.train
        update_docs_section(section, table + note)


if __name__ == "__main__":
    main()
