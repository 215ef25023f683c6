"""One function per route: read through ``queries``, render a template or send data.

Handlers receive the app, the request and the path parameters; they raise ``UserError``
for a bad filter (shown as a 400 page with the sentence) and never build HTML by hand.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import select

from padformer_edge.errors import UserError
from padformer_edge.log import get_logger
from padformer_edge.store import Inspection
from padformer_edge.store.history import COLUMNS
from padformer_edge.store.timespec import parse_time
from padformer_edge.web import auth, queries
from padformer_edge.web.http import (
    HTML,
    JSON,
    Request,
    Response,
    json_response,
    redirect,
    text_response,
)
from padformer_edge.web.render import render, static_files

if TYPE_CHECKING:
    from padformer_edge.web.app import WebApp

log = get_logger("web")
# The columns of ``padformer-edge results list``, in its order.
LIST_COLUMNS = ["id", "discovered_at", "camera", "product", "status", "score", "is_anomaly",
                "detect_ms", "source_path"]  # fmt: skip
WINDOWS = {"15m": 15, "1h": 60, "6h": 360, "24h": 1440}
MAX_LIMIT = 500
KEEPALIVE_S = 15.0


def card(row: dict[str, Any]) -> dict[str, Any]:
    """What a live card shows, as JSON-ready values (the page script builds the DOM)."""
    row_id = row["id"]
    return {
        "id": row_id,
        "camera": row["camera"],
        "product": row["product"],
        "time": row["discovered_at"][:19].replace("T", " ") + "Z",
        "score": row["score"],
        "threshold": row["threshold"],
        "verdict": queries.verdict_of(row),
        "error": row["error"],
        "image": f"/media/{row_id}/image",
        "heatmap": f"/media/{row_id}/heatmap" if row["heatmap_path"] else None,
        "detail": f"/inspections/{row_id}",
    }


def _page(template: str, app: WebApp, request: Request, **context: Any) -> Response:
    return Response(200, render(template, app=app, path=request.path, **context), HTML)


def live(app: WebApp, request: Request) -> Response:
    cards = [card(r) for r in queries.newest(app.reader(), app.live_cards)]
    return _page("live.html", app, request, cards=cards)


def live_json(app: WebApp, request: Request) -> Response:
    return json_response([card(r) for r in queries.newest(app.reader(), app.live_cards)])


def events(app: WebApp, request: Request) -> Response:
    """Server-sent events: the card list again whenever a card appears or changes verdict."""
    engine = app.reader()

    def stream() -> Iterator[bytes]:
        yield b"retry: 2000\n\n"
        last: list[tuple[int, str]] | None = None
        quiet = 0.0
        while not app.stopping.is_set():
            try:
                cards = [card(r) for r in queries.newest(engine, app.live_cards)]
            except Exception as err:  # the browser reconnects; the page must not hang
                log.error("web.events_failed", error=f"{type(err).__name__}: {err}")
                return
            key = [(c["id"], c["verdict"]) for c in cards]
            if key != last:
                last, quiet = key, 0.0
                yield b"event: cards\ndata: " + json.dumps(cards).encode() + b"\n\n"
            elif quiet >= KEEPALIVE_S:
                quiet = 0.0
                yield b": keep-alive\n\n"
            app.stopping.wait(app.event_interval_s)
            quiet += app.event_interval_s

    return Response(200, stream(), "text/event-stream")


def history_query(params: dict[str, str]) -> queries.HistoryQuery:
    """The history filters from a query string; a bad value is one sentence."""
    verdict = params.get("verdict") or None
    if verdict is not None and verdict not in queries.VERDICTS:
        raise UserError(
            f"verdict '{verdict}' is not one of {', '.join(queries.VERDICTS)}; pick one."
        )
    numbers = {}
    for name, default in (("before", None), ("limit", 50)):
        raw = params.get(name)
        try:
            numbers[name] = int(raw) if raw else default
        except ValueError as err:
            raise UserError(f"{name} '{raw}' is not a whole number; fix the link.") from err
    limit = numbers["limit"]
    if not 1 <= limit <= MAX_LIMIT:
        raise UserError(f"limit {limit} is out of range; use 1 to {MAX_LIMIT}.")
    since = parse_time(params["since"], "since") if params.get("since") else None
    until = parse_time(params["until"], "until") if params.get("until") else None
    if since and until and since >= until:
        raise UserError("'since' is not before 'until'; swap or widen them.")
    return queries.HistoryQuery(
        camera=params.get("camera") or None,
        product=params.get("product") or None,
        verdict=verdict,  # type: ignore[arg-type]
        since=since,
        until=until,
        before=numbers["before"],
        limit=limit,
    )


def _filter_link(params: dict[str, str], **changes: Any) -> str:
    """A query string with ``changes`` applied and empty values left out."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def history(app: WebApp, request: Request) -> Response:
    query = history_query(request.query)
    engine = app.reader()
    page = queries.history_page(engine, query)
    params = {k: v for k, v in request.query.items() if k != "before"}
    return _page(
        "history.html",
        app,
        request,
        rows=page.rows,
        columns=LIST_COLUMNS,
        verdicts=queries.VERDICTS,
        cameras=queries.distinct_values(engine, "camera"),
        products=queries.distinct_values(engine, "product"),
        params=request.query,
        older=_filter_link(params, before=page.older) if page.older is not None else None,
        export=_filter_link({k: v for k, v in params.items() if k != "limit"}),
        verdict_of=queries.verdict_of,
    )


