"""The training runs of a GPU session, read back from the trainer's own log events.

``padformer-edge train`` logs ``stage_started`` / ``stage_finished`` / ``interrupted`` /
``train_finished`` events as JSON lines; this script turns the logs that
``python3 training/gpu_session.py`` brought back into one table (steps,
seconds, samples/s per stage, and where a run was stopped), so the docs' GPU rows are never
typed by hand. A run continued with ``--resume`` passes both logs, in order.

    python benchmarks/gpu_training_report.py --machine "NVIDIA H200" \
        --run edge-gpu=runs/gpu/edge-gpu.log,runs/gpu/edge-gpu-resume.log --write-docs
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section

HEADERS = ["run", "stage", "steps", "seconds", "samples/s", "first loss", "last loss"]


def events(path: Path) -> list[dict]:
    """The JSON-line events of one log (other output, such as tables, is skipped)."""
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{") and '"event"' in line:
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return found


def run_rows(name: str, logs: list[Path]) -> tuple[list[list], dict]:
    """One row per stage segment; a resumed stage shows as a second segment."""
    rows, summary = [], {"segments": [], "final_step": None, "stopped_at": []}
    for log in logs:
        starts, steps = {}, []  # steps: the train_step events of the stage under way
        for event in events(log):
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True, help="NAME=LOG[,LOG...]")
    parser.add_argument("--machine", required=True, help="the card the runs trained on")
    parser.add_argument(
        "--section", default="gpu-training", help="docs block (one per GPU session)"
    )
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    rows, payload = [], {}
    for spec in args.run:
        name, _, logs = spec.partition("=")
        run, summary = run_rows(name, [Path(p) for p in logs.split(",")])
        rows += run
        payload[name] = summary
    table = markdown_table(HEADERS, rows)
    print(table)
    print_json_line("gpu_training", {"machine": args.machine, "runs": payload})
    if args.write_docs:
        machine = f"{args.machine} (a lent GPU machine)"
        update_docs_section(args.section, table, machine=machine)


if __name__ == "__main__":
    main()
