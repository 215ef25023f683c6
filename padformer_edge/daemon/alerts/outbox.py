"""The outbox as operators see it: list alerts by state, and send dead ones again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from padformer_edge.errors import UserError
from padformer_edge.store.models import Alert, AlertState, Inspection, utc_now


def alert_record(alert: Alert, inspection: Inspection) -> dict[str, Any]:
    """One alert as JSON-ready values, with the camera and product it is about."""
    payload = json.loads(alert.payload)
    return {
        "id": alert.id,
        "created_at": alert.created_at.isoformat(),
        "inspection_id": alert.inspection_id,
        "line": alert.line,
        "camera": inspection.camera,
        "product": inspection.product,
        "kind": payload.get("kind"),
        "sink": alert.sink,
        "state": alert.state.value,
        "attempts": alert.attempts,
        "next_attempt_at": alert.next_attempt_at.isoformat(),
        "sent_at": alert.sent_at.isoformat() if alert.sent_at else None,
        "last_error": alert.last_error,
        "payload": payload,
    }


def list_alerts(
    engine: Engine,
    *,
    state: AlertState | None = None,
    sink: str | None = None,
    limit: int = 50,
    line: str | None = None,
) -> list[dict[str, Any]]:
    """Alerts newest first, optionally of one state, sink or line."""
    query = select(Alert, Inspection).join(Inspection, Alert.inspection_id == Inspection.id)
    if line is not None:
        query = query.where(Alert.line == line)
    if state is not None:
        query = query.where(Alert.state == state)
    if sink is not None:
        query = query.where(Alert.sink == sink)
    with Session(engine) as session:
        rows = session.execute(query.order_by(Alert.id.desc()).limit(limit)).all()
        return [alert_record(alert, inspection) for alert, inspection in rows]


def retry_alerts(engine: Engine, alert_ids: Sequence[int]) -> list[int]:
    """Make dead (or waiting) alerts due now with a fresh attempt count.

    Sent alerts are refused: sending one again is a second notification, not a retry.
    All ids are checked before any is changed, so a typo changes nothing.
    """
    with Session(engine) as session, session.begin():
        alerts = {a.id: a for a in session.scalars(select(Alert).where(Alert.id.in_(alert_ids)))}
        for alert_id in alert_ids:
            alert = alerts.get(alert_id)
            if alert is None:
                raise UserError(f"there is no alert {alert_id}; 'alerts list' shows the ids.")
            if alert.state is AlertState.sent:
                raise UserError(f"alert {alert_id} was already sent; there is nothing to retry.")
        now = utc_now()
        for alert in alerts.values():
            alert.state, alert.attempts, alert.next_attempt_at = AlertState.pending, 0, now
        return sorted(alerts)
