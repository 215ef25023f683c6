"""The one-second page cache: one render shared by viewers arriving together, nothing
but 200s kept, emptied by a write, and never a page built for another kind of viewer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from anyio import to_thread
from starlette.responses import HTMLResponse, Response

from padformer_edge.web import render_queue as render_queue_module
from padformer_edge.web.page_cache import PageCache
from padformer_edge.web.server import WebServer
from tests.web.client import request
from tests.web.conftest import TOKEN


def _counting(status: int = 200) -> tuple[list[int], Callable[[], Response]]:
    built: list[int] = []

    def build() -> Response:
        built.append(1)
        time.sleep(0.05)  # long enough that the other threads arrive while it runs
        return HTMLResponse(f"<p>page {len(built)}</p>", status)

    return built, build


def test_viewers_arriving_together_share_one_render() -> None:
    cache = PageCache(ttl_s=60)
    built, build = _counting()
    bodies: list[bytes] = []
    threads = [threading.Thread(target=lambda: bodies.append(cache.get(("/",), build).body))
               for _ in range(20)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and set(bodies) == {b"<p>page 1</p>"}
    assert cache.get(("/history",), build).body == b"<p>page 2</p>"  # another key
    cache.clear()
    assert cache.get(("/",), build).body == b"<p>page 3</p>"


def test_only_successes_are_kept_and_only_for_the_ttl() -> None:
    failing, build_error = _counting(status=400)
    cache = PageCache(ttl_s=60)
    assert cache.get(("/bad",), build_error).status_code == 400
    assert cache.get(("/bad",), build_error).status_code == 400
    assert len(failing) == 2
    short = PageCache(ttl_s=0.1)
    built, build = _counting()
    short.get(("/",), build)
    time.sleep(0.2)
    assert short.get(("/",), build).body == b"<p>page 2</p>"
    off = PageCache(ttl_s=0)
    built, build = _counting()
    off.get(("/",), build), off.get(("/",), build)
    assert len(built) == 2


def test_a_logged_in_page_is_not_served_to_a_script_and_back(token_server: WebServer) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}", "Accept": "text/html"}
    as_script = request(token_server.url, "/history", headers=bearer).text
    login = request(token_server.url, "/login", method="POST",
                    body=urlencode({"token": TOKEN, "next": "/history"}).encode())  # fmt: skip
    cookie = login.headers["set-cookie"].split(";")[0]
    as_browser = request(token_server.url, "/history",
                         headers={"Cookie": cookie, "Accept": "text/html"}).text  # fmt: skip
    assert 'id="logout"' in as_browser and 'id="logout"' not in as_script
    stranger = request(token_server.url, "/history", headers={"Accept": "text/html"})
    assert stranger.status == 401 and 'id="rows"' not in stranger.text


def test_an_expired_page_is_sent_while_one_viewer_renders_it_anew() -> None:
    cache = PageCache(ttl_s=0.05)
    built, build = _counting()
    cache.get(("/",), build)
    time.sleep(0.1)  # expired now
    bodies: list[bytes] = []
    renderer = threading.Thread(target=lambda: bodies.append(cache.get(("/",), build).body))
    renderer.start()
    time.sleep(0.01)  # the renderer holds the key; this viewer does not wait for it
    assert cache.get(("/",), build).body == b"<p>page 1</p>"
    renderer.join()
    assert bodies == [b"<p>page 2</p>"] and len(built) == 2


def test_a_render_overtaken_by_a_clear_is_not_kept() -> None:
    cache = PageCache(ttl_s=60)
    built: list[int] = []

    def build() -> Response:
        built.append(1)
        if len(built) == 1:
            cache.clear()  # a write landed while this page was being rendered
        return HTMLResponse(f"<p>page {len(built)}</p>")

    assert cache.get(("/",), build).body == b"<p>page 1</p>"
    assert cache.get(("/",), build).body == b"<p>page 2</p>"
    assert cache.get(("/",), build).body == b"<p>page 2</p>"


def test_the_event_loop_gets_only_a_fresh_page_and_never_a_cleared_one() -> None:
    """``fresh`` is what the event loop answers without the thread pool: a kept page
    within its second, nothing once it expired (the pool renders it) or was cleared."""
    cache = PageCache(ttl_s=0.1)
    built, build = _counting()
    assert cache.fresh(("/",)) is None
    cache.get(("/",), build)
    kept = cache.fresh(("/",))
    assert kept is not None and kept.body == b"<p>page 1</p>" and kept.status_code == 200
    assert kept.headers["content-type"].startswith("text/html")
    time.sleep(0.15)
    assert cache.fresh(("/",)) is None
    cache.get(("/",), build)
    cache.clear()
    assert cache.fresh(("/",)) is None and len(built) == 2


def test_a_fresh_page_is_served_without_a_worker_thread(
    server: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While it is fresh the same page comes back byte for byte, and the server's thread
    pool is not asked for it: only a render goes there."""
    server.app.page_cache.ttl_s = 60  # fresh for the whole test, however slow the machine
    pooled: list[object] = []

    class Counting:  # ``asgi.cached`` renders through the queue's ``to_thread.run_sync``
        @staticmethod
        async def run_sync(func: Callable[..., Any], *args: Any, **options: Any) -> Any:
            pooled.append(func)
            return await to_thread.run_sync(func, *args, **options)

    monkeypatch.setattr(render_queue_module, "to_thread", Counting)
    first = request(server.url, "/history", headers={"Accept": "text/html"})
    assert len(pooled) == 1  # rendered in the pool
    again = request(server.url, "/history", headers={"Accept": "text/html"})
    assert first.status == again.status == 200 and again.text == first.text
    assert len(pooled) == 1


def test_the_kept_page_is_there_however_old_until_a_clear() -> None:
    """What ``asgi.cached`` sends on the event loop while another viewer's render of an
    expired page is waiting or under way: the last page kept, never a failed one."""
    cache = PageCache(ttl_s=0.05)
    built, build = _counting()
    assert cache.kept(("/",)) is None
    assert cache.get(("/",), build).body == b"<p>page 1</p>"
    time.sleep(0.1)  # expired now
    assert cache.fresh(("/",)) is None
    assert cache.kept(("/",)).body == b"<p>page 1</p>"  # what the others are sent meanwhile
    assert cache.get(("/",), build).body == b"<p>page 2</p>"
    assert cache.kept(("/",)).body == b"<p>page 2</p>" and len(built) == 2
    cache.clear()
    assert cache.kept(("/",)) is None
    failing = PageCache(ttl_s=60)
    assert failing.get(("/",), _counting(500)[1]).status_code == 500
    assert failing.kept(("/",)) is None
