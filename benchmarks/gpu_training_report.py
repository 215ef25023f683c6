"""The training runs of a GPU session, read back from the trainer's own log events.

``padformer-edge train`` logs ``stage_started`` / ``stage_finished`` / ``interrupted`` /
``train_finished`` events as JSON lines; this script turns the logs that
``python3 training/gpu_session.py`` brought back into one table (steps,
seconds, samples/s per stage, and where a run was stopped), so the docs' GPU rows are never
typed by hand. A run continued with ``--resume`` passes both logs, in order. The block's
date is the day the logs' last event was written, not the day the table was made.

    python benchmarks/gpu_training_report.py --machine "NVIDIA H200" \
        --run edge-gpu=runs/gpu/edge-gpu.log,runs/gpu/edge-gpu-resume.log --write-docs

Past runs' logs leave the tree once their weights are superseded; git history keeps them.
``--revision REV`` reads each log as commit REV of this repository holds it (``git
show``), and the block it writes is then a record: its header names the runs and the
commit instead of a command naming files that no checkout has.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import date, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import REPO, markdown_table, print_json_line, update_docs_section

HEADERS = ["run", "stage", "steps", "seconds", "samples/s", "first loss", "last loss"]


def read_log(path: str, revision: str | None) -> str:
    """The text of one log: the file ``path``, or with ``revision`` the file as that commit
    of this repository holds it. A log that is not there ends the run with one line."""
    if revision is None:
        if not Path(path).is_file():
            sys.exit(f"error: no log {path}: give the file the GPU session sent back")
        return Path(path).read_text(encoding="utf-8", errors="replace")
    shown = subprocess.run(
        ["git", "show", f"{revision}:{path}"], cwd=REPO, capture_output=True, timeout=60
    )
    if shown.returncode != 0:
        sys.exit(
            f"error: commit {revision} holds no {path}: give a path relative to the "
            "repository root that this commit has (git show --stat names them)"
        )
    return shown.stdout.decode("utf-8", errors="replace")


def events(text: str) -> list[dict]:
    """The JSON-line events of one log (other output, such as tables, is skipped)."""
    found = []
    for line in text.splitlines():
        if line.startswith("{") and '"event"' in line:
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return found


def run_rows(name: str, logs: list[list[dict]]) -> tuple[list[list], dict]:
    """One row per stage segment of the logs' events; a resumed stage shows as a second
    segment."""
    rows, summary = [], {"segments": [], "final_step": None, "stopped_at": []}
    for log in logs:
        starts, steps = {}, []  # steps: the train_step events of the stage under way
        for event in log:
            kind = event["event"]
            if kind == "stage_started":
                starts[event["stage"]] = event["start_step"]
                steps, began = [], datetime.fromisoformat(event["timestamp"])
            elif kind == "train_step":
                steps.append(event)
            elif kind == "stage_finished" and event["steps"]:
                stage, start = event["stage"], starts.get(event["stage"], 0)
                end = start + event["steps"]
                rows.append(
                    [
                        name,
                        stage,
                        f"{start}-{end} of {event['total_steps']}",
                        event["seconds"],
                        event["samples_per_s"],
                        event["first_loss"],
                        event["last_loss"],
                    ]
                )
                summary["segments"].append({k: event[k] for k in event if k != "timestamp"})
                steps = []  # a stop after this (while measuring scales) cut no stage short
            elif kind == "interrupted":
                if steps:  # the segment before the stop, from its last logged step
                    stage, start = steps[-1]["stage"], starts.get(steps[-1]["stage"], 0)
                    seconds = (datetime.fromisoformat(event["timestamp"]) - began).total_seconds()
                    offset = steps[-1]["global_step"] - steps[-1]["step"]  # earlier stages
                    stopped = event["global_step"] - offset
                    rows.append(
                        [
                            name,
                            f"{stage}, stopped at the deadline",
                            f"{start}-{stopped} of {steps[-1]['total']}",
                            round(seconds, 1),
                            steps[-1]["samples_per_s"],
                            steps[0]["loss"],
                            steps[-1]["loss"],
                        ]
                    )
                summary["stopped_at"].append(event["global_step"])
            elif kind == "train_finished":
                summary["final_step"] = event["global_step"]
    return rows, summary


def last_day(logs: list[list[dict]]) -> date | None:
    """The day of the latest event of any log: when the table's figures were measured."""
    stamps = [e["timestamp"] for log in logs for e in log if "timestamp" in e]
    return max(datetime.fromisoformat(s) for s in stamps).date() if stamps else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True, help="NAME=LOG[,LOG...]")
    parser.add_argument("--machine", required=True, help="the card the runs trained on")
    parser.add_argument(
        "--section", default="gpu-training", help="docs block (one per GPU session)"
    )
    parser.add_argument(
        "--revision",
        metavar="REV",
        help="Read the logs as this commit holds them (paths from the repository root); "
        "the docs block is then a record naming the runs and the commit.",
    )
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    rows, payload, every_log = [], {}, []
    for spec in args.run:
        name, _, paths = spec.partition("=")
        if not name or not paths:
            sys.exit(f"error: --run {spec!r} is not NAME=LOG[,LOG...]: name the run, then its logs")
        logs = [events(read_log(p, args.revision)) for p in paths.split(",")]
        run, summary = run_rows(name, logs)
        rows += run
        payload[name] = summary
        every_log += logs
    table = markdown_table(HEADERS, rows)
    print(table)
    print_json_line(
        "gpu_training", {"machine": args.machine, "revision": args.revision, "runs": payload}
    )
    if args.write_docs:
        machine = f"{args.machine} (a lent GPU machine)"
        record = None
        if args.revision:
            names = ", ".join(spec.partition("=")[0] for spec in args.run)
            record = (
                f"the trainer's logs of {names} as commit {args.revision} holds them (they "
                f"left the tree; `benchmarks/gpu_training_report.py --revision` reads them)"
            )
        update_docs_section(
            args.section, table, machine=machine, date=last_day(every_log), record=record
        )


if __name__ == "__main__":
    main()
