"""Screenshots of the operator's page for the docs: the live view and one inspection.

They show a real run. By default the daemon itself runs (``watch`` with an ``http:``
section and a token, as the browser tests start it: the tiny random-weight model, two
cameras, alerts to a command and to a webhook nobody answers) on synthetic parts, some
with a pasted defect, so cards, heatmaps and alerts are what the daemon wrote; the
heatmaps of an untrained model show the page, not detection quality. ``--demo DIR``
serves a folder of ``padformer-edge demo --out DIR`` instead (trained heatmaps). Pages
are photographed by Debian's chromium through Playwright (no browser download).

    python benchmarks/web_screenshots.py [--demo DIR] [--out docs]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import select  # noqa: E402

from padformer_edge.store.migrations import open_checked  # noqa: E402
from padformer_edge.store.models import Inspection, Status  # noqa: E402
from padformer_edge.web.config import HttpConfig  # noqa: E402
from padformer_edge.web.server import make_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
# Scores of the tiny random-weight model on these parts straddle this threshold.
THRESHOLD = 16_000.0
TOKEN = "screenshot-token-0123456789"
ALL_IMAGES_LOADED = "() => [...document.images].every(i => i.complete && i.naturalWidth > 0)"


def _alerts_settled(database: Path) -> Callable[[], bool]:
    def check() -> bool:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
        try:
            return not conn.execute("SELECT 1 FROM alerts WHERE state = 'pending'").fetchall()
        finally:
            conn.close()

    return check


def run_daemon_site(folder: Path, parts: int = 8) -> tuple[str, Callable[[], None]]:
    """A daemon with its page on two camera folders, fed ``parts`` images; alerts go to a
    command that succeeds and to a webhook nobody answers (so one turns up dead, with
    its retry button). Returns the page's URL and a function that stops the daemon."""
    from tests.daemon.harness import DaemonProcess, make_site, settled, wait_for, write_image
    from tests.detect_images import product_image, with_defect

    alerts = {
        "sinks": {
            "logbook": {"type": "command", "argv": ["true"]},
            "line-lamp": {"type": "webhook", "url": "http://127.0.0.1:9/alert", "timeout_s": 1},
        },
        "cooldown_s": 0,
        "max_attempts": 2,
        "backoff_base_s": 0.2,
        "backoff_max_s": 0.5,
        "poll_interval_s": 0.2,
    }
    site = make_site(folder, cameras=("line-1", "line-2"), threshold=THRESHOLD,
                     http={"port": 0, "token": TOKEN}, alerts=alerts)  # fmt: skip
    daemon = DaemonProcess(site)
    daemon.wait_ready(600)
    url = next(e["url"] for e in daemon.events() if e.get("event") == "web.listening")
    for i in range(parts):
        image = product_image(192, 256, seed=i)
        if i % 3 == 2:
            image = with_defect(image, (60 + 7 * i, 40 + 11 * i, 24, 30))
        camera = ("line-1", "line-2")[i % 2]
        write_image(site.cameras[camera] / f"part-{i:04d}.png", image)
    wait_for(settled(site.database, parts), 600, daemon, "every part inspected")
    wait_for(_alerts_settled(site.database), 120, daemon, "every alert sent or dead")

    def stop() -> None:
        daemon.terminate()

    return url, stop


def detail_id(db: str) -> int:
    """The newest anomalous inspection (else the newest finished one)."""
    engine = open_checked(db)
    with engine.connect() as conn:
        done = select(Inspection.id).where(Inspection.status == Status.done)
        found = (
            conn.execute(
                done.where(Inspection.is_anomaly.is_(True)).order_by(Inspection.id.desc())
            ).first()
            or conn.execute(done.order_by(Inspection.id.desc())).first()
        )
    engine.dispose()
    if found is None:
        raise SystemExit("the demo history has no finished inspection to show")
    return int(found[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, help="An existing demo folder to serve.")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        if args.demo is not None:
            db = str(args.demo / "results.sqlite3")
            roots = [args.demo / "camera", args.demo / "heatmaps"]
            server = make_server(HttpConfig(port=0), db, roots).start()
            url, stop = server.url, server.stop
        else:
            url, stop = run_daemon_site(Path(tmp))
            db = str(Path(tmp) / "state" / "results.sqlite3")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                if args.demo is None:  # the daemon's page has a token: log in as a person would
                    page.goto(url + "/login")
                    page.fill("input[name=token]", TOKEN)
                    page.click("form button[type=submit]")
                    page.wait_for_url(url + "/")
                page.goto(url + "/")
                page.wait_for_function(
                    "() => document.getElementById('stream-state').textContent === 'live'"
                )
                page.wait_for_function(ALL_IMAGES_LOADED)
                args.out.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out / "web_live.png"))
                page.goto(f"{url}/inspections/{detail_id(db)}")
                page.wait_for_function(ALL_IMAGES_LOADED)
                page.fill("#opacity", "60")
                page.screenshot(path=str(args.out / "web_detail.png"), full_page=True)
                browser.close()
        finally:
            stop()
    print(f"wrote {args.out / 'web_live.png'} and {args.out / 'web_detail.png'}")


if __name__ == "__main__":
    main()
