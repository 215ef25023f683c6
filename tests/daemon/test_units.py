"""The daemon's parts that need no subprocess: notify, file checks, config, OOM halving."""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path
from typing import get_args

import cv2
import numpy as np
import pytest
import torch

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.camera_files import Refused, has_trailer, looks_complete, read_checked
from padformer_edge.daemon.inspectors import Inspector
from padformer_edge.daemon.intake import stored_name
from padformer_edge.daemon.notify import Notifier, watchdog_interval_s
from padformer_edge.daemon.settings import (
    BUNDLED_CONFIG,
    HeatmapFormat,
    WorkerConfig,
    load_daemon_config,
)
from padformer_edge.daemon.worker import Worker, heatmap_path
from padformer_edge.detect.heatmap import OUTLINE_BGR, OVERLAY_ENCODINGS
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.detector import Detection
from padformer_edge.store.engine import open_engine
from padformer_edge.store.locations import STATE_DIR_ENV
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import claim_batch, enqueue
from tests.daemon.harness import encoded
from tests.detect_images import product_image


def test_notifier_reaches_a_path_socket_and_an_abstract_one(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as path_sock:
        path_sock.bind(str(tmp_path / "notify"))
        assert Notifier(str(tmp_path / "notify")).ready("backlog 0")
        assert path_sock.recv(256) == b"READY=1\nSTATUS=backlog 0"
    name = f"padformer-edge-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as abstract:
        abstract.bind("\0" + name)
        assert Notifier("@" + name).watchdog()
        assert abstract.recv(256) == b"WATCHDOG=1"


def test_notifier_without_systemd_is_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert not Notifier().enabled and not Notifier().stopping()
    assert not Notifier("/nonexistent/socket").stopping()  # undeliverable, but no exception


def test_watchdog_interval_is_half_of_watchdog_sec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    assert watchdog_interval_s() == 15.0
    monkeypatch.setenv("WATCHDOG_PID", "1")  # meant for another process
    assert watchdog_interval_s() is None


def test_trailers_of_complete_and_cut_images() -> None:
    png, jpeg = encoded(product_image(32, 32)), encoded(product_image(32, 32), ".jpg")
    assert has_trailer("png", png[-64:]) and has_trailer("jpeg", jpeg[-64:])
    assert not has_trailer("png", png[:-1][-64:])
    assert not has_trailer("jpeg", jpeg[: len(jpeg) // 2][-64:])
    assert has_trailer("bmp", b"")  # no trailer to check in other formats


def test_the_trailer_checked_is_the_one_of_the_content_not_the_suffix(tmp_path: Path) -> None:
    """A camera writing JPEG bytes under .png is complete when its JPEG trailer is."""
    jpeg = encoded(product_image(32, 32), ".jpg")
    (tmp_path / "a.png").write_bytes(jpeg)
    assert looks_complete(tmp_path / "a.png", len(jpeg))


def test_zero_byte_file_never_looks_complete(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"")
    assert not looks_complete(tmp_path / "a.png", 0)


def test_a_path_resolving_outside_the_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "camera", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    data = encoded(product_image(32, 32))
    (outside / "a.png").write_bytes(data)
    (root / "linked").symlink_to(outside, target_is_directory=True)
    digest = hashlib.sha256(data).hexdigest()
    with pytest.raises(Refused, match="outside the watched folder"):
        read_checked(root / "linked" / "a.png", root, 1 << 20, digest)
    folders: dict[Path, str] = {}  # the worker's: each folder resolved once per batch
    with pytest.raises(Refused, match="outside the watched folder"):
        read_checked(root / "linked" / "a.png", root, 1 << 20, digest, None, folders)
    assert folders == {root / "linked": str(outside.resolve())}
    (root / "b.png").write_bytes(data)
    assert read_checked(root / "b.png", root, 1 << 20, digest, None, folders) == data


def test_a_step_names_files_as_each_alone_with_their_folders_resolved_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, elsewhere = tmp_path / "state", tmp_path / "cams"
    (state / "cam").mkdir(parents=True)
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(state, target_is_directory=True)
    monkeypatch.setenv(STATE_DIR_ENV, str(state))
    paths = [
        state / "cam" / "a.png",  # relative to the state folder
        tmp_path / "link" / "cam" / "b.png",  # the same folder through a link
        state / "c.png",  # the state folder itself
        elsewhere / "d.png",  # outside: absolute
        Path(os.fsdecode(bytes(elsewhere) + b"/\xff.png")),  # not UTF-8: escaped
    ]
    folders: dict[Path, str] = {}
    assert [stored_name(p, folders) for p in paths] == [stored_name(p) for p in paths]
    assert stored_name(paths[1], folders) == ("cam/b.png", True)
    assert stored_name(paths[-1], folders)[1] is False
    assert len(folders) == 4


def test_changed_content_is_refused_for_the_old_row(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(encoded(product_image(32, 32)))
    with pytest.raises(Refused, match="changed after it was discovered"):
        read_checked(tmp_path / "a.png", tmp_path, 1 << 20, "0" * 64)


def test_heatmaps_are_named_by_row_id_in_shards() -> None:
    assert heatmap_path(Path("/h"), 7) == Path("/h/00000/7.jpg")  # the default format's
    assert heatmap_path(Path("/h"), 123456, "png") == Path("/h/00012/123456.png")
    assert heatmap_path(Path("/h"), 123456, "png-stored") == Path("/h/00012/123456.png")


def test_every_heatmap_format_has_its_encoding() -> None:
    """The config's names (read without OpenCV) are the encoder's, and a heatmap's
    default name has the default format's suffix."""
    assert set(get_args(HeatmapFormat)) == set(OVERLAY_ENCODINGS)
    default = OVERLAY_ENCODINGS[WorkerConfig().heatmap_format]
    assert heatmap_path(Path("/h"), 7).suffix == default.suffix


def test_the_earlier_heatmap_switch_is_told_its_new_name(tmp_path: Path) -> None:
    config = tmp_path / "daemon.yaml"
    config.write_text("worker:\n  compress_heatmaps: false\n", encoding="utf-8")
    with pytest.raises(UserError) as refused:
        load_daemon_config(config, [tmp_path / "line1"])
    sentence = str(refused.value)
    assert "line 1, key 'worker': compress_heatmaps is now heatmap_format" in sentence
    assert "png-stored for uncompressed ones" in sentence


def test_bundled_config_with_folders_from_the_command_line(tmp_path: Path) -> None:
    one = load_daemon_config(None, [tmp_path / "line1"])
    assert [(c.name, c.path) for c in one.cameras] == [("camera", tmp_path / "line1")]
    two = load_daemon_config(BUNDLED_CONFIG, [tmp_path / "a", tmp_path / "b"])
    assert [c.name for c in two.cameras] == ["a", "b"]
    assert {c.profile for c in two.cameras} == {"default"}


def test_several_cameras_in_a_config_refuse_folders_on_the_command_line(tmp_path: Path) -> None:
    config = tmp_path / "d.yaml"
    config.write_text(
        "cameras:\n  - {name: a, path: /a, profile: p}\n  - {name: b, path: /b, profile: p}\n"
    )
    with pytest.raises(UserError, match="defines 2 cameras"):
        load_daemon_config(config, [tmp_path])


def test_config_errors_name_the_line_and_key(tmp_path: Path) -> None:
    config = tmp_path / "d.yaml"
    config.write_text("cameras:\n  - {name: a, path: /a, profile: p}\nworker:\n  max_bach: 3\n")
    with pytest.raises(UserError, match=r"line 4, key 'worker.max_bach': unknown key"):
        load_daemon_config(config, [])


class _OutOfMemoryOnce:
    """Stands in for a detector on a GPU that runs out of memory above a batch size."""

    def __init__(self, fits: int) -> None:
        self.fits, self.max_batch, self.calls = fits, 32, []

    def detect(self, images: list[np.ndarray]) -> list[int]:
        self.calls.append(len(images))
        if len(images) > self.fits:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return list(range(len(images)))


def test_out_of_memory_halves_the_batch_and_keeps_every_image() -> None:
    worker = Worker(None, {}, {}, WorkerConfig(max_batch=8), Path(), 0, AlertsConfig())  # type: ignore[arg-type]
    detector = _OutOfMemoryOnce(fits=2)
    inspector = Inspector("p", detector, 1.0, "0" * 64)  # type: ignore[arg-type]
    out = worker.detect_halving(inspector, [np.zeros((1, 1, 3), np.uint8)] * 7)
    assert out == [0, 1, 0, 1, 0, 1, 0]  # every image once, in order
    assert detector.calls == [7, 4, 2, 2, 2, 1]
    assert worker.batch_size == 2 and detector.max_batch == 8  # kept for later batches


def test_the_systemd_unit_caps_the_daemon_memory() -> None:
    """A second line of defence behind the pixel limit: MemoryMax= above MemoryHigh=."""
    unit = Path(__file__).resolve().parents[2] / "systemd" / "padformer-edge.service"
    settings = dict(
        line.split("=", 1)
        for line in unit.read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    gib = {"G": 1 << 30, "M": 1 << 20}
    high, most = (int(settings[k][:-1]) * gib[settings[k][-1]] for k in ("MemoryHigh", "MemoryMax"))
    assert 0 < high < most


def test_the_worker_draws_heatmaps_on_the_profile_scale(tmp_path: Path) -> None:
    """The daemon's heatmap of a good part at its profile's threshold is calm and has no
    outline; a defect's is outlined where its map passes the threshold (stored as PNG
    here, so the outline's pixels are exact)."""
    engine = open_engine(str(tmp_path / "results.sqlite3"))
    upgrade(engine)
    config = WorkerConfig(heatmap_format="png")
    worker = Worker(engine, {}, {}, config, tmp_path / "heat", 0, AlertsConfig())
    inspector = Inspector("p", None, 2.0, "0" * 64)  # type: ignore[arg-type]
    image = product_image(64, 80)
    good_map = np.full((64, 80), 1.9, np.float32)  # just below the threshold everywhere
    defect_map = good_map.copy()
    defect_map[10:30, 20:50] = 3.5
    outlined = []
    for index, anomaly_map in enumerate((good_map, defect_map)):
        enqueue(engine, camera="c", product="p", source_path=f"/c/{index}.png",
                sha256=f"{index:064d}", size_bytes=1)  # fmt: skip
        (row,) = claim_batch(engine, 1)
        score = float(anomaly_map.max())
        worker.finish(row, image, Detection(score, anomaly_map, [], [], {"total": 0.1}), inspector)
        picture = cv2.imread(str(heatmap_path(tmp_path / "heat", row.id, "png")))
        outline = np.all(picture == np.array(OUTLINE_BGR, np.uint8), axis=2)
        outlined.append(np.argwhere(outline))
    engine.dispose()
    assert outlined[0].size == 0
    assert outlined[1].min(axis=0).tolist() == [10, 20]
    assert outlined[1].max(axis=0).tolist() == [29, 49]
