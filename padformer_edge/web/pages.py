"""One function per route: read through ``queries``, render a template or send data.

Handlers receive the Starlette request (the ``WebApp`` is ``web_app(request)``, path
parameters are already converted); they raise ``UserError`` for a bad filter (shown as
a 400 page with the sentence) and never build HTML by hand. Handlers that read the
database are plain functions, which Starlette runs in its bounded thread pool; ``retry``
and ``review`` read a form body, so they are coroutines. The live stream is in ``events``, login and
logout in ``login``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.candidates import decide, get_candidate, list_candidates
from padformer_edge.store.csv_cells import SafeDictWriter
from padformer_edge.store.drift import open_drift_events
from padformer_edge.store.history import RECORD_COLUMNS
from padformer_edge.store.models import Inspection, ReviewVerdict
from padformer_edge.store.reviews import save_review
from padformer_edge.store.timespec import parse_time
from padformer_edge.store.vocabulary import REVIEW_FILTERS, CandidateState, Role
from padformer_edge.web import auth, queries
from padformer_edge.web.daemon_state import daemon_state
from padformer_edge.web.plant_view import line_summaries
from padformer_edge.web.render import when
from padformer_edge.web.responses import error, page, person_of, read_form, text, web_app
from padformer_edge.web.scope import lines_of, sees, visible

if TYPE_CHECKING:
    from padformer_edge.web.webapp import WebApp

log = get_logger("web")
# The history table: (row key, heading). Verdict and threshold sit beside the score so a
# row reads on its own; "pictures" is the thumbnail pair (or the refused icon). The
# headings are drawn from this list; history.html writes each row's cells in its order.
HISTORY_COLUMNS = [("id", "id"), ("discovered_at", "time"), ("line", "line"),
                   ("camera", "camera"),
                   ("product", "profile"), ("verdict", "verdict"), ("review", "review"),
                   ("score", "score"),
                   ("threshold", "threshold"), ("detect_ms", "detect ms"),
                   ("pictures", "pictures"), ("source_path", "file")]  # fmt: skip
REFUSED_ICON = "/static/refused.svg"
WINDOWS = {"15m": 15, "1h": 60, "6h": 360, "24h": 1440}
MAX_LIMIT = 500
MAX_ROW_ID = 2**63 - 1  # the largest id a 64-bit database column holds
WHOLE_NUMBER = re.compile(r"-?[0-9]+")
MAX_TEXT_CHARS = 200  # a line, camera or product name; longer is no name the daemon wrote


def whole_number(
    params: dict[str, str], name: str, default: int | None, low: int, high: int
) -> int | None:
    """Query parameter ``name`` as an int in ``low..high``; ``default`` when absent.

    Checked here, not left to the database: a number past 64 bits used to reach the
    driver and come back as a 500 (``OverflowError``)."""
    raw = params.get(name)
    if not raw:
        return default
    shown = raw if len(raw) <= 40 else raw[:40] + "..."
    if WHOLE_NUMBER.fullmatch(raw) is None:
        raise UserError(f"{name} '{shown}' is not a whole number; fix the link.")
    # Past 30 digits it is out of range whatever it is; int() is spared a huge string.
    if len(raw.lstrip("-")) > 30 or not low <= int(raw) <= high:
        raise UserError(f"{name} {shown} is out of range; use {low} to {high}.")
    return int(raw)


def plain_text(params: dict[str, str], name: str) -> None:
    """Refuse a text filter no row can match: too long, or with a control character
    (PostgreSQL refuses a NUL in a string outright)."""
    raw = params.get(name)
    if raw is None:
        return
    if len(raw) > MAX_TEXT_CHARS:
        raise UserError(f"{name} is longer than {MAX_TEXT_CHARS} characters; fix the link.")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise UserError(f"{name} contains a control character; fix the link.")


def card(row: dict[str, Any], here: bool, own: bool) -> dict[str, Any]:
    """What a live card shows, as JSON-ready values (the page script builds the DOM).

    ``here`` says whether this server holds the row's picture (``cards``), ``own``
    whether the row is of this server's own line (``WebApp.line``). A picture not here
    of another line's row, as on the plant's page, is kept on that line's PC: the card
    names the line (``elsewhere``). One of the server's own line is no longer on this
    PC (removed, or moved out of the folders the page may show): the card says so
    (``removed``). Neither shows a thumbnail, which could only be a broken image."""
    row_id = row["id"]
    verdict = queries.verdict_of(row)
    # A refused file is often not a picture at all: an icon rather than a broken image.
    refused = verdict == "failed"
    missing = not here and not refused
    elsewhere = row["line"] if missing and not own else None
    removed = missing and own
    shown = not missing
    return {
        "id": row_id,
        "line": row["line"],
        "camera": row["camera"],
        "product": row["product"],
        "time": when(row["discovered_at"]),
        "score": row["score"],
        "threshold": row["threshold"],
        "verdict": verdict,
        "error": row["error"],
        "image": REFUSED_ICON if refused else f"/media/{row_id}/image",
        "heatmap": f"/media/{row_id}/heatmap" if row["heatmap_path"] else None,
        # What the live cards and history rows show: small cached copies (``thumbnails``).
        "thumb": REFUSED_ICON if refused else f"/thumbs/{row_id}/image" if shown else None,
        "heatmap_thumb": (
            f"/thumbs/{row_id}/heatmap" if row["heatmap_path"] and shown else None
        ),
        "elsewhere": elsewhere,
        "removed": removed,
        "detail": f"/inspections/{row_id}",
        "review": row.get("review"),
    }


def cards(app: WebApp, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cards of ``rows``, each knowing whether this server holds its picture: the
    same rule as the detail page (``picture_here``), so a card never shows a thumbnail
    its detail page would not."""
    return [card(row, picture_here(app, row["line"], row["source_path"]) is not None,
                 row["line"] == app.line) for row in rows]  # fmt: skip


