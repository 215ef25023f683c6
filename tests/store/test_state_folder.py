"""A state folder moved, and backed up and restored elsewhere, keeps every picture.

Real parts throughout: camera images and heatmaps written by OpenCV, a SQLite history
at schema 0003 holding the absolute paths earlier versions recorded, brought to head by
``padformer-edge db upgrade`` (the real migrations), ``state backup`` and ``state
restore`` as subprocesses, the pictures read back through the page's own reader
(``web.media.MediaRoots``) and ``padformer-edge doctor`` run on the restored folder.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import cv2
import pytest
import yaml
from sqlalchemy import text

from padformer_edge.daemon.settings import DaemonConfig, file_roots
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile
from padformer_edge.store.engine import open_engine
from padformer_edge.store.locations import resolve_stored, stored_path
from padformer_edge.store.migrations import head_revision, upgrade
from padformer_edge.web.media import MediaRoots
from tests.cli_process import run_cli
from tests.detect_images import product_image
from tests.profiles.conftest import FAST, write_checkpoint

from .seed import digest


def daemon_config(outside: Path) -> dict:
    """One camera folder inside the state folder (a relative path) and one outside it."""
    return {
        "cameras": [
            {"name": "inside", "path": "camera", "profile": "part"},
            {"name": "outside", "path": str(outside), "profile": "part"},
        ]
    }


def write_png(path: Path, seed: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), product_image(48, 64, seed))
    return path


def make_state(root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state folder as an earlier version left it: a calibrated profile whose checkpoint
    lies in the state folder under an absolute path, and a history at 0003 whose rows
    name camera files (inside and outside the state folder) and heatmaps absolutely."""
    state = root / "state"
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(state))
    monkeypatch.delenv("PADFORMER_EDGE_PROFILES", raising=False)
    monkeypatch.delenv("PADFORMER_EDGE_DB", raising=False)
    (state / "models").mkdir(parents=True)
    checkpoint = write_checkpoint(state / "models" / "tiny.safetensors", 0)
    references = root / "references"
    for seed in range(2):
        write_png(references / f"{seed}.png", seed)
    made = create_profile(state / "profiles", "part", checkpoint, references, None, FAST)
    pin_threshold(made.profile, 0.5)
    profile_file = made.profile.folder / "profile.yaml"
    old = yaml.safe_load(profile_file.read_text())
    assert old["model"]["path"] == "models/tiny.safetensors"  # written relative now
    old["model"]["path"] = str(checkpoint)  # as versions before 0005 wrote it
    profile_file.write_text(yaml.safe_dump(old, sort_keys=False))

    engine = open_engine(str(state / "results.sqlite3"))
    upgrade(engine, "0003")
    for i in range(6):
        folder = state / "camera" if i % 2 == 0 else outside
        source = write_png(folder / f"part-{i}.png", 10 + i)
        heatmap = write_png(state / "heatmaps" / "00000" / f"{i + 1}.png", 20 + i)
        # plain SQL: the current tables name columns a 0003 database does not have yet
        with engine.begin() as conn:
            conn.execute(text(
                "INSERT INTO inspections (camera, product, source_path, sha256, size_bytes, "
                "status, attempts, score, threshold, is_anomaly, heatmap_path, model_sha256, "
                "detect_ms, discovered_at) VALUES (:camera, 'part', :path, :sha, 1, 'done', "
                "1, 0.1, 0.5, 0, :heatmap, :model, 1.0, CURRENT_TIMESTAMP)"),
                {"camera": "inside" if i % 2 == 0 else "outside", "path": str(source),
                 "sha": digest(str(i)), "heatmap": str(heatmap), "model": "0" * 64},
            )  # fmt: skip
    engine.dispose()
    done = run_cli("db", "upgrade", env={"PADFORMER_EDGE_STATE_DIR": str(state)})
    assert done.returncode == 0, done.stderr
    assert f"at schema {head_revision()}" in done.stdout
    return state


