"""The strict YAML loader: unknown keys, types and syntax errors name file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from padformer_edge.config import CONFIG_KINDS, StrictModel, load_config, register_config_kind
from padformer_edge.errors import UserError
from padformer_edge.tools.config_kinds import check_config


class Camera(StrictModel):
    folder: str
    fps: int = 5


class CameraFile(StrictModel):
    """Test-only schema."""

    site: str
    cameras: list[Camera]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cams.yaml"
    path.write_text(text)
    return path


def test_valid_file_loads(tmp_path: Path) -> None:
    path = write(tmp_path, "site: a\ncameras:\n  - folder: /x\n    fps: 10\n")
    cfg = load_config(path, CameraFile)
    assert cfg.cameras[0].fps == 10


def test_unknown_key_names_file_line_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, "site: a\ncameras:\n  - folder: /x\n    fsp: 10\n")
    with pytest.raises(UserError) as info:
        load_config(path, CameraFile)
    message = str(info.value)
    assert str(path) in message
    assert "line 4" in message
    assert "cameras.0.fsp" in message
    assert "unknown key" in message


def test_wrong_type_says_what_is_expected(tmp_path: Path) -> None:
    path = write(tmp_path, "site: a\ncameras:\n  - folder: /x\n    fps: fast\n")
    with pytest.raises(UserError, match=r"line 4, key 'cameras.0.fps': expected a valid integer"):
        load_config(path, CameraFile)


def test_missing_key_points_at_parent(tmp_path: Path) -> None:
    path = write(tmp_path, "site: a\ncameras:\n  - fps: 3\n")
    with pytest.raises(UserError, match=r"line 3, key 'cameras.0.folder': required key"):
        load_config(path, CameraFile)


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = write(tmp_path, "site: a\ncameras: [\n  - x\n")
    with pytest.raises(UserError, match=r"line \d+: not valid YAML"):
        load_config(path, CameraFile)


def test_missing_file_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_config(tmp_path / "nope.yaml", CameraFile)


def test_check_config_detects_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Registered for this test only: a test kind left in the registry would show up in the
    # generated configuration reference that tests/test_docs_reference.py compares.
    monkeypatch.setitem(CONFIG_KINDS, "_test_cameras", CameraFile)  # removed again afterwards
    register_config_kind("_test_cameras")(CameraFile)
    path = write(tmp_path, "site: a\ncameras: []\n")
    kind, model = check_config(path)
    assert kind == "_test_cameras"
    assert isinstance(model, CameraFile)
