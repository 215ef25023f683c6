"""``/events``: the live cards as server-sent events, for as long as a viewer stays.

Starlette's ``StreamingResponse`` sends the stream and ends it when the viewer hangs up
(no traceback, nothing left running); the database is polled in the thread pool once a
second, and a new card list is sent only when a card appears or changes verdict, with a
comment line now and then so proxies and browsers keep the connection. Each poll asks
the gate's question again (``middleware.admitted``, on the user list re-read every
``people.TTL_S``), so the cards follow the viewer's lines as they are now, and the stream
ends once the viewer may see nothing (removed, given a new token, logged out): a change
reaches an open stream within ``TTL_S`` plus a poll. The stream stops when the server
stops, so a shutdown never waits on an open tab.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from padformer_edge.reporting.log import get_logger
from padformer_edge.web import queries
from padformer_edge.web.middleware import admitted
from padformer_edge.web.pages import cards
from padformer_edge.web.responses import web_app

log = get_logger("web")
KEEPALIVE_S = 15.0


def events(request: Request) -> Response:
    """A plain function so the first database open runs in the thread pool (and a
    missing database is the usual 503 before any stream starts)."""
    app = web_app(request)
    engine = app.reader()

    def newest() -> list[dict] | None:
        """The cards this viewer may see now; None once they may see none (removed,
        given a new token, logged out, or a shared-token session once users exist)."""
        allowed, _session, person = admitted(app, request)
        if not allowed:
            return None
        lines = person.lines if person is not None and person.limited else None
        return cards(app, queries.newest(engine, app.live_cards, lines))

    async def stream() -> AsyncIterator[bytes]:
        yield b"retry: 2000\n\n"
        last: list[tuple[int, str]] | None = None
        quiet = 0.0
        while not app.stopping.is_set():
            try:
                shown = await run_in_threadpool(newest)
            except Exception as err:  # the browser reconnects; the page must not hang
                log.error("web.events_failed", error=f"{type(err).__name__}: {err}")
                return
            if shown is None:  # the browser reconnects, and the gate answers it
                log.info("web.events_closed", reason="the viewer may no longer see the page")
                return
            key = [(c["id"], c["verdict"]) for c in shown]
            if key != last:
                last, quiet = key, 0.0
                yield b"event: cards\ndata: " + json.dumps(shown).encode() + b"\n\n"
            elif quiet >= KEEPALIVE_S:
                quiet = 0.0
                yield b": keep-alive\n\n"
            await anyio.sleep(app.event_interval_s)
            quiet += app.event_interval_s

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"X-Accel-Buffering": "no"})  # fmt: skip
