"""Which alerts a result raises, the cooldown, and the ``alerts:`` config section."""

from __future__ import annotations

from pathlib import Path

import pytest

from padformer_edge.config import load_config
from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.planning import AlertKind, Cooldown, plan_alerts
from padformer_edge.errors import UserError
from padformer_edge.store.queue import DetectionOutcome

CONFIG = AlertsConfig.model_validate(
    {"sinks": {"andon": {"type": "webhook", "url": "http://127.0.0.1:9/x"},
               "mes": {"type": "command", "argv": ["/bin/true"]}}}
)  # fmt: skip


HOOK = "sinks:\n  andon:\n    type: webhook\n"
CMD = "sinks:\n  m:\n    type: command\n"
MQTT = "sinks:\n  q:\n    type: mqtt\n"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def plan(cooldown: Cooldown, score: float, camera: str = "cam-1", **kw: object) -> list:
    return plan_alerts(
        CONFIG, cooldown=cooldown, camera=camera, product="nut", score=score, threshold=2.0,
        reason="above threshold", **kw,
    )  # fmt: skip


def test_an_anomaly_queues_one_request_per_sink_log_first() -> None:
    requests = plan(Cooldown(0), 3.5, heatmap_path="/h/7.png")
    assert [r.sink for r in requests] == ["log", "andon", "mes"]
    assert requests[0].payload == {
        "kind": "anomaly", "camera": "cam-1", "product": "nut", "score": 3.5, "threshold": 2.0,
        "reason": "above threshold", "source_path": None, "heatmap_path": "/h/7.png",
        "suppressed_before": 0,
    }  # fmt: skip


def test_the_planner_judges_no_score_the_outcome_decides() -> None:
    """A result's verdict is decided once, by its outcome; the planner queues what it is
    asked to, so a caller that asks for a good score's alert gets one (the worker never
    does: it asks only for an outcome whose ``is_anomaly`` is true)."""
    assert not DetectionOutcome(2.0, 2.0, None, "0" * 64, 1.0).is_anomaly
    assert not DetectionOutcome(0.1, 2.0, None, "0" * 64, 1.0).is_anomaly
    assert DetectionOutcome(2.5, 2.0, None, "0" * 64, 1.0).is_anomaly
    assert [r.sink for r in plan(Cooldown(0), 0.1)] == ["log", "andon", "mes"]


def test_cooldown_holds_back_notifications_and_counts_them() -> None:
    clock = FakeClock()
    cooldown = Cooldown(60, clock=clock)
    assert plan(cooldown, 5.0)
    clock.now += 10
    assert plan(cooldown, 6.0) == []
    clock.now += 10
    assert plan(cooldown, 7.0) == []
    assert cooldown.held(("cam-1", "nut", "anomaly")) == 2
    assert plan(cooldown, 8.0, camera="cam-2"), "another camera has its own window"
    clock.now += 41  # 61 s after the first notification
    released = plan(cooldown, 9.0)
    assert released and released[0].payload["suppressed_before"] == 2
    assert cooldown.held(("cam-1", "nut", "anomaly")) == 0
    clock.now += 1
    assert plan(cooldown, 9.5) == []


def test_skipped_images_have_their_own_window_and_need_no_score() -> None:
    cooldown = Cooldown(60, clock=FakeClock())
    assert plan(cooldown, 5.0)
    skipped = plan_alerts(
        CONFIG, cooldown=cooldown, camera="cam-1", product="nut", score=None, threshold=None,
        reason="older than the 30 s deadline", kind=AlertKind.skipped,
    )  # fmt: skip
    assert [r.payload["kind"] for r in skipped] == ["skipped"] * 3


def test_config_section_from_yaml_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(
        "sinks:\n  andon:\n    type: webhook\n    url: https://andon.local/hook\n"
        "    headers: {Authorization: Bearer x}\ncooldown_s: 30\n"
    )
    config = load_config(path, AlertsConfig)
    assert config.sink_names == ["log", "andon"]
    assert (config.cooldown_s, config.max_attempts) == (30, 10)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sinks:\n  andon:\n    type: pager\n", "line 3, key 'sinks.andon.type'"),
        (HOOK + "    url: ftp://x\n", "line 2, key 'sinks.andon': a webhook needs 'url'"),
        ("sinks:\n  log:\n    type: command\n    argv: [x]\n", "not 'log'"),
        (CMD + "    argv: []\n", "key 'sinks.m': a command needs 'argv'"),
        (CMD + "    argv: [x]\n    url: http://a\n", "url do not apply to a command sink"),
        (MQTT + "    host: broker\n", "an mqtt sink needs 'host' and 'topic'"),
        (MQTT + "    host: b\n    topic: a/{line}\n", "may only use {camera}, {product}"),
        ("backoff_base_s: 60\nbackoff_max_s: 5\n", "backoff_max_s must be at least"),
        (CMD + "    argv: [x]\n    shell: true\n", "unknown key"),
    ],
)  # fmt: skip
def test_bad_config_names_the_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as raised:
        load_config(path, AlertsConfig)
    assert expected in str(raised.value)
