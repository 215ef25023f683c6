"""The page in a real browser: Debian's chromium driven by Playwright (no browser is
downloaded). A card for an image dropped into the folder of a running daemon appears
without a reload and its heatmap really loads; filters change the rows; the detail
page's slider changes the overlay.

Without chromium these tests skip, except under CI (``CI=true``), where they fail:
``.ci/run`` installs chromium, and a CI run that silently skipped them would prove
nothing about the page.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from padformer_edge.store.engine import open_engine
from padformer_edge.store.heartbeat import record_heartbeat
from tests.daemon.harness import DaemonProcess, make_site, wait_for, write_image
from tests.detect_images import product_image
from tests.web.conftest import TOKEN
from tests.web.site import Site

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
HEATMAP_LOADED = (
    "(sel) => { const i = document.querySelector(sel);"
    " return !!i && i.complete && i.naturalWidth > 0; }"
)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; under CI the browser tests must run (.ci/run installs it)")
    pytest.skip(reason)


def launch_chromium(playwright: Any) -> Any:
    """Debian's chromium through Playwright, as the tests and the screenshot script use it."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing; install it with 'apt-get install chromium'")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed; pip install -e '.[dev]'")
    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    yield context.new_page()
    context.close()


def _listening_url(daemon: DaemonProcess) -> str:
    found: list[str] = []

    def check() -> bool:
        found[:] = [e["url"] for e in daemon.events() if e.get("event") == "web.listening"]
        return bool(found)

    wait_for(check, 300, daemon, "the web server of the daemon")  # imports on a busy machine
    return found[0]


def test_a_dropped_image_appears_as_a_live_card_without_reload(tmp_path: Path, page: Any) -> None:
    site = make_site(tmp_path, http={"port": 0})
    with DaemonProcess(site) as daemon:
        url = _listening_url(daemon)
        daemon.wait_ready(300)
        page.goto(url + "/")
        page.wait_for_function(
            "() => document.getElementById('stream-state').textContent === 'live'"
        )
        assert page.locator(".card").count() == 0
        page.evaluate("() => { window.notReloaded = true; }")
        dropped = time.monotonic()
        write_image(site.cameras["cam0"] / "part-0001.png", product_image(48, 64, 3))
        page.wait_for_selector(".card", timeout=15_000)
        appeared = time.monotonic() - dropped
        page.wait_for_function(HEATMAP_LOADED, arg=".card img.heatmap", timeout=60_000)
        assert page.evaluate("() => window.notReloaded === true")
        card = page.locator(".card").first
        assert card.locator(".camera").inner_text() == "cam0"
        assert card.locator(".verdict").inner_text().lower() in ("good", "anomaly")
        assert page.evaluate("() => document.querySelector('.card img.image').naturalWidth") > 0
        assert appeared < 15
        assert daemon.terminate() == 0


def _camera_cells(page: Any) -> list[str]:
    return page.locator("#rows tbody tr td:nth-child(3)").all_inner_texts()


def test_filters_change_the_rows(server: Any, site: Site, page: Any) -> None:
    page.goto(server.url + "/history")
    everything = _camera_cells(page)
    assert {"cam-a", "cam-b"} <= set(everything)
    page.select_option("select[name=camera]", "cam-b")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**camera=cam-b**")
    only_b = _camera_cells(page)
    assert only_b and set(only_b) == {"cam-b"} and len(only_b) < len(everything)
    page.select_option("select[name=verdict]", "anomaly")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**verdict=anomaly**")
    verdicts = page.locator("#rows tbody tr").evaluate_all("rows => rows.map(r => r.className)")
    assert verdicts and set(verdicts) == {"verdict-anomaly"}
    assert len(verdicts) < len(only_b)


def test_the_detail_slider_changes_the_overlay(server: Any, site: Site, page: Any) -> None:
    page.goto(f"{server.url}/inspections/{site.anomalies[0]}")
    page.wait_for_function(HEATMAP_LOADED, arg="#overlay")
    opacity = "() => getComputedStyle(document.getElementById('overlay')).opacity"
    assert page.evaluate(opacity) == "0.7"
    page.fill("#opacity", "20")
    assert page.evaluate(opacity) == "0.2"
    assert page.inner_text("#opacity-value") == "20%"
    page.fill("#opacity", "100")
    assert page.evaluate(opacity) == "1"


