"""``padformer-edge demo --quick`` end to end, as a user runs it: a real child process
that itself renders, trains, calibrates and runs the daemon as a grandchild."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from padformer_edge.daemon.alerts import list_alerts
from padformer_edge.store import Filters, list_inspections, open_engine


def test_quick_demo_runs_the_whole_line(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "padformer_edge", "--log-format", "json", "demo", "--quick",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "COLUMNS": "200", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "How briefly the model was trained:" in result.stdout
    assert re.search(r"\d+ optimizer steps \(\d+ samples", result.stdout)

    engine = open_engine(str(out / "results.sqlite3"), read_only=True)
    rows = list_inspections(engine, Filters(), limit=100)
    camera_files = sorted(p.name for p in (out / "camera").iterdir())
    assert sorted(Path(r.source_path).name for r in rows) == camera_files
    assert len(camera_files) == 4 and all(r.status.value == "done" for r in rows)
    for row in rows:
        heatmap = Path(row.heatmap_path)
        assert heatmap.is_relative_to(out / "heatmaps") and heatmap.is_file()
        assert heatmap.stem == str(row.id)

    anomalous = {r.id for r in rows if r.is_anomaly}
    defects = [r for r in rows if "-good" not in r.source_path]
    flagged = sum(bool(r.is_anomaly) for r in defects)
    assert f"defective parts flagged: {flagged} of {len(defects)}" in result.stdout

    # Every anomaly raised one alert per sink, each delivered; nothing else raised any.
    alerts = list_alerts(engine, limit=100)
    assert sorted((a["inspection_id"], a["sink"]) for a in alerts) == sorted(
        (i, sink) for i in anomalous for sink in ("log", "alerts-file")
    )
    assert all(a["state"] == "sent" for a in alerts)
    lines = (out / "alerts.jsonl").read_text().splitlines() if anomalous else []
    delivered = [json.loads(line) for line in lines]
    assert sorted(b["alert_id"] for b in delivered) == sorted(
        a["id"] for a in alerts if a["sink"] == "alerts-file"
    )
    engine.dispose()
