"""``profile calibrate --from-reviews`` on reviewed rows stored in a real database, run as
the real CLI: a preview that writes nothing, the change applied under ``--yes ENGINEER``
with a history entry, the demo's wrong review; and the rule that picks the threshold, on
plain arrays."""

from __future__ import annotations

import getpass
from pathlib import Path

import numpy as np
import pytest
import yaml
from sqlalchemy import Engine

from padformer_edge.anomaly import is_anomalous
from padformer_edge.errors import UserError
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.review_calibration import (
    apply_plan,
    plan_from_reviews,
    review_threshold,
)
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
           product: str = "bolt", threshold: float = OLD_THRESHOLD) -> list[int]:  # fmt: skip
    """Finished inspections of ``product`` with these scores, reviewed as given; their ids."""
    ids = []
    for score, verdict in scored:
        name = f"/cams/{product}-{score}-{verdict}.png"
        row = enqueue(engine, camera="cam", product=product, source_path=name,
                      sha256=digest(name), size_bytes=1)  # fmt: skip
        (claimed,) = claim_batch(engine, 1)
        assert claimed.id == row.id
        ids.append(row.id)
        complete(engine, row.id, DetectionOutcome(score=score, threshold=threshold,
                                                  heatmap_path=None, model_sha256=model_sha,
                                                  detect_ms=1.0))  # fmt: skip
        if verdict is not None:
            save_review(engine, row.id, verdict, reviewer="ann")
    return ids


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
    before = (profiles / "bolt" / "profile.yaml").read_text()
    args = ("profile", "calibrate", "bolt", "--from-reviews", "--db", db_url,
            "--root", str(profiles))  # fmt: skip
    preview = run_cli(*args)
    assert preview.returncode == 0, preview.stderr
    assert "threshold 2 -> 5.5, from 5 reviewed true defects" in preview.stdout
    assert "nothing changed" in preview.stdout and "--yes ENGINEER" in preview.stdout
    assert "1 of 5 reviewed false alarms" in preview.stderr  # the one at 10.0
    assert "2 reviews were left out" in preview.stderr
    assert (profiles / "bolt" / "profile.yaml").read_text() == before
    result = run_cli(*args, "--yes", "Eve Engineer")
    assert result.returncode == 0, result.stderr
    assert "applied: profile 'bolt' threshold 5.5" in result.stdout
    stored = yaml.safe_load((profiles / "bolt" / "profile.yaml").read_text())["calibration"]
    assert stored["threshold"] == 5.5 and stored["observed_fpr"] == 0.2
    assert stored["anomalous"]["recall_at_threshold"] == 1.0
    profile = load_profile(profiles, "bolt")
    assert profile.threshold == 5.5 and profile.is_anomaly(6.5) and not profile.is_anomaly(4.5)
    (change,) = profile.config.history
    # no users in this database: the typed name, beside the shell account it came from
    assert change.by == f"Eve Engineer (shell:{getpass.getuser()})"
    assert change.action == "calibrate-from-reviews"
    assert (change.old_threshold, change.new_threshold) == (OLD_THRESHOLD, 5.5)
    assert len(change.reviews.true_defects) == 5 and len(change.reviews.false_alarms) == 5
    assert "results.sqlite3" in change.reviews.database or "postgresql" in change.reviews.database
    # Stored as anomalies under 2.0: the five defects and the alarm at 10.0 stay flagged,
    # the alarms at 2.2 to 4.5 now pass; the unreviewed 1.0 was and stays good.
    assert len(change.newly_passing) == 4 and change.newly_flagged == []
    # A new threshold is a new version: results name which threshold scored them, and
    # the replaced one is kept, so a rollback brings the old threshold back.
    assert profile.config.version == 2 and (change.from_version, change.version) == (1, 2)
    kept = yaml.safe_load((profiles / "bolt" / "versions/1/profile.yaml").read_text())
    assert kept["version"] == 1 and kept["calibration"]["threshold"] == OLD_THRESHOLD
    back = run_cli("profile", "rollback", "bolt", "--yes", "Eve Engineer", "--db", db_url,
                   "--root", str(profiles))  # fmt: skip
    assert back.returncode == 0, back.stderr
    restored = load_profile(profiles, "bolt")
    assert (restored.config.version, restored.threshold) == (3, OLD_THRESHOLD)


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


# The demo case of issue 41: the old threshold, the true defects and the false alarms just
# above it are the demo's scores; one real defect (62.6) was reviewed as a false alarm.
DEMO_OLD = 62.29
DEMO_ALARMS = [62.31, 62.38, 62.44, 62.5, 62.57]
DEMO_DEFECTS = [66.98, 68.4, 70.1, 73.3, 79.5]
WRONGLY_REVIEWED = 62.6