def test_the_daemon_banner_turns_red_without_a_reload(server: Any, site: Site, page: Any) -> None:
    """A history page left open on a line screen: the daemon stops beating, and within
    one refresh of the page script (5 s) the banner is red, with no reload."""
    engine = open_engine(site.db)
    now = datetime.now(UTC)
    record_heartbeat(engine, interval_s=5.0, started_at=now, pid=1, host="line-pc",
                     status="backlog 0", now=now)  # fmt: skip
    page.goto(server.url + "/history")
    banner = "document.getElementById('daemon-state')"
    assert "red" not in page.evaluate(f"() => {banner}.className").split()
    page.evaluate("() => { window.notReloaded = true; }")
    old = now - timedelta(seconds=60)
    record_heartbeat(engine, interval_s=5.0, started_at=old, pid=1, host="line-pc",
                     status="backlog 0", now=old)  # fmt: skip
    engine.dispose()
    page.wait_for_function(f"() => {banner}.classList.contains('red')", timeout=12_000)
    assert "Daemon silent" in page.inner_text("#daemon-state")
    assert page.evaluate("() => window.notReloaded === true")
    color = page.evaluate(f"() => getComputedStyle({banner}).backgroundColor")
    assert color == "rgb(198, 40, 40)"  # #c62828, the red of style.css


def test_log_in_and_out_in_a_browser(token_server: Any, page: Any) -> None:
    """The login form brings the operator back to the page asked for; the cookie the
    browser holds is not the token; logging out ends the session."""
    page.goto(token_server.url + "/history?camera=cam-a")
    page.fill("input[name=token]", TOKEN)
    page.click("form[action='/login'] button")
    page.wait_for_url("**/history?camera=cam-a")
    assert page.locator("#rows").count() == 1
    cookies = page.context.cookies()
    assert [c["name"] for c in cookies] == ["padformer_session"]
    assert TOKEN not in cookies[0]["value"] and cookies[0]["httpOnly"]
    assert cookies[0]["sameSite"] == "Strict"
    page.click("#logout")
    page.wait_for_url("**/login")
    assert page.context.cookies() == []
    page.goto(token_server.url + "/history")
    assert page.locator("form[action='/login']").count() == 1


NO_PAGE_SCROLL = "() => document.documentElement.scrollWidth <= window.innerWidth"
PAGE_WIDTH = "() => [document.documentElement.scrollWidth, window.innerWidth]"


@pytest.mark.parametrize("width", [390, 1366])
def test_pages_fit_the_screen_width(server: Any, site: Site, page: Any, width: int) -> None:
    """A phone (390 px) and a line PC (1366 px): no page scrolls sideways; a wide table
    scrolls inside its own box instead."""
    page.set_viewport_size({"width": width, "height": 844})
    paths = ["/", "/history", f"/inspections/{site.anomalies[0]}",
             f"/inspections/{site.failed}", "/health"]  # fmt: skip
    for path in paths:
        page.goto(server.url + path)
        page.wait_for_load_state("load")
        assert page.evaluate(NO_PAGE_SCROLL), (path, page.evaluate(PAGE_WIDTH))


def test_history_shows_verdict_threshold_thumbnails_and_the_refused_icon(
    server: Any, site: Site, page: Any
) -> None:
    page.goto(server.url + "/history?limit=500")
    headings = page.locator("#rows thead th").all_inner_texts()
    assert {"verdict", "threshold", "pictures"} <= set(headings)
    page.wait_for_load_state("load")
    refused = f'#rows img[alt="refused file {site.failed}"]'
    assert page.get_attribute(refused, "src") == "/static/refused.svg"
    page.wait_for_function(HEATMAP_LOADED, arg=refused)  # an icon, not a broken image
    heat = f'#rows img[alt="heatmap {site.anomalies[0]}"]'
    page.wait_for_function(HEATMAP_LOADED, arg=heat)
    times = page.locator("#rows td.col-time").all_inner_texts()
    assert times and all(t.count(":") == 2 and not t.endswith("Z") for t in times)
    favicon = page.get_attribute("link[rel=icon]", "href")
    assert (
        page.request.get(server.url + favicon).headers["content-type"].startswith("image/svg+xml")
    )


def test_review_round_trip_in_a_browser(server: Any, site: Site, page: Any) -> None:
    """An operator marks an anomaly a false alarm on its detail page; the page they land
    on shows it at once, and the history's review filter finds it."""
    row = site.anomalies[0]
    page.goto(f"{server.url}/inspections/{row}")
    assert page.inner_text("#review-state") == "Not reviewed yet."
    page.check("#review input[value=false_alarm]")
    page.fill("#review input[name=note]", "glare on the rim")
    page.fill("#review input[name=reviewer]", "ann")
    page.click("#review button[type=submit]")
    page.wait_for_url(f"**/inspections/{row}")
    state = page.inner_text("#review-state")
    assert state.startswith("false alarm by ann") and "glare on the rim" in state
    assert page.is_checked("#review input[value=false_alarm]")
    page.goto(server.url + "/history")
    page.select_option("select[name=review]", "false_alarm")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**review=false_alarm**")
    ids = page.locator("#rows tbody tr td:first-child").all_inner_texts()
    assert ids == [str(row)]
    assert page.inner_text("#rows tbody tr .review") == "false alarm"
