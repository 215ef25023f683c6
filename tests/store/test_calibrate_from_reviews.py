"""``profile calibrate --from-reviews`` on reviewed rows stored in a real database, run as
the real CLI; and the rule that picks the threshold, on plain arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from sqlalchemy import Engine

from padformer_edge.anomaly import is_anomalous
from padformer_edge.profiles.calibrate import review_threshold
from padformer_edge.profiles.profile import load_profile
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from padformer_edge.store.reviews import save_review
from tests.cli_process import run_cli
from tests.daemon.harness import make_profile

from .seed import digest

OLD_THRESHOLD = 2.0


def test_the_rule_keeps_every_defect_and_clears_the_alarms_below_them() -> None:
    defects = np.array([5.0, 7.0, 6.0])
    alarms = np.array([2.5, 3.0, 4.0, 8.0])
    chosen = review_threshold(defects, alarms)
    assert chosen.value == 4.5 and chosen.highest_alarm_below == 4.0
    assert is_anomalous(defects, chosen.value).all()
    assert is_anomalous(alarms, chosen.value).tolist() == [False, False, False, True]
    # No false alarm below the lowest defect: just below it, so the defect stays flagged.
    tight = review_threshold(np.array([3.0, 4.0]), np.array([3.0, 9.0]))
    assert tight.highest_alarm_below is None and 2.99 < tight.value < 3.0


def _store(engine: Engine, model_sha: str, scored: list[tuple[float, ReviewVerdict | None]],
           product: str = "bolt") -> None:  # fmt: skip
    """Finished inspections of ``product`` with these scores, reviewed as given."""
    for score, verdict in scored:
        name = f"/cams/{product}-{score}-{verdict}.png"
        row = enqueue(engine, camera="cam", product=product, source_path=name,
                      sha256=digest(name), size_bytes=1)  # fmt: skip
        (claimed,) = claim_batch(engine, 1)
        assert claimed.id == row.id
        complete(engine, row.id, DetectionOutcome(score=score, threshold=OLD_THRESHOLD,
                                                  heatmap_path=None, model_sha256=model_sha,
                                                  detect_ms=1.0))  # fmt: skip
        if verdict is not None:
            save_review(engine, row.id, verdict, reviewer="ann")


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    root = tmp_path / "profiles"
    make_profile(root, "bolt", OLD_THRESHOLD)
    return root


def test_calibrate_from_reviews_sets_the_threshold_from_stored_reviews(
    db_url: str, engine: Engine, profiles: Path
) -> None:
    sha = load_profile(profiles, "bolt").model_sha256
    td, fa = ReviewVerdict.true_defect, ReviewVerdict.false_alarm
    defects = [(9.0, td), (6.5, td), (7.0, td), (8.0, td), (12.0, td)]
    alarms = [(2.2, fa), (3.1, fa), (4.5, fa), (2.6, fa), (10.0, fa)]
    _store(engine, sha, [*defects, *alarms, (1.0, None)])
    # Reviews of another model's scores and of another profile do not count.
    _store(engine, digest("old model"), [(5.0, fa), (5.5, fa)])
    _store(engine, sha, [(6.0, fa)], product="nut")
    result = run_cli("profile", "calibrate", "bolt", "--from-reviews", "--db", db_url,
                     "--root", str(profiles))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "threshold 5.5 from 5 reviewed true defects" in result.stdout
    assert "1 of 5 reviewed false alarms" in result.stderr  # the one at 10.0
    assert "2 reviews were left out" in result.stderr
    stored = yaml.safe_load((profiles / "bolt" / "profile.yaml").read_text())["calibration"]
    assert stored["threshold"] == 5.5 and stored["observed_fpr"] == 0.2
    assert stored["anomalous"]["recall_at_threshold"] == 1.0
    profile = load_profile(profiles, "bolt")
    assert profile.threshold == 5.5 and profile.is_anomaly(6.5) and not profile.is_anomaly(4.5)


def test_too_few_reviews_are_refused_in_one_sentence(
    db_url: str, engine: Engine, profiles: Path, tmp_path: Path
) -> None:
    sha = load_profile(profiles, "bolt").model_sha256
    td, fa = ReviewVerdict.true_defect, ReviewVerdict.false_alarm
    _store(engine, sha, [(9.0, td), (8.0, td), (2.0, fa)] + [(3.0 + i / 10, fa) for i in range(5)])
    config = tmp_path / "daemon.yaml"  # database and profiles folder from the daemon config
    config.write_text(yaml.safe_dump({
        "database": db_url, "profiles_dir": str(profiles),
        "cameras": [{"name": "cam", "path": str(tmp_path / "cam"), "profile": "bolt"}],
    }))  # fmt: skip
    result = run_cli("profile", "calibrate", "bolt", "--from-reviews", "--config", str(config))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "has only 2 true defects reviewed" in line and "at least 5 of each" in line
    before = yaml.safe_load((profiles / "bolt" / "profile.yaml").read_text())
    assert before["calibration"]["threshold"] == OLD_THRESHOLD
    both = run_cli("profile", "calibrate", "bolt", "--from-reviews", "--good", str(tmp_path),
                   "--config", str(config))  # fmt: skip
    assert both.returncode == 2 and "drop --good" in both.stderr
