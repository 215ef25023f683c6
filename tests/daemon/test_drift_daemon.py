"""The real daemon watches a camera's scores for drift: a window far from the profile's
calibration scores raises one ``drift`` event with an alert per sink, the page shows it
until ``alerts ack`` closes it, an open one is not raised again, and after the ack the
next drifted window raises a new one."""

from __future__ import annotations

import getpass
import json
import sqlite3
from pathlib import Path

import yaml

from padformer_edge.images.image_stats import image_statistics, statistics_table
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.server import make_server
from tests.cli_process import run_cli
from tests.daemon.harness import DaemonProcess, Site, make_site, rows, wait_for, write_image
from tests.detect_images import brighter, posed_part, product_image
from tests.web.client import request

WINDOW = 10


def _calibrate_far_away(site: Site) -> None:
    """Give the profile calibration scores no real score comes near (the tiny random
    model scores these images far from -1000), as a drifted camera would look."""
    path = site.root / "state" / "profiles" / "bolt" / "profile.yaml"
    profile = yaml.safe_load(path.read_text())
    profile["calibration"]["good_scores"] = [-1000.0 - i for i in range(50)]
    path.write_text(yaml.safe_dump(profile, sort_keys=False))


def _drop(site: Site, start: int, count: int) -> None:
    for i in range(start, start + count):
        write_image(site.cameras["cam0"] / f"part-{i:03d}.png", product_image(48, 64, 100 + i))


def _drifts(database: Path) -> list[dict]:
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM drift_events ORDER BY id")]
    finally:
        conn.close()


def _drift_alerts(database: Path) -> list[dict]:
    with sqlite3.connect(database) as conn:
        payloads = [json.loads(p) for (p,) in conn.execute("SELECT payload FROM alerts")]
    return [p for p in payloads if p["kind"] == "drift"]


def test_a_drifted_camera_raises_one_drift_until_acknowledged(tmp_path: Path) -> None:
    site = make_site(tmp_path, drift={"window": WINDOW})
    _calibrate_far_away(site)
    db = str(site.database)
    with DaemonProcess(site) as daemon:
        daemon.wait_ready(300)
        _drop(site, 0, WINDOW)
        wait_for(lambda: len(_drifts(site.database)) == 1, 120, daemon, "a drift event")
        (event,) = _drifts(site.database)
        assert event["camera"] == "cam0" and event["kind"] == "ks"
        assert event["acknowledged_at"] is None and event["window_size"] == WINDOW
        (alert,) = _drift_alerts(site.database)  # the log sink, the only one configured
        assert alert["drift_id"] == event["id"] and alert["test"] == "ks"
        assert "calibration scores" in alert["reason"]

        server = make_server(HttpConfig(port=0), db, []).start()
        try:
            page = request(server.url, "/", headers={"Accept": "text/html"}).text
            assert f"Drift {event['id']} on camera <strong>cam0</strong>" in page
            assert f"alerts ack {event['id']}" in page

            _drop(site, WINDOW, WINDOW)  # still drifted, but the first is open
            wait_for(lambda: len(rows(site.database)) == 2 * WINDOW and all(
                r["status"] == "done" for r in rows(site.database)), 120, daemon, "20 results")
            wait_for(lambda: any(e.get("event") == "drift.still_open" for e in daemon.events()),
                     30, daemon, "the open drift to hold the second back")  # fmt: skip
            assert len(_drifts(site.database)) == 1

            listed = run_cli("alerts", "drift", "--db", db)
            assert listed.returncode == 0 and "cam0" in listed.stdout
            acked = run_cli("alerts", "ack", str(event["id"]), "--by", "Ola", "--db", db)
            assert acked.returncode == 0, acked.stderr
            assert f"acknowledged drift {event['id']} on camera 'cam0'" in acked.stdout
            page = request(server.url, "/", headers={"Accept": "text/html"}).text
            assert "Drift " not in page
            again = run_cli("alerts", "ack", str(event["id"]), "--db", db)
            assert again.returncode == 2 and "already acknowledged by Ola" in again.stderr
            missing = run_cli("alerts", "ack", "999", "--db", db)
            assert missing.returncode == 2 and "there is no drift event 999" in missing.stderr
        finally:
            server.stop()
            server.app.close()

        _drop(site, 2 * WINDOW, WINDOW)  # acknowledged: the next drifted window raises anew
        wait_for(lambda: len(_drifts(site.database)) == 2, 120, daemon, "a second drift")
        first, second = _drifts(site.database)
        assert first["acknowledged_by"] == f"Ola (shell:{getpass.getuser()})"  # no users
        assert second["acknowledged_at"] is None
        assert len(_drift_alerts(site.database)) == 2


def test_a_brighter_lamp_raises_an_image_drift_and_a_steady_one_does_not(tmp_path: Path) -> None:
    """The profile keeps the luminance percentiles of 40 poses of a part and no good
    scores (so the score test is off and the binomial one has nothing flagged at this
    threshold): a window of ten other poses under the same lamp raises nothing, the next
    ten under a 20 % brighter lamp raise one ``image`` drift whose alert names the
    change. The windows' tests run at false_alert_rate x window / 4 (binomial and three
    image tests), 0.0025 here."""
    site = make_site(tmp_path, drift={"window": WINDOW, "false_alert_rate": 0.001})
    path = site.root / "state" / "profiles" / "bolt" / "profile.yaml"
    profile = yaml.safe_load(path.read_text())
    table = statistics_table([image_statistics(posed_part(seed=1000 + i)) for i in range(40)])
    profile["calibration"]["good_image_stats"] = table
    path.write_text(yaml.safe_dump(profile, sort_keys=False))

    def drop(start: int, change: float) -> None:
        for i in range(start, start + WINDOW):
            image = brighter(posed_part(seed=i), change)
            write_image(site.cameras["cam0"] / f"part-{i:03d}.png", image)

    with DaemonProcess(site) as daemon:
        daemon.wait_ready(300)
        drop(0, 0.0)
        # "inspected" is logged after the result's drift check (and any event) is done
        wait_for(lambda: sum(e.get("event") == "inspected" for e in daemon.events()) == WINDOW,
                 120, daemon, "the steady window's results")  # fmt: skip
        assert _drifts(site.database) == []
        drop(WINDOW, 0.2)
        wait_for(lambda: len(_drifts(site.database)) == 1, 120, daemon, "an image drift")
    (event,) = _drifts(site.database)
    assert event["kind"] == "image" and event["level"] == 0.001 * WINDOW / 4
    (alert,) = _drift_alerts(site.database)
    assert alert["test"] == "image" and alert["statistic"].startswith("luminance_")
    assert "% brighter" in alert["reason"] and "than at calibration" in alert["reason"]
    assert "the lighting or the camera may have changed" in event["reason"]