def picture_here(app: WebApp, line: str, recorded: str | None) -> Path | None:
    """The file of a picture a row of ``line`` recorded, when this server holds it: only
    a row of this server's own line (``WebApp.line``) has its pictures here. Another
    line's pictures stay on that line's PC, whatever file its recorded path names on
    this one (every line numbers its heatmaps from 1 under its own state folder, so
    ``heatmaps/00000/1.jpg`` of press-t names a press-a file here)."""
    return app.media.allowed(recorded) if line == app.line else None


def pictures_elsewhere(line: str) -> str:
    """What the detail page and the picture routes say of another line's pictures."""
    return f"The pictures are not on this server: they stay on line {line}'s PC"


def query_of(request: Request) -> dict[str, str]:
    """The query string as a dict, blank values left out (an empty form field means
    "any"), the last value of a repeated key winning."""
    return {k: v for k, v in request.query_params.items() if v}


def live(request: Request) -> Response:
    """The newest cards, under every open drift event (shown until acknowledged)."""
    app, lines = web_app(request), lines_of(request)
    newest = cards(app, queries.newest(app.reader(), app.live_cards, lines))
    drifts = [d for d in open_drift_events(app.reader()) if sees(request, d.line)]
    return page(request, "live.html", cards=newest, drifts=drifts)


def live_json(request: Request) -> Response:
    app, lines = web_app(request), lines_of(request)
    return JSONResponse(cards(app, queries.newest(app.reader(), app.live_cards, lines)))


def heartbeat_json(request: Request) -> Response:
    """What the banner on every page polls: the daemon's state as ``base.html`` shows it."""
    return JSONResponse(daemon_state(web_app(request), lines_of(request)).as_json())


