"""References that grow from the line, end to end with a tiny random-weight model and a
real migrated SQLite history: good parts reviewed on the line become candidates, an
engineer approves them, ``profile refresh`` previews then installs a new version
(references chosen from the pool, threshold measured only on pictures held aside), and
``profile rollback`` brings the previous version back; a defect planted among the
approved pictures stops the refresh until it is named with ``--force``."""

from __future__ import annotations

import getpass
import hashlib
import shutil
from pathlib import Path

import cv2
import pytest
import yaml
from typer.testing import CliRunner

from padformer_edge.cli.app import app
from padformer_edge.errors import UserError
from padformer_edge.profiles.calibrate import score_files
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.refresh import far_above_limit
from padformer_edge.store.engine import open_engine
from padformer_edge.store.locations import stored_path
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from padformer_edge.store.reviews import save_review


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def refused(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert isinstance(result.exception, UserError), result.output
    return str(result.exception)


def reviewed_good(database: Path, pictures: list[Path], camera: Path) -> list[int]:
    """Each picture inspected on the line (copied into a camera folder, stored as done)
    and reviewed as a false alarm by an operator; the inspection ids."""
    engine = open_engine(str(database))
    upgrade(engine)
    ids = []
    for n, picture in enumerate(pictures):
        target = camera / f"{n:03d}{picture.suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(picture, target)
        data = target.read_bytes()
        row = enqueue(engine, camera="cam", product="duck", source_path=stored_path(target),
                      sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))  # fmt: skip
        claim_batch(engine, 1)
        outcome = DetectionOutcome(score=1.0, threshold=0.5, heatmap_path=None,
                                   model_sha256="0" * 64, detect_ms=1.0)  # fmt: skip
        complete(engine, row.id, outcome)
        assert save_review(engine, row.id, ReviewVerdict.false_alarm,
                           reviewer="ann").candidate is not None  # fmt: skip
        ids.append(row.id)
    engine.dispose()
    return ids


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes: what "writes nothing" means."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def planted_defect(product: Path, target: Path) -> Path:
    """A good view with its colours inverted: a part of the wrong finish, a gross defect
    that even the random-weight test model scores far above the threshold (checked by
    the test before it plants it)."""
    image = 255 - cv2.imread(str(product / "test" / "good" / "0.png"))
    target.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(target), image)
    return target


def test_refresh_grows_the_profile_and_rollback_brings_the_old_version_back(
    tmp_path: Path, product: Path, checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "state"))
    root = ["--root", str(tmp_path / "profiles")]
    database = tmp_path / "state" / "history.sqlite3"
    db = ["--db", str(database)]
    invoke("profile", "create", "duck", "--model", str(checkpoint), "--references",
           str(product / "train" / "good"), "--shots", "4", "--passes", "3",
           "--device", "cpu", *root)  # fmt: skip
    invoke("profile", "calibrate", "duck", "--good", str(product / "test" / "good"),
           "--target-fpr", "0.1", *root)  # fmt: skip
    before = load_profile(tmp_path / "profiles", "duck")
    good = sorted((product / "train" / "good").glob("*.png"))
    good += sorted((product / "test" / "good").glob("*.png"))
    defect = planted_defect(product, tmp_path / "planted" / "defect.png")
    detector = before.build_detector()
    [defect_score] = score_files(detector, [defect]).tolist()
    assert defect_score > far_above_limit(before.calibration)  # the plant is a gross defect
    reviewed_good(database, [*good, defect], tmp_path / "camera")
    listed = invoke("profile", "candidates", "duck", "--json", *db)
    candidates = [c["id"] for c in yaml.safe_load(listed)]
    assert len(candidates) == len(good) + 1
    planted = max(candidates)  # the last one reviewed
    profile_folder = tmp_path / "profiles" / "duck"
    files = folder_bytes(profile_folder)
    first = sorted(set(candidates) - {planted})[:3]  # good ones: too few to hold ten aside
    approved = invoke("profile", "approve", "duck", *map(str, first), "--yes", "eve", *db)
    assert "approved candidates" in approved and "only an engineer" not in approved
    few = invoke("profile", "refresh", "duck", *root, *db)  # too few held aside: a preview
    assert "would refuse: it has " in few and "good images held aside for calibration" in few
    assert "`--yes` would be refused for the 1 reason(s) above" in few
    assert folder_bytes(profile_folder) == files  # a preview writes nothing

    rest = sorted(set(candidates) - set(first))
    invoke("profile", "approve", "duck", *map(str, rest), "--yes", "eve", *db)
    shown = invoke("profile", "refresh", "duck", *root, *db)  # the plant: previewed all the same
    assert f"would refuse: approved candidates {planted} (score" in shown
    assert f"candidate {planted}: score" in shown and "(left out of this plan)" in shown
    assert "version 1 -> 2" in shown and "would refuse: it has" not in shown
    assert folder_bytes(profile_folder) == files  # approved/ included: nothing copied
    message = refused("profile", "refresh", "duck", "--yes", "eve", *root, *db)
    assert message.startswith(f"profile 'duck' is not refreshed: approved candidates {planted}")
    assert "--force ID" in message
    assert folder_bytes(profile_folder) == files

    shown = invoke("profile", "refresh", "duck", "--force", str(planted), *root, *db)
    assert "version 1 -> 2" in shown and "nothing changed" in shown
    assert "would refuse" not in shown and "(forced)" in shown
    assert folder_bytes(profile_folder) == files
    invoke("profile", "refresh", "duck", "--force", str(planted), "--yes", "eve", *root, *db)
    grown = load_profile(tmp_path / "profiles", "duck")
    limit = before.config.growth.max_references  # more pictures than the limit were offered
    assert grown.config.version == 2 and len(grown.config.references) == limit
    change = grown.config.history[-1]
    assert (change.action, change.by, change.version, change.from_version, change.forced) == (
        "refresh", f"eve (shell:{getpass.getuser()})", 2, 1, [planted])
    held = {i.sha256 for i in grown.config.approved if i.held_aside}
    assert held and not held & {e.sha256 for e in grown.config.references}
    assert grown.calibration is not None and grown.calibration.good.count == len(held)
    # the drift watch's image reference is measured on the same held-aside pictures
    stats = grown.calibration.good_image_stats or {}
    assert len(stats) == 3 and {len(v) for v in stats.values()} == {len(held)}
    assert grown.verify_references()  # every reference file present as recorded
    assert (grown.folder / "versions" / "1" / "profile.yaml").is_file()
    # a full profile keeps its references: a second refresh would only recalibrate
    again = invoke("profile", "refresh", "duck", "--force", str(planted), *root, *db)
    assert f"{limit} -> {limit} references" in again
    assert "references added: none; dropped: none" in again

    invoke("profile", "rollback", "duck", "--yes", "eve", *root, *db)
    back = load_profile(tmp_path / "profiles", "duck")
    assert back.config.version == 3
    assert back.config.references == before.config.references
    assert back.threshold == before.threshold
    assert [(c.action, c.restored) for c in back.config.history] == [
        ("refresh", None), ("rollback", 1)]
    assert sorted(p.name for p in (back.folder / "references").iterdir()) == sorted(
        e.file for e in before.config.references)
    message = refused("profile", "rollback", "duck", "--yes", "eve", "--to", "7", *root, *db)
    assert message == ("profile 'duck' keeps no version 7 (kept: 1, 2); pick one of those.")
