"""``profile calibrate --from-reviews`` on the torch-free line install: the preview and the
confirmed change, from reviews stored in a real SQLite file migrated to head, run as a
subprocess that cannot import torch (``tests.line.runner``)."""

from __future__ import annotations

import getpass
import hashlib
from pathlib import Path

import yaml

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from padformer_edge.store.reviews import save_review
from tests.line.make_fixture import PROFILE
from tests.line.runner import run_cli


def _seed(database: Path, model_sha: str, threshold: float) -> dict[float, int]:
    """Five true defects and five false alarms of the line profile, reviewed; ids by score."""
    engine = open_engine(str(database))
    upgrade(engine)
    ids = {}
    scored = [(threshold + 10 + i, ReviewVerdict.true_defect) for i in range(5)]
    scored += [(threshold + 1 + i / 10, ReviewVerdict.false_alarm) for i in range(5)]
    for score, verdict in scored:
        path = f"/cams/{score}.png"
        row = enqueue(engine, camera="cam", product=PROFILE, source_path=path,
                      sha256=hashlib.sha256(path.encode()).hexdigest(), size_bytes=1)  # fmt: skip
        claim_batch(engine, 1)
        complete(engine, row.id, DetectionOutcome(score=score, threshold=threshold,
                                                  heatmap_path=None, model_sha256=model_sha,
                                                  detect_ms=1.0))  # fmt: skip
        save_review(engine, row.id, verdict, reviewer="ann")
        ids[score] = row.id
    engine.dispose()
    return ids


def test_recalibration_from_reviews_runs_without_torch(line_site: Path) -> None:
    profile_file = line_site / "state" / "profiles" / PROFILE / "profile.yaml"
    kept = yaml.safe_load(profile_file.read_text())
    kept["calibration"]["good_image_stats"] = {  # as `profile calibrate --good` keeps them
        name: [100.0 + i for i in range(12)]
        for name in ("luminance_p10", "luminance_p50", "luminance_p90")
    }
    profile_file.write_text(yaml.safe_dump(kept, sort_keys=False))
    before = yaml.safe_load(profile_file.read_text())
    old = before["calibration"]["threshold"]
    database = line_site / "state" / "results.sqlite3"
    ids = _seed(database, before["model"]["sha256"], old)
    args = ("profile", "calibrate", PROFILE, "--from-reviews", "--db", str(database))
    preview = run_cli(line_site, *args)
    assert preview.returncode == 0, preview.stderr
    assert "nothing changed" in preview.stdout
    assert yaml.safe_load(profile_file.read_text()) == before
    applied = run_cli(line_site, *args, "--yes", "Eve")
    assert applied.returncode == 0, applied.stderr
    after = yaml.safe_load(profile_file.read_text())
    new = (old + 1.4 + old + 10) / 2  # midway: highest false alarm, lowest true defect
    assert after["calibration"]["threshold"] == new
    (change,) = after["history"]
    assert change["by"] == f"Eve (shell:{getpass.getuser()})" and change["old_threshold"] == old
    alarms = sorted(i for s, i in ids.items() if s < old + 10)
    assert change["reviews"]["false_alarms"] == alarms
    assert change["newly_passing"] == alarms
    assert after["calibration"]["scoring"] == before["calibration"]["scoring"]
    # reviews are no fair sample of good images: the drift watch's image reference stays
    assert after["calibration"]["good_image_stats"] == before["calibration"]["good_image_stats"]