def history_query(
    params: dict[str, str], lines: frozenset[str] | None = None
) -> queries.HistoryQuery:
    """The history filters from a query string (within the viewer's ``lines``, when
    limited: ``scope``); a bad value is one sentence."""
    verdict = params.get("verdict") or None
    if verdict is not None and verdict not in queries.VERDICTS:
        raise UserError(
            f"verdict '{verdict}' is not one of {', '.join(queries.VERDICTS)}; pick one."
        )
    review = params.get("review") or None
    if review is not None and review not in REVIEW_FILTERS:
        raise UserError(f"review '{review}' is not one of {', '.join(REVIEW_FILTERS)}; pick one.")
    before = whole_number(params, "before", None, 1, MAX_ROW_ID)
    limit = whole_number(params, "limit", 50, 1, MAX_LIMIT)
    for name in ("line", "camera", "product"):
        plain_text(params, name)
    since = parse_time(params["since"], "since") if params.get("since") else None
    until = parse_time(params["until"], "until") if params.get("until") else None
    if since and until and since >= until:
        raise UserError("'since' is not before 'until'; swap or widen them.")
    return queries.HistoryQuery(
        line=params.get("line") or None,
        camera=params.get("camera") or None,
        product=params.get("product") or None,
        verdict=verdict,  # type: ignore[arg-type]
        review=review,  # type: ignore[arg-type]
        since=since,
        until=until,
        before=before,
        limit=limit,
        lines=lines,
    )


