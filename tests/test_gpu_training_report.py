"""``benchmarks/gpu_training_report.py`` reprints the GPU training tables of the docs.

The logs behind those tables left the tree; the tables are records whose header names the
commit that holds them. These tests run the script as the docs describe, reading one
record's logs from that commit, and check that it prints the table the docs hold, so a
record stays something a reader can reproduce rather than figures to take on trust.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.benchmark_process import REPO, run_benchmark
from tests.git_history import is_commit

RESEARCH = REPO / "docs" / "research.md"
SECTION = "gpu-training-3"
RUNS = ("generic-mask60", "generic-mask75")


def record(section: str) -> tuple[str, str]:
    """(the commit a record block names, its table) from the research page."""
    text = RESEARCH.read_text(encoding="utf-8")
    block = text.split(f"<!-- BEGIN {section} -->\n", 1)[1].split(f"<!-- END {section}", 1)[0]
    header, _, table = block.partition("\n\n")
    found = re.search(r"commit (\S+) holds them", header)
    assert found, f"{section} is not a record: {header}"
    return found.group(1), table.strip()


def test_a_record_is_reprinted_from_the_commit_it_names() -> None:
    revision, table = record(SECTION)
    if not is_commit(revision):
        pytest.skip(f"this checkout has no git history holding {revision}")
    runs = [f"{name}=benchmarks/gpu_runs/{name}.log" for name in RUNS]
    done = run_benchmark(
        "gpu_training_report.py",
        "--revision", revision, "--machine", "NVIDIA H200", "--section", SECTION,
        *[arg for run in runs for arg in ("--run", run)],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert "\n".join(lines[:-1]) == table
    summary = json.loads(lines[-1])
    assert summary["revision"] == revision and sorted(summary["runs"]) == sorted(RUNS)


def test_a_log_on_disk_gives_its_stages(tmp_path: Path) -> None:
    log = tmp_path / "tiny.log"
    events = [
        {"event": "stage_started", "stage": "within_view", "start_step": 0,
         "timestamp": "2026-11-26T09:00:00+00:00"},
        {"event": "stage_finished", "stage": "within_view", "steps": 10, "total_steps": 10,
         "seconds": 2.5, "samples_per_s": 40.0, "first_loss": 1.5, "last_loss": 0.5,
         "timestamp": "2026-11-26T09:00:03+00:00"},
        {"event": "train_finished", "global_step": 10, "timestamp": "2026-11-26T09:00:04+00:00"},
    ]  # fmt: skip
    log.write_text("a table the trainer printed\n" + "\n".join(map(json.dumps, events)) + "\n")
    done = run_benchmark("gpu_training_report.py", "--machine", "m", "--run", f"tiny={log}")
    assert done.returncode == 0, done.stderr
    assert "| tiny | within_view | 0-10 of 10 | 2.5 | 40 | 1.5 | 0.5 |" in done.stdout
    assert json.loads(done.stdout.strip().splitlines()[-1])["runs"]["tiny"]["final_step"] == 10


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--run", "a=no/such.log"], "error: no log no/such.log"),
        (["--revision", "HEAD", "--run", "a=no/such.log"], "commit HEAD holds no no/such.log"),
        (["--run", "no-logs"], "is not NAME=LOG"),
    ],
    ids=["missing-file", "missing-at-revision", "no-logs"],
)  # fmt: skip
def test_a_log_that_is_not_there_is_one_line(args: list[str], says: str) -> None:
    done = run_benchmark("gpu_training_report.py", "--machine", "m", *args)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert says in done.stderr
