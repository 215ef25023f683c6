"""``benchmarks/growth.py`` read back from a saved run: the table, margins and targets
the docs blocks are made of, in the rows' fixed order."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_process import REPO, run_benchmark

SAVED = REPO / "benchmarks" / "growth_runs" / "val-12.json"


def test_a_saved_run_prints_its_own_figures_every_row_in_order_and_its_targets(tmp_path: Path):
    saved = json.loads(SAVED.read_text(encoding="utf-8"))
    saved["rows"]["profile 4"]["image_auroc"] = 0.5  # the table shows the file's figures
    changed = tmp_path / "run.json"
    changed.write_text(json.dumps(saved), encoding="utf-8")
    result = run_benchmark("growth.py", "--from-json", str(changed))
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| profile from")]
    assert len(rows) == len(saved["rows"])
    # bases ascending, each base's own profile before its grown versions, growth ascending
    assert rows[0].startswith("| profile from 4 references | 4 | 50.0 |")
    assert rows[-1].startswith("| profile from 12 references, +100 approved |")
    for target, met in saved["targets"].items():
        assert f"| {target} | {'met' if met else 'missed'} |" in result.stdout
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert last["benchmark"] == "growth"
    assert set(last["margins"]) == set(saved["margins"])
