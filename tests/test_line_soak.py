"""The line soak (``benchmarks/line_soak.py``) refuses to soak where torch is installed:
its figures are the torch-free install's, and a venv that can import torch would pass
for one. A finished run is checked again without a daemon, in any venv; that check is
what decides the issue's targets, so it is tested here on a history whose every count
and slope is known. The soak itself runs for hours on a prepared site;
docs/benchmarks.md#soak holds its table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from tests.benchmark_process import REPO, run_benchmark

IMAGES = 12
WARMUP = 2
THRESHOLD = 0.5
KIB_PER_IMAGE = 3.0  # the after-trim RSS the planted log climbs by


def test_the_line_soak_refuses_a_venv_where_torch_imports(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/line_soak.py", "run", "--site", str(tmp_path),
         "--metric", "distance", "--images", "10"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "torch can be imported here; run the soak in a `.[line]` venv" in done.stderr


def _finished_run(site: Path) -> dict[str, list[int]]:
    """A site whose fused run finished: 12 camera files, one of them never inspected (lost)
    and one inspected twice; every third row anomalous, one of those alerted twice and one
    never, plus a drift alert; trims whose RSS climbs by exactly ``KIB_PER_IMAGE``."""
    (site / "site.json").write_text(json.dumps({"views": ["views/a.png", "views/b.png"]}))
    work = site / "runs" / "fused"
    (work / "camera").mkdir(parents=True)
    (work / "state").mkdir()
    names = [f"{i:06d}-good-a.png" for i in range(IMAGES)]
    for name in names:
        (work / "camera" / name).write_bytes(b"image")
    engine = open_engine(str(work / "state" / "results.sqlite3"))
    upgrade(engine)
    inspected = [*names[:-1], names[3]]  # the last file lost, the fourth one twice
    for i, name in enumerate(inspected):
        row = enqueue(engine, camera="soak", product="demo-part-fused",
                      source_path=str(work / "camera" / name), sha256=f"{i:064x}",
                      size_bytes=5)  # fmt: skip
        (claimed,) = claim_batch(engine, 1)
        assert claimed.id == row.id
        score = 0.9 if i % 3 == 0 else 0.1
        complete(engine, row.id, DetectionOutcome(
            score=score, threshold=THRESHOLD, heatmap_path=None, model_sha256="0" * 64,
            detect_ms=10.0 + i, alerts=[]))  # fmt: skip
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, is_anomaly, finished_at FROM inspections "
                                 "ORDER BY id")).all()  # fmt: skip
    engine.dispose()
    ids = [r[0] for r in rows]
    anomalous = [r[0] for r in rows if r[1]]
    alerted = [anomalous[0], *anomalous]  # the first twice, the last never
    alerted.remove(anomalous[-1])
    lines = [json.dumps({"kind": "anomaly", "inspection_id": i}) for i in alerted]
    lines.append(json.dumps({"kind": "drift", "test": "binomial", "inspection_id": ids[-1]}))
    (work / "alerts.jsonl").write_text("\n".join(lines) + "\n")
    # a trim as each of rows 1, 5, 7, 9 and 11 finished: the first inside the warm-up
    trims = []
    for finished in (WARMUP - 1, 5, 7, 9, 11):
        moment = str(rows[finished - 1][2]).replace(" ", "T") + "Z"
        trims.append(json.dumps({
            "event": "worker.memory_trimmed", "level": "info", "timestamp": moment,
            "rss_after_mib": 200 + KIB_PER_IMAGE * finished / 1024,
            "heap_in_use_mib": 100.0 + finished, "rss_before_mib": 400.0}))  # fmt: skip
    (work / "daemon-1.log").write_text("\n".join(["not json", *trims]) + "\n")
    samples = [[n, 300_000 + (n % 2) * 100_000] for n in range(IMAGES)]  # a sawtooth
    progress = {"metric": "fused", "images": IMAGES, "result": {"finished": True},
                "segments": [{"started_at": "2026-11-28T00:00:00", "start_finished": 0,
                              "samples": samples, "cpu_s": 24.0, "seconds": 60.0}]}  # fmt: skip
    (work / "progress.json").write_text(json.dumps(progress))
    return {"anomalous": anomalous}


def test_a_finished_run_is_checked_again_without_a_daemon(tmp_path: Path) -> None:
    planted = _finished_run(tmp_path)
    args = ("run", "--site", str(tmp_path), "--metric", "fused", "--images", str(IMAGES),
            "--warmup-images", str(WARMUP))  # fmt: skip
    done = run_benchmark("line_soak.py", *args)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == "targets missed: lost, duplicated, alerts_missing, " \
        "alerts_duplicated, RSS slope (95% bound)"  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["lost"], result["duplicated"], result["errors"]) == (1, 1, 0)
    assert result["anomalies"] == len(planted["anomalous"])
    assert (result["alerts_missing"], result["alerts_duplicated"]) == (1, 1)
    assert (result["drift_alerts"], result["drift_tests"]) == (1, ["binomial"])
    # the trims after the warm-up (4 of 5) lie on one line: its slope, and no spread; the
    # tolerance is the rounding of the three decimals the record keeps
    assert result["trim_slope_trims"] == 4
    assert abs(result["trim_slope_kib_per_image"] - KIB_PER_IMAGE) <= 0.0005
    assert result["trim_slope_ci95_kib_per_image"] <= 0.0005
    assert (result["heap_first_trim_mib"], result["heap_last_trim_mib"]) == (101.0, 111.0)
    assert result["cpu_s_per_image"] == round(24.0 / IMAGES, 3)
    # the docs' table names the venv that writes it: never this one, which has torch
    refused = run_benchmark("line_soak.py", *args, "--write-docs")
    assert refused.returncode == 1
    assert "torch can be imported here" in refused.stderr
