"""The daemon on a camera that frames the belt: a profile made with the empty belt's
photo, framed JPEGs dropped into the camera folder and seen by the real watchdog
observer; the part's crop is scored and its box stored, a frame of the belt alone is
"no part" with no score and no alert, a part the frame cuts is flagged, and the
profile's region to ignore is outlined on the daemon's heatmaps."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import cv2
import numpy as np
import torch

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.schema import IgnoreRegion
from padformer_edge.store.engine import open_engine
from padformer_edge.store.history import stats
from tests import framed_frames
from tests.daemon.harness import DaemonProcess, make_site, rows, settled, wait_for, write_image

STAMP = IgnoreRegion(name="stamp", points=[(250, 200), (319, 200), (319, 255), (250, 255)])


def _framed_profile(root: Path) -> Path:
    """A tiny random-weight profile made from four reference frames and the belt photo."""
    torch.manual_seed(0)
    source = root / "sources"
    save_checkpoint(source / "model.safetensors", build_model("tiny"))
    for index, frame in enumerate(framed_frames.references()):
        write_image(source / "references" / f"{index}.png", frame)
    photo = write_image(source / "belt.png", framed_frames.belt_photo())
    settings = DetectionSettings(metric="auto", passes=2, device="cpu")
    made = create_profile(root / "made", "bolt", source / "model.safetensors",
                          source / "references", settings=settings, background=photo,
                          ignore_regions=[STAMP])  # fmt: skip
    return made.profile.folder


def _jpeg(path: Path, image: np.ndarray) -> None:
    ok, data = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR),
                            [cv2.IMWRITE_JPEG_QUALITY, 95])  # fmt: skip
    assert ok
    path.write_bytes(data.tobytes())


def test_framed_jpegs_end_to_end_with_the_real_observer(tmp_path: Path) -> None:
    # every scored frame is an anomaly (threshold far below any score): only "no part"
    # can keep a frame from alerting
    alerts = {"sinks": {"hook": {"type": "webhook", "url": "http://127.0.0.1:9/alerts"}},
              "cooldown_s": 0}  # fmt: skip
    site = make_site(tmp_path, threshold=-1e9, profile=_framed_profile(tmp_path), alerts=alerts)
    part, box = framed_frames.framed(110, 70, seed=5)
    cut, _ = framed_frames.framed(0, 70, seed=6, to_left_edge=True)
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        camera = site.cameras["cam0"]
        _jpeg(camera / "part.jpg", part)
        _jpeg(camera / "belt.jpg", framed_frames.empty(7))
        _jpeg(camera / "cut.jpg", cut)
        wait_for(settled(site.database, 3), 120, daemon, "three frames inspected")
        assert daemon.terminate() == 0
    found = {Path(r["source_path"]).name: r for r in rows(site.database)}
    empty, scored, edge = found["belt.jpg"], found["part.jpg"], found["cut.jpg"]
    assert empty["status"] == "no_part" and empty["score"] is None
    assert empty["is_anomaly"] is None and empty["part_box"] is None
    x0, y0, x1, y1 = map(int, scored["part_box"].split(","))
    assert x0 <= box[0] and y0 <= box[1] and x1 >= box[2] and y1 >= box[3]
    assert scored["status"] == "done" and scored["is_anomaly"] == 1 and scored["part_cut"] == 0
    assert edge["status"] == "done" and edge["part_cut"] == 1
    heatmap = cv2.imread(str(site.root / "state" / scored["heatmap_path"]))
    assert heatmap.shape[:2] == (framed_frames.HEIGHT, framed_frames.WIDTH)  # the frame's
    assert heatmap[200, 260:310].min() > 200  # the region's top edge, drawn in white
    with sqlite3.connect(site.database) as conn:
        alerted = {i for (i,) in conn.execute("SELECT inspection_id FROM alerts")}
    assert alerted == {scored["id"], edge["id"]}
    (group,) = stats(open_engine(str(site.database)))
    assert (group.done, group.no_part, group.anomalies) == (2, 1, 2)