def _filter_link(params: dict[str, str], **changes: Any) -> str:
    """A query string with ``changes`` applied and empty values left out."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def history(request: Request) -> Response:
    app, params = web_app(request), query_of(request)
    query = history_query(params, lines_of(request))
    found = queries.history_page(app.reader(), query)
    kept = {k: v for k, v in params.items() if k != "before"}
    return page(
        request,
        "history.html",
        rows=found.rows,
        columns=HISTORY_COLUMNS,
        cards={c["id"]: c for c in cards(app, found.rows)},
        verdicts=queries.VERDICTS,
        reviews=REVIEW_FILTERS,
        lines=visible(request, app.listing("line")),
        cameras=app.listing("camera"),
        products=app.listing("product"),
        params=params,
        older=_filter_link(kept, before=found.older) if found.older is not None else None,
        export=_filter_link({k: v for k, v in kept.items() if k != "limit"}),
        verdict_of=queries.verdict_of,
    )


def export(request: Request) -> Response:
    """Every row matching the filters (paging ignored), streamed as CSV or a JSON array."""
    fmt = request.path_params["fmt"]
    if fmt not in ("csv", "json"):
        return error(request, 404, "there is no such page.")
    query = history_query({k: v for k, v in query_of(request).items() if k != "before"},
                          lines_of(request))  # fmt: skip
    rows = queries.iter_history(web_app(request).reader(), query)

    def as_csv() -> Iterator[bytes]:
        buffer = io.StringIO()
        writer = SafeDictWriter(buffer, fieldnames=RECORD_COLUMNS, lineterminator="\n")
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
    ctype = "text/csv; charset=utf-8" if fmt == "csv" else "application/json"
    return StreamingResponse(body, media_type=ctype,
                             headers={"Content-Disposition": disposition})  # fmt: skip


def detail(request: Request) -> Response:
    app, inspection_id = web_app(request), request.path_params["inspection_id"]
    found = queries.detail(app.reader(), inspection_id)
    if found is None or not sees(request, found.row.line):  # another line's: as if absent
        return error(request, 404, f"there is no inspection {inspection_id}.")
    row = found.row
    pictures_here = picture_here(app, row.line, row.source_path) is not None
    fields = card(row._asdict(), pictures_here, row.line == app.line)
    normalised = row.score / row.threshold if row.score is not None and row.threshold else None
    # an anomaly without alerts was held back by the cooldown: say so, and after which
    held_back = bool(row.is_anomaly) and not found.alerts
    return page(
        request,
        "detail.html",
        row=row,
        card=fields,
        normalised=normalised,
        alerts=found.alerts,
        held_back=held_back,
        held_back_after=found.held_back_after,
        can_retry=may_retry(request),
        review=found.review,
        reviews=found.reviews,
        can_review=row.status.value == "done",
        named=app.people.exist(),
        review_verdicts=[v.value for v in ReviewVerdict],
        pictures_here=pictures_here,
        elsewhere_said=pictures_elsewhere(row.line),
        line_url=app.line_urls.get(row.line),
        line_link=line_link(app.line_urls.get(row.line), row),
    )


def line_link(base: str | None, row: queries.Shown) -> str | None:
    """The row on its line's own page (``http.line_urls``): that page's history at the
    row's line, camera and discovery time, which the plant database keeps as the line
    wrote them (the plant's id is not the line's)."""
    if base is None:
        return None
    at = row.discovered_at
    query = {"line": row.line, "camera": row.camera, "since": at.isoformat(),
             "until": (at + timedelta(milliseconds=1)).isoformat()}  # fmt: skip
    return f"{base}/history?{urlencode(query)}"


def _recorded(request: Request) -> tuple[str, str | None, str | None] | None:
    """(kind, the path the store recorded, the row's line) for a picture route; ``None``
    for an unknown kind; no path nor line for a row that does not exist, or of a line
    this viewer may not see."""
    inspection_id, kind = request.path_params["inspection_id"], request.path_params["kind"]
    if kind not in ("image", "heatmap"):
        return None
    column = Inspection.source_path if kind == "image" else Inspection.heatmap_path
    with web_app(request).reader().connect() as conn:
        found = conn.execute(
            select(column, Inspection.line).where(Inspection.id == inspection_id)
        ).first()
    if found is None or not sees(request, found[1]):  # another line's row: as if absent
        return kind, None, None
    return kind, found[0], found[1]


def _not_shown(request: Request, kind: str, line: str | None) -> Response:
    """The 404 of a picture route: another line's row says where its pictures are, as
    its detail page does; anything else says there is none to show."""
    app, inspection_id = web_app(request), request.path_params["inspection_id"]
    if line is not None and line != app.line:
        link = app.line_urls.get(line)
        where = f"; open inspection {inspection_id} on its own page at {link}" if link else ""
        return text(404, f"{pictures_elsewhere(line)}{where}.")
    return text(404, f"no {kind} can be shown for inspection {inspection_id}.")


def media(request: Request) -> Response:
    """The full picture, for the detail page."""
    found = _recorded(request)
    if found is None:
        return error(request, 404, "there is no such page.")
    kind, recorded, line = found
    app = web_app(request)
    own = line is not None and line == app.line  # ``picture_here``'s rule
    picture = app.media.read(recorded, app.conversions) if own else None
    if picture is None:
        return _not_shown(request, kind, line)
    return Response(picture.data, media_type=picture.content_type,
                    headers={"Cache-Control": "private, max-age=60"})  # fmt: skip


def thumbnail(request: Request) -> Response:
    """A small JPEG of the picture, for the live cards and history rows; the same file
    rules as ``media`` (the row's own line, the path from the row, under a root, an
    image suffix)."""
    found = _recorded(request)
    if found is None:
        return error(request, 404, "there is no such page.")
    kind, recorded, line = found
    app = web_app(request)
    real = picture_here(app, line, recorded) if line is not None else None
    thumb = app.thumbnails.get(real, app.media.read_file) if real is not None else None
    if thumb is None:
        return _not_shown(request, kind, line)
    return Response(thumb, media_type="image/jpeg",
                    headers={"Cache-Control": "private, max-age=60"})  # fmt: skip


def health(request: Request) -> Response:
    app = web_app(request)
    window = query_of(request).get("window", "1h")
    if window not in WINDOWS:
        raise UserError(f"window '{window}' is not one of {', '.join(WINDOWS)}; pick one.")
    minutes = WINDOWS[window]
    since = datetime.now(UTC) - timedelta(minutes=minutes)
    report = queries.health(app.reader(), since, float(minutes), lines=lines_of(request))
    return page(
        request,
        "health.html",
        report=report,
        window=window,
        windows=list(WINDOWS),
        can_retry=may_retry(request),
    )


def metrics(request: Request) -> Response:
    """Prometheus' scrape: every line's series, so not for a viewer limited to lines."""
    if lines_of(request) is not None:
        return text(403, "/metrics covers every line; a user limited to lines cannot read it.")
    return Response(web_app(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)


def plant(request: Request) -> Response:
    """Every line of this database (the viewer's, when limited): its daemon's heartbeat,
    images per minute over the window, its newest alerts and drift events, and links to
    its history and what is left to review there."""
    app = web_app(request)
    window = query_of(request).get("window", "15m")
    if window not in WINDOWS:
        raise UserError(f"window '{window}' is not one of {', '.join(WINDOWS)}; pick one.")
    minutes = WINDOWS[window]
    since = datetime.now(UTC) - timedelta(minutes=minutes)
    summaries = line_summaries(app.reader(), since, float(minutes), app.stale_after_beats,
                               lines_of(request), app.line_urls)  # fmt: skip
    return page(request, "plant.html", lines=summaries, window=window, windows=list(WINDOWS))


NAMED_ONLY = (
    "this needs a named login: log in at /login with your name and your own token "
    "(the shared token can read, not change anything)."
)


def may_retry(request: Request) -> bool:
    """Whether this viewer may queue an alert again: once users exist, a named user;
    before, whoever proved the shared token (a page without one has no login)."""
    app = web_app(request)
    if app.people.exist():
        return person_of(request) is not None
    return app.token is not None


async def retry(request: Request) -> Response:
    """Queue a dead alert again. Needs a login (``may_retry``) and the page's own origin."""
    app, alert_id = web_app(request), request.path_params["alert_id"]
    if app.people.exist() and person_of(request) is None:
        return text(403, NAMED_ONLY)
    if app.token is None and not app.people.exist():
        return text(
            403,
            "retrying alerts needs a token; set http.token or $PADFORMER_EDGE_HTTP_TOKEN "
            "and log in.",
        )
    if not auth.same_origin(request):
        return text(403, "this request did not come from this server's own page.")
    form = await read_form(request)
    line = await run_in_threadpool(queries.line_of, app.reader(), "alerts", alert_id)
    if line is not None and not sees(request, line):  # another line's alert: as if absent
        raise UserError(f"there is no alert {alert_id}; the health page lists them.")
    await run_in_threadpool(queries.retry_alert, app.writer(), alert_id)
    app.forget_recent()
    log.info("web.alert_retried", alert=alert_id)
    target = form.get("next")
    if target is not None:
        return RedirectResponse(auth.safe_next(target), 303)
    return JSONResponse({"retried": alert_id})


async def review(request: Request) -> Response:
    """Record an operator's verdict on an inspection: the page's own form, posted from
    this site (the ``Origin`` check; behind a token the gate has already asked for the
    login). Once users exist the review is signed by the named user logged in, and
    nobody else (the shared token included) may review. Before, the reviewer's name is
    typed in the form, and without a token the server listens on loopback only, where
    whoever reaches the page could write the database anyway. The verdict changes no
    delivery, and a threshold moves only when an engineer runs ``profile calibrate
    --from-reviews``."""
    app, inspection_id = web_app(request), request.path_params["inspection_id"]
    if not auth.same_origin(request):
        return text(403, "this request did not come from this server's own page.")
    person = person_of(request)
    if app.people.exist() and person is None:
        return text(403, NAMED_ONLY)
    form = await read_form(request)
    line = await run_in_threadpool(queries.line_of, app.reader(), "inspections", inspection_id)
    if line is not None and not sees(request, line):  # another line's row: as if absent
        return text(404, f"there is no inspection {inspection_id}.")
    verdict = form.get("verdict", "")
    if verdict not in {v.value for v in ReviewVerdict}:
        raise UserError(f"review verdict '{verdict}' is not true_defect or false_alarm; pick one.")
    if person is not None:
        reviewer = person.name
    else:
        reviewer = form.get("reviewer", "").strip() or f"page user at {auth.client_of(request)}"
    saved = await run_in_threadpool(
        save_review, app.writer(), inspection_id, ReviewVerdict(verdict),
        reviewer=reviewer, note=form.get("note"),
    )  # fmt: skip
    app.forget_recent()
    log.info("review.saved", inspection=inspection_id, verdict=verdict, reviewer=saved.reviewer,
             replaced=saved.replaced.value if saved.replaced else None, via="page")  # fmt: skip
    target = form.get("next")
    if target is not None:
        return RedirectResponse(auth.safe_next(target), 303)
    return JSONResponse({"inspection": inspection_id, "review": verdict,
                         "reviewed_by": saved.reviewer})  # fmt: skip


ENGINEERS_ONLY = "only an engineer approves or rejects reference candidates; log in as one."
CANDIDATE_STATES = ("pending", "approved", "rejected")


def may_decide(request: Request) -> bool:
    """Whether this viewer may approve or reject candidates: once users exist, a named
    engineer; before, whoever proved the shared token (and types their name)."""
    app = web_app(request)
    if app.people.exist():
        person = person_of(request)
        return person is not None and person.role is Role.engineer
    return app.token is not None


def candidates(request: Request) -> Response:
    """The gallery of reference candidates: pictures from the line offered as references,
    with approve and reject buttons for an engineer."""
    app, params = web_app(request), query_of(request)
    state = params.get("state", "pending")
    if state not in CANDIDATE_STATES:
        raise UserError(f"state '{state}' is not one of {', '.join(CANDIDATE_STATES)}; pick one.")
    plain_text(params, "product")
    found = list_candidates(app.reader(), params.get("product"), CandidateState(state),
                            limit=MAX_LIMIT, lines=lines_of(request))  # fmt: skip
    return page(request, "candidates.html", candidates=found, state=state,
                states=CANDIDATE_STATES, params=params, can_decide=may_decide(request),
                named=app.people.exist())  # fmt: skip


def candidate_image(request: Request) -> Response:
    """A candidate's picture, from the copy in the state folder the row names."""
    app, candidate_id = web_app(request), request.path_params["candidate_id"]
    found = get_candidate(app.reader(), candidate_id)
    if found is not None and not sees(request, found.line):  # another line's: as if absent
        found = None
    picture = (
        app.candidate_media.read(found.image_path, app.conversions) if found is not None else None
    )
    if picture is None:
        return text(404, f"no picture can be shown for candidate {candidate_id}.")
    return Response(picture.data, media_type=picture.content_type,
                    headers={"Cache-Control": "private, max-age=60"})  # fmt: skip


async def decide_candidate(request: Request) -> Response:
    """Approve or reject one candidate: an engineer (``may_decide``), from this site."""
    app, candidate_id = web_app(request), request.path_params["candidate_id"]
    if not auth.same_origin(request):
        return text(403, "this request did not come from this server's own page.")
    if not may_decide(request):
        return text(403, ENGINEERS_ONLY if app.people.exist() else NAMED_ONLY)
    form = await read_form(request)
    found = await run_in_threadpool(get_candidate, app.reader(), candidate_id)
    if found is not None and not sees(request, found.line):  # another line's: as if absent
        return text(404, f"there is no candidate {candidate_id}.")
    decision = form.get("decision", "")
    states = {"approve": CandidateState.approved, "reject": CandidateState.rejected}
    if decision not in states:
        raise UserError(f"decision '{decision}' is not approve or reject; pick one.")
    person = person_of(request)
    by = person.name if person is not None else form.get("engineer", "").strip()
    if not by:
        raise UserError("give your name as the engineer deciding; it is kept with the decision.")
    await run_in_threadpool(decide, app.writer(), [candidate_id], states[decision], by[:128])
    app.forget_recent()
    log.info("candidate.decided", candidate=candidate_id, decision=decision, by=by, via="page")
    target = form.get("next")
    if target is not None:
        return RedirectResponse(auth.safe_next(target), 303)
    return JSONResponse({"candidate": candidate_id, "state": states[decision].value, "by": by})
