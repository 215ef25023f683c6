"""The candidates gallery in a real browser (Debian's chromium through Playwright, no
browser downloaded): an operator logged in by name sees the candidate and its picture
but no way to decide; an engineer approves it with the card's button, and the operator's
page then shows it approved by that engineer. Skips without chromium, fails under CI,
like every browser test (``tests/web/test_browser.py``)."""

from __future__ import annotations

from typing import Any

from padformer_edge.store.candidates import get_candidate
from padformer_edge.store.engine import open_engine
from padformer_edge.store.vocabulary import CandidateState
from padformer_edge.web.server import WebServer
from tests.web.site import Site
from tests.web.test_browser import browser, page  # noqa: F401  (fixtures)
from tests.web.test_candidates import candidate, people  # noqa: F401  (fixtures)

PICTURE_LOADED = (
    "(sel) => { const i = document.querySelector(sel);"
    " return !!i && i.complete && i.naturalWidth > 0; }"
)


def log_in(page: Any, server: WebServer, name: str, token: str) -> None:  # noqa: F811
    """The login form the page shows anyone without a session, back to the gallery."""
    page.goto(server.url + "/candidates")
    page.wait_for_selector("form[action='/login'] input[name=name]")
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", token)
    page.click("form[action='/login'] button")
    page.wait_for_url("**/candidates")


def test_an_engineer_approves_in_the_browser_an_operator_only_sees(
    server: WebServer,
    site: Site,
    browser: Any,  # noqa: F811
    page: Any,  # noqa: F811
    candidate: int,  # noqa: F811
    people: dict[str, str],  # noqa: F811
) -> None:
    card = f"#candidate-{candidate}"
    log_in(page, server, "ann", people["ann"])
    page.wait_for_function(PICTURE_LOADED, arg=f"{card} img")
    assert "reviewed" in page.inner_text(card)
    assert page.locator(f"{card} button").count() == 0
    assert "Only an engineer approves" in page.inner_text("#decide-login")

    engineer = browser.new_context()
    try:
        bobs = engineer.new_page()
        log_in(bobs, server, "bob", people["bob"])
        assert bobs.locator(f"{card} input[name=engineer]").count() == 0  # signed by login
        bobs.click(f"{card} button[value=approve]")
        bobs.wait_for_selector("#no-candidates")  # back on the pending list, now empty
    finally:
        engineer.close()
    engine = open_engine(site.db)
    decided = get_candidate(engine, candidate)
    engine.dispose()
    assert decided is not None
    assert (decided.state, decided.decided_by) == (CandidateState.approved, "bob")

    page.goto(server.url + "/candidates?state=approved")
    assert "approved by bob" in page.inner_text(card)
    assert page.locator(f"{card} button").count() == 0  # an operator still cannot decide