def recorded(database: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        query = "SELECT source_path, heatmap_path FROM inspections ORDER BY id"
        return [tuple(r) for r in conn.execute(query).fetchall()]
    finally:
        conn.close()


def assert_every_picture_served(state: Path, outside: Path, originals: dict) -> None:
    """Each row's camera image and heatmap, read through the page's reader with the
    state folder ``state``, has the bytes the original state held."""
    config = DaemonConfig.model_validate(daemon_config(outside))
    media = MediaRoots(file_roots(config))
    rows = recorded(state / "results.sqlite3")
    assert len(rows) == 6
    for source, heatmap in rows:
        for path in (source, heatmap):
            picture = media.read(path)
            assert picture is not None, path
            assert picture.data == originals[Path(path).name if path.startswith("/") else path]


def test_a_moved_and_a_restored_state_folder_keep_every_picture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "line-camera"
    state = make_state(tmp_path / "a", outside, monkeypatch)
    rows = recorded(state / "results.sqlite3")
    inside = [s for s, _ in rows if not s.startswith("/")]
    assert inside == ["camera/part-0.png", "camera/part-2.png", "camera/part-4.png"]
    assert [s for s, _ in rows if s.startswith("/")] == [
        str(outside / f"part-{i}.png") for i in (1, 3, 5)
    ]  # a camera folder outside the state folder stays absolute
    assert all(h == f"heatmaps/00000/{i + 1}.png" for i, (_, h) in enumerate(rows))
    originals = {s if not s.startswith("/") else Path(s).name:
                 (state / s if not s.startswith("/") else Path(s)).read_bytes()
                 for s, _ in rows} | {h: (state / h).read_bytes() for _, h in rows}  # fmt: skip

    # Backed up where it lives (the profile's absolute checkpoint made relative in the
    # copy), then restored into an empty folder standing for another PC's state folder.
    backup = tmp_path / "usb" / "line-1"
    done = run_cli("state", "backup", str(backup), env={"PADFORMER_EDGE_STATE_DIR": str(state)})
    assert done.returncode == 0, done.stderr
    assert "database results.sqlite3" in done.stdout
    manifest = json.loads((backup / "padformer-edge-state.json").read_text())
    assert "heatmaps/00000/6.png" in manifest["files"] and "camera/part-4.png" in manifest["files"]
    assert not any(name.endswith(("-wal", "-shm")) for name in manifest["files"])
    shutil.rmtree(state)  # the old folder is gone: nothing may still point into it
    restored = tmp_path / "c" / "state"
    restored.mkdir(parents=True)  # empty, as systemd's StateDirectory= makes it
    done = run_cli("state", "restore", str(backup), env={"PADFORMER_EDGE_STATE_DIR": str(restored)})
    assert done.returncode == 0, done.stderr
    assert f"restored {len(manifest['files'])} files" in done.stdout
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(restored))
    assert_every_picture_served(restored, outside, originals)
    profile = yaml.safe_load((restored / "profiles/part/profile.yaml").read_text())
    assert profile["model"]["path"] == "models/tiny.safetensors"

    # Then moved as a plain folder: the pictures and the profile follow it.
    moved = tmp_path / "d" / "state"
    moved.parent.mkdir()
    restored.rename(moved)
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(moved))
    assert_every_picture_served(moved, outside, originals)
    config = moved / "daemon.yaml"
    config.write_text(yaml.safe_dump(daemon_config(outside)))
    env = {"PADFORMER_EDGE_STATE_DIR": str(moved)}
    doctor = run_cli("doctor", "--config", str(config), "--json", env=env)
    findings = json.loads(doctor.stdout)
    assert doctor.returncode == 0, [f for f in findings if not f["ok"]]
    assert {"camera 'inside'", "camera 'outside'", "profile 'part'", "database"} <= {
        f["subject"] for f in findings
    }


def test_restore_refuses_a_damaged_backup_or_a_full_folder_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = make_state(tmp_path / "a", tmp_path / "line-camera", monkeypatch)
    backup = tmp_path / "backup"
    env = {"PADFORMER_EDGE_STATE_DIR": str(state)}
    assert run_cli("state", "backup", str(backup), env=env).returncode == 0
    again = run_cli("state", "backup", str(backup), env=env)
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        f"error: the backup folder {backup} is not an empty folder; give a new or empty folder."
    ]
    elsewhere = tmp_path / "elsewhere.sqlite3"
    outside = run_cli("state", "backup", str(tmp_path / "b2"), "--db", str(elsewhere), env=env)
    assert outside.returncode == 2
    assert f"the database {elsewhere} lies outside the state folder {state}" in outside.stderr
    assert not (tmp_path / "b2").exists()
    full = run_cli("state", "restore", str(backup), env=env)  # the source state is not empty
    assert full.returncode == 2 and "is not an empty folder" in full.stderr
    assert "nothing was changed" in full.stderr

    damaged = backup / "heatmaps" / "00000" / "3.png"
    damaged.write_bytes(damaged.read_bytes()[:-1])
    target = tmp_path / "c" / "state"
    done = run_cli("state", "restore", str(backup), env={"PADFORMER_EDGE_STATE_DIR": str(target)})
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"backup file {damaged} differs from the sha256" in lines[0]
    assert not target.exists() and list((tmp_path / "c").iterdir()) == []  # no staging left

    not_a_backup = run_cli(
        "state", "restore", str(tmp_path), env={"PADFORMER_EDGE_STATE_DIR": str(target)}
    )
    assert not_a_backup.returncode == 2
    assert "is not a state backup (it has no padformer-edge-state.json)" in not_a_backup.stderr


def test_a_path_is_recorded_relative_inside_the_state_folder_and_a_link_as_itself(
    tmp_path: Path,
) -> None:
    """Inside the state folder (named directly or through a link to it) a path is
    recorded relative; outside, absolute; a camera file that is a link into the state
    folder stays the link's own path (the worker refuses links), never its target's."""
    state = tmp_path / "state"
    heatmap = write_png(state / "heatmaps" / "00000" / "1.png", 1)
    (tmp_path / "via").symlink_to(state)
    camera = tmp_path / "camera"
    camera.mkdir()
    (camera / "link.png").symlink_to(heatmap)
    assert stored_path(heatmap, state) == "heatmaps/00000/1.png"
    assert stored_path(heatmap, tmp_path / "via") == "heatmaps/00000/1.png"
    assert stored_path(tmp_path / "via" / "heatmaps" / "00000" / "1.png", state) == (
        "heatmaps/00000/1.png"
    )
    assert stored_path(camera / "link.png", state) == str(camera / "link.png")
    assert resolve_stored("heatmaps/00000/1.png", tmp_path / "via") == (
        tmp_path / "via" / "heatmaps" / "00000" / "1.png"
    )
    assert resolve_stored(str(camera / "link.png"), state) == camera / "link.png"