def export(app: WebApp, request: Request, fmt: str) -> Response:
    """Every row matching the filters (paging ignored), streamed as CSV or a JSON array."""
    query = history_query({k: v for k, v in request.query.items() if k != "before"})
    rows = queries.iter_history(app.reader(), query)

    def as_csv() -> Iterator[bytes]:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for n, row in enumerate(rows, 1):
            writer.writerow(row)
            if n % 500 == 0:
                yield buffer.getvalue().encode()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue().encode()

    def as_json() -> Iterator[bytes]:
        yield b"["
        for n, row in enumerate(rows):
            yield (b"," if n else b"") + json.dumps(row).encode()
        yield b"]\n"

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    disposition = f'attachment; filename="inspections-{stamp}.{fmt}"'
    body = as_csv() if fmt == "csv" else as_json()
    ctype = "text/csv; charset=utf-8" if fmt == "csv" else JSON
    return Response(200, body, ctype, [("Content-Disposition", disposition)])


def detail(app: WebApp, request: Request, inspection_id: int) -> Response:
    row = queries.get_inspection(app.reader(), inspection_id)
    if row is None:
        return app.error_page(request, 404, f"there is no inspection {inspection_id}.")
    fields = card({c: getattr(row, c) if c != "discovered_at" else row.discovered_at.isoformat()
                   for c in COLUMNS})  # fmt: skip
    normalised = row.score / row.threshold if row.score is not None and row.threshold else None
    return _page(
        "detail.html",
        app,
        request,
        row=row,
        card=fields,
        normalised=normalised,
        alerts=row.alerts,
        can_retry=app.token is not None,
    )


def media(app: WebApp, request: Request, inspection_id: int, kind: str) -> Response:
    column = Inspection.source_path if kind == "image" else Inspection.heatmap_path
    with app.reader().connect() as conn:
        recorded = conn.execute(
            select(column).where(Inspection.id == inspection_id)
        ).scalar_one_or_none()
    picture = app.media.read(recorded)
    if picture is None:
        return text_response(404, f"no {kind} can be shown for inspection {inspection_id}.")
    return Response(200, picture.data, picture.content_type,
                    [("Cache-Control", "private, max-age=60")])  # fmt: skip


def health(app: WebApp, request: Request) -> Response:
    window = request.query.get("window", "1h")
    if window not in WINDOWS:
        raise UserError(f"window '{window}' is not one of {', '.join(WINDOWS)}; pick one.")
    minutes = WINDOWS[window]
    since = datetime.now(UTC) - timedelta(minutes=minutes)
    report = queries.health(app.reader(), since, float(minutes))
    return _page(
        "health.html",
        app,
        request,
        report=report,
        window=window,
        windows=list(WINDOWS),
        beat=app.heartbeat(),
        can_retry=app.token is not None,
    )


def metrics(app: WebApp, request: Request) -> Response:
    return Response(200, app.metrics.render(), CONTENT_TYPE_LATEST)


def static(app: WebApp, request: Request, name: str) -> Response:
    found = static_files().get(name)
    if found is None:
        return text_response(404, "there is no such file.")
    data, ctype = found
    return Response(200, data, ctype, [("Cache-Control", "public, max-age=300")])


def unauthorised(app: WebApp, request: Request) -> Response:
    if "text/html" in request.headers.get("accept", "") and request.method == "GET":
        body = render("login.html", app=app, path=request.path, failed=False,
                      next=request.path)  # fmt: skip
        return Response(401, body, HTML)
    return Response(
        401,
        b"a token is required; send 'Authorization: Bearer TOKEN' or log in at /login.\n",
        "text/plain; charset=utf-8",
        [("WWW-Authenticate", 'Bearer realm="padformer-edge"')],
    )


def login_form(app: WebApp, request: Request) -> Response:
    target = auth.safe_next(request.query.get("next"))
    return _page("login.html", app, request, failed=False, next=target)


def login(app: WebApp, request: Request) -> Response:
    form = request.form()
    target = auth.safe_next(form.get("next"))
    if app.token is None:
        return redirect(target)
    if not auth.token_matches(form.get("token"), app.token):
        body = render("login.html", app=app, path=request.path, failed=True, next=target)
        return Response(401, body, HTML)
    response = redirect(target)
    response.headers.append(("Set-Cookie", auth.login_cookie(app.token)))
    return response


def retry(app: WebApp, request: Request, alert_id: int) -> Response:
    """The one write: queue a dead alert again. Needs a token, and the page's own origin."""
    if app.token is None:
        return text_response(
            403,
            "retrying alerts needs a token; set http.token or $PADFORMER_EDGE_HTTP_TOKEN "
            "and log in.",
        )
    if not auth.same_origin(request):
        return text_response(403, "this request did not come from this server's own page.")
    queries.retry_alert(app.writer(), alert_id)
    log.info("web.alert_retried", alert=alert_id)
    target = request.form().get("next")
    if target is not None:
        return redirect(auth.safe_next(target))
    return json_response({"retried": alert_id})
