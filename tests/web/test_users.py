"""Named users on a real server on 127.0.0.1, over the real store: people log in by name
with their own token, the page then asks everyone for a login, reviews are signed by
the person logged in and every verdict is kept; the shared token reads but neither
reviews, retries nor opens a browser session; a wrong personal token counts in the
same per-address throttle as a wrong bearer token; a reset token or a removed user ends
the sessions opened before."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from urllib.parse import urlencode

import pytest
from structlog.testing import capture_logs

from padformer_edge.store.engine import open_engine
from padformer_edge.store.users import add_user, remove_user, reset_token
from padformer_edge.store.vocabulary import Role
from padformer_edge.web.server import WebServer
from tests.web.client import Reply, request
from tests.web.conftest import TOKEN
from tests.web.site import Site

BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def people(site: Site) -> dict[str, str]:
    """Two users of the site's database: their tokens by name."""
    engine = open_engine(site.db)
    tokens = {"ann": add_user(engine, "ann", Role.operator)[1],
              "bob": add_user(engine, "bob", Role.engineer)[1]}  # fmt: skip
    engine.dispose()
    return tokens


def _login(server: WebServer, name: str, token: str, target: str = "/history") -> Reply:
    body = urlencode({"name": name, "token": token, "next": target}).encode()
    return request(server.url, "/login", method="POST", headers={"Origin": server.url},
                   body=body)  # fmt: skip


def _cookie(reply: Reply) -> str:
    assert reply.status == 303, reply.text
    return reply.headers["set-cookie"].split(";")[0]


def _review(server: WebServer, row: int, headers: dict[str, str], **form: str) -> Reply:
    return request(server.url, f"/inspections/{row}/review", method="POST",
                   headers={"Origin": server.url, **headers},
                   body=urlencode(form).encode())  # fmt: skip


def test_people_log_in_by_name_and_sign_their_reviews(
    server: WebServer, site: Site, people: dict[str, str]
) -> None:
    """A loopback page without a shared token: once users exist it asks for a login,
    and each review carries who gave it; a changed verdict keeps the first one."""
    row = site.anomalies[0]
    assert request(server.url, "/history").status == 401
    form = request(server.url, "/login", headers={"Accept": "text/html"}).text
    assert 'name="name"' in form and 'name="token"' in form
    ann = {"Cookie": _cookie(_login(server, "Ann", people["ann"]))}
    bob = {"Cookie": _cookie(_login(server, "bob", people["bob"]))}
    page = request(server.url, f"/inspections/{row}", headers={**ann, "Accept": "text/html"})
    assert '<span id="who">ann (operator)</span>' in page.text
    assert 'name="reviewer"' not in page.text and "as ann" in page.text
    # A typed name is ignored: the review is signed by whoever is logged in.
    first = _review(server, row, ann, verdict="false_alarm", note="dust", reviewer="bob")
    assert first.status == 200 and json.loads(first.body)["reviewed_by"] == "ann"
    second = _review(server, row, bob, verdict="true_defect", note="a crack after all")
    assert second.status == 200 and json.loads(second.body)["reviewed_by"] == "bob"
    detail = request(server.url, f"/inspections/{row}", headers={**ann, "Accept": "text/html"})
    state = re.search(r'<p id="review-state">(.*?)</p>', detail.text).group(1)
    assert "true defect</span> by bob" in state and "a crack after all" in state
    earlier = re.search(r'<details id="review-history">(.*?)</details>', detail.text, re.S)
    assert earlier and "Earlier verdicts (1)" in earlier.group(1)
    assert "false alarm</span> by ann" in earlier.group(1) and "dust" in earlier.group(1)
    listed = request(server.url, "/history.csv?review=reviewed", headers=ann).text
    assert f"{row}," in listed and ",true_defect,a crack after all,bob," in listed


def test_the_shared_token_reads_but_does_not_review_or_log_in(
    serve: Callable[..., WebServer], site: Site, people: dict[str, str]
) -> None:
    server = serve(token=TOKEN)
    row = site.anomalies[1]
    assert request(server.url, "/metrics", headers=BEARER).status == 200
    assert request(server.url, "/history", headers=BEARER).status == 200
    refused = _review(server, row, BEARER, verdict="false_alarm", reviewer="ann")
    assert refused.status == 403 and "needs a named login" in refused.text
    retry = request(server.url, f"/alerts/{site.dead_alert}/retry", method="POST",
                    headers={"Origin": server.url, **BEARER}, body=b"")  # fmt: skip
    assert retry.status == 403
    shared = _login(server, "", TOKEN)
    assert shared.status == 401 and "set-cookie" not in shared.headers
    assert "The shared token is for scripts" in shared.text
    detail = request(server.url, f"/inspections/{row}", headers={**BEARER, "Accept": "text/html"})
    assert 'id="review-login"' in detail.text and 'id="review"' not in detail.text
    ann = {"Cookie": _cookie(_login(server, "ann", people["ann"]))}
    assert _review(server, row, ann, verdict="false_alarm").status == 200


def test_a_shared_token_session_ends_when_the_first_user_is_added(
    token_server: WebServer, site: Site
) -> None:
    """Before users the shared token logs a browser in, as it always did; adding the
    first user turns that session into a login form."""
    jar = {"Cookie": _cookie(_login(token_server, "", TOKEN))}
    assert request(token_server.url, "/history", headers=jar).status == 200
    engine = open_engine(site.db)
    add_user(engine, "ann", Role.operator)
    engine.dispose()
    token_server.app.people.forget()  # the page re-reads its users every few seconds
    assert request(token_server.url, "/history", headers=jar).status == 401


def test_wrong_personal_tokens_share_the_bearer_tokens_throttle(
    serve: Callable[..., WebServer], people: dict[str, str]
) -> None:
    server = serve(token=TOKEN)
    limit = server.app.throttle.max_failures
    with capture_logs() as logs:
        for n in range(limit - 2):
            assert _login(server, "ann", f"guess-{n}").status == 401
        assert _login(server, "nobody", people["ann"]).status == 401
        wrong = request(server.url, "/history", headers={"Authorization": "Bearer nope-x"})
        assert wrong.status == 401
        refused = _login(server, "ann", people["ann"])
    assert refused.status == 429 and int(refused.headers["retry-after"]) > 0
    assert "set-cookie" not in refused.headers
    failed = [e for e in logs if e["event"] == "web.login_failed"]
    assert len(failed) == limit and {e.get("user") for e in failed} >= {"ann", "nobody"}
    assert all(people["ann"] not in repr(e) for e in logs)


@pytest.mark.parametrize("change", ["reset-token", "remove"])
def test_a_reset_token_or_a_removed_user_ends_their_sessions(
    server: WebServer, site: Site, people: dict[str, str], change: str
) -> None:
    ann = {"Cookie": _cookie(_login(server, "ann", people["ann"]))}
    bob = {"Cookie": _cookie(_login(server, "bob", people["bob"]))}
    engine = open_engine(site.db)
    if change == "reset-token":
        _, new_token = reset_token(engine, "ann")
    else:
        remove_user(engine, "ann")
    engine.dispose()
    server.app.people.forget()  # the page re-reads its users every few seconds
    assert request(server.url, "/history", headers=ann).status == 401
    assert request(server.url, "/history", headers=bob).status == 200
    assert _login(server, "ann", people["ann"]).status == 401
    if change == "reset-token":
        assert _login(server, "ann", new_token).status == 303