def test_a_defect_reviewed_as_a_false_alarm_is_named_first_and_nothing_is_written(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    root = tmp_path / "profiles"
    make_profile(root, "bolt", DEMO_OLD)
    sha = load_profile(root, "bolt").model_sha256
    td, fa = ReviewVerdict.true_defect, ReviewVerdict.false_alarm
    good = [(50.0 + i, None) for i in range(8)]
    unreviewed_flagged = [(63.4, None), (62.9, None)]
    ids = _store(engine, sha, [*good, *[(s, fa) for s in DEMO_ALARMS], (WRONGLY_REVIEWED, fa),
                               *[(s, td) for s in DEMO_DEFECTS], *unreviewed_flagged],
                 threshold=DEMO_OLD)  # fmt: skip
    defect_id = ids[len(good) + len(DEMO_ALARMS)]
    before = (root / "bolt" / "profile.yaml").read_text()
    plan = plan_from_reviews(root, "bolt", engine, "the test database")
    assert plan.result.threshold == (WRONGLY_REVIEWED + min(DEMO_DEFECTS)) / 2
    assert plan.old_threshold == DEMO_OLD and plan.defects_passing == []
    assert plan.changes[0].inspection_id == defect_id  # the real defect, first
    assert plan.changes[0].review is fa and plan.changes[0].newly_passing
    # then the other reviewed false alarms (highest first), then the unreviewed ones
    assert [c.score for c in plan.changes] == [WRONGLY_REVIEWED, *sorted(DEMO_ALARMS)[::-1],
                                               63.4, 62.9]  # fmt: skip
    # the unreviewed ones are also listed apart: nobody said they are good
    assert [c.score for c in plan.unreviewed] == [63.4, 62.9]
    assert (root / "bolt" / "profile.yaml").read_text() == before

    preview = run_cli("profile", "calibrate", "bolt", "--from-reviews", "--db", db_url,
                      "--root", str(root))  # fmt: skip
    assert preview.returncode == 0, preview.stderr
    assert f"threshold {DEMO_OLD:g} -> {plan.result.threshold:.6g}" in preview.stdout
    assert "2 unreviewed parts flagged at the current threshold would pass" in preview.stdout
    assert "other stored verdicts that would change: 6 would pass, 0 would be flagged" in (
        preview.stdout
    )
    table = preview.stdout[preview.stdout.index("stored verdicts that would change") :]
    first_row = next(line for line in table.splitlines() if line.strip(" │|").startswith(
        tuple("0123456789")))  # fmt: skip
    assert first_row.strip(" │|").split()[0] == str(defect_id) and "62.6" in first_row
    assert (root / "bolt" / "profile.yaml").read_text() == before


def test_apply_refuses_an_empty_name_and_a_profile_changed_since_the_preview(
    engine: Engine, profiles: Path, db_url: str
) -> None:
    sha = load_profile(profiles, "bolt").model_sha256
    td, fa = ReviewVerdict.true_defect, ReviewVerdict.false_alarm
    _store(engine, sha, [(9.0 + i, td) for i in range(5)] + [(3.0 + i, fa) for i in range(5)])
    plan = plan_from_reviews(profiles, "bolt", engine, "the test database")
    before = (profiles / "bolt" / "profile.yaml").read_text()
    with pytest.raises(UserError, match="--yes needs the name"):
        apply_plan(profiles, plan, "   ")
    changed = before.replace(f"threshold: {OLD_THRESHOLD}", "threshold: 2.5")
    assert changed != before
    (profiles / "bolt" / "profile.yaml").write_text(changed)
    with pytest.raises(UserError, match="changed while the recalibration was being worked out"):
        apply_plan(profiles, plan, "Eve")
    assert (profiles / "bolt" / "profile.yaml").read_text() == changed
    empty = run_cli("profile", "calibrate", "bolt", "--from-reviews", "--db", db_url,
                    "--root", str(profiles), "--yes", "")  # fmt: skip
    assert empty.returncode == 2 and len(empty.stderr.strip().splitlines()) == 1
    assert "--yes needs a name: who applies a recalibration." in empty.stderr
    stray = run_cli("profile", "calibrate", "bolt", "--good", str(profiles), "--yes", "Eve",
                    "--root", str(profiles))  # fmt: skip
    assert stray.returncode == 2 and "add --from-reviews" in stray.stderr
    assert (profiles / "bolt" / "profile.yaml").read_text() == changed


def test_once_users_exist_yes_names_an_engineer_among_them(
    db_url: str, engine: Engine, profiles: Path
) -> None:
    """With users in the database, ``--yes`` must name one whose role is engineer; an
    operator or a stranger is refused before anything is written, an engineer's name is
    recorded as stored."""
    from padformer_edge.store.users import add_user
    from padformer_edge.store.vocabulary import Role

    sha = load_profile(profiles, "bolt").model_sha256
    td, fa = ReviewVerdict.true_defect, ReviewVerdict.false_alarm
    _store(engine, sha, [(6.0 + i, td) for i in range(5)] + [(2.0 + i, fa) for i in range(5)])
    add_user(engine, "ann", Role.operator)
    add_user(engine, "eve", Role.engineer)
    before = (profiles / "bolt" / "profile.yaml").read_text()
    args = ("profile", "calibrate", "bolt", "--from-reviews", "--db", db_url,
            "--root", str(profiles), "--yes")  # fmt: skip
    for name, refusal in (("ann", "user 'ann' is an operator; only an engineer"),
                          ("Eve Engineer", "'Eve Engineer' is not a user of this database")):
        refused = run_cli(*args, name)
        assert refused.returncode == 2 and refusal in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert (profiles / "bolt" / "profile.yaml").read_text() == before
    applied = run_cli(*args, "EVE")
    assert applied.returncode == 0, applied.stderr
    assert load_profile(profiles, "bolt").config.history[-1].by == "eve"


def test_unreviewed_flagged_parts_never_pass_unless_reviewed_or_accepted_by_count(
    db_url: str, engine: Engine, profiles: Path
) -> None:
    """Issue 51: a preview listed 5 unreviewed real defects among 13 parts it would pass,
    mixed with the false alarms. Planted here: unreviewed parts the current threshold
    (2.0) flags and the new one (5.75) would pass, one of them a defect (5.5), one stored
    as good under an older, higher threshold (2.5 at 3.0); others the change leaves
    alone (1.5 already passes, 7.0 stays flagged)."""
    sha = load_profile(profiles, "bolt").model_sha256
    td, fa = ReviewVerdict.true_defect, ReviewVerdict.false_alarm
    alarms = (2.2, 2.6, 3.1, 4.5, 5.0)
    _store(engine, sha, [(6.5 + i, td) for i in range(5)] + [(s, fa) for s in alarms])
    defect, alarm, left = _store(engine, sha, [(5.5, None), (3.0, None), (1.5, None)])
    (older,) = _store(engine, sha, [(2.5, None)], threshold=3.0)
    _store(engine, sha, [(7.0, None)])
    plan = plan_from_reviews(profiles, "bolt", engine, "the test database")
    assert plan.result.threshold == (5.0 + 6.5) / 2
    assert [c.inspection_id for c in plan.unreviewed] == [defect, alarm, older]  # highest first
    assert [c.was_anomaly for c in plan.unreviewed] == [True, True, False]
    assert left not in {c.inspection_id for c in plan.changes}

    profile_file = profiles / "bolt" / "profile.yaml"
    before = profile_file.read_bytes()
    args = ("profile", "calibrate", "bolt", "--from-reviews", "--db", db_url,
            "--root", str(profiles))  # fmt: skip
    preview = run_cli(*args)
    assert preview.returncode == 0, preview.stderr
    shown = preview.stdout
    assert "3 unreviewed parts flagged at the current threshold would pass; any may be a " \
        "real defect" in shown  # fmt: skip
    apart = shown[shown.index("unreviewed, would pass") : shown.index("other stored verdicts")]
    assert [_first_cell(line) for line in apart.splitlines() if _first_cell(line)] == [
        str(defect), str(alarm), str(older)
    ]  # fmt: skip
    assert "--yes ENGINEER --accept-unreviewed 3`" in shown
    for extra, told in (((), ""), (("--accept-unreviewed", "2"), " (--accept-unreviewed 2 "
                                   "does not match)")):  # fmt: skip
        refused = run_cli(*args, "--yes", "eve", *extra)
        assert refused.returncode == 2, refused.stderr
        # the preview's warnings, then one error line
        (line,) = [e for e in refused.stderr.splitlines() if e.startswith("error:")]
        assert line == (
            f"error: this recalibration of profile 'bolt' would pass 3 unreviewed parts the "
            f"current threshold flags (inspections {defect}, {alarm}, {older}), and any may "
            f"be a defect{told}; review them (padformer-edge results review ID --true-defect "
            "or --false-alarm) and preview again, or pass them unreviewed with "
            "--accept-unreviewed 3."
        )
        assert profile_file.read_bytes() == before
    lone = run_cli(*args, "--accept-unreviewed", "3")  # a preview passes nothing
    assert lone.returncode == 2 and "goes with --yes ENGINEER" in lone.stderr

    # the defect reviewed: the threshold now keeps it flagged, two parts remain to accept
    save_review(engine, defect, td, reviewer="ann")
    applied = run_cli(*args, "--yes", "eve", "--accept-unreviewed", "2")
    assert applied.returncode == 0, applied.stderr
    profile = load_profile(profiles, "bolt")
    assert profile.threshold == (5.0 + 5.5) / 2 and profile.is_anomaly(5.5)
    (change,) = profile.config.history
    assert change.accepted_unreviewed == sorted([alarm, older])
    again = run_cli(*args, "--yes", "eve", "--accept-unreviewed", "2")  # nothing left
    assert again.returncode == 2 and "passes no unreviewed part" in again.stderr


def _first_cell(line: str) -> str | None:
    """The first cell of a table row when it is an inspection id, else None."""
    cells = line.strip(" │|").split()
    return cells[0] if cells and cells[0].isdigit() else None
