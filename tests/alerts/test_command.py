"""The command sink runs real programs; ``alerts list`` and ``retry`` via the CLI entry point."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from padformer_edge.cli.app import main
from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.dispatcher import AlertDispatcher
from padformer_edge.daemon.alerts.outbox import list_alerts
from padformer_edge.daemon.alerts.planning import Cooldown

from .conftest import store_result, wait_until

FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.01, "poll_interval_s": 0.05, "cooldown_s": 0}
# Writes stdin to OUT/<alert id>.json and the argument it was given to OUT/<id>.argv.
RECORDER = (
    "import os, sys, pathlib; out = pathlib.Path(sys.argv[1]); "
    "key = os.environ['PADFORMER_EDGE_ALERT_ID']; "
    "(out / (key + '.json')).write_bytes(sys.stdin.buffer.read()); "
    "(out / (key + '.argv')).write_text(sys.argv[2])"
)


def command_config(argv: list[str], **extra: object) -> AlertsConfig:
    return AlertsConfig.model_validate(
        {"sinks": {"cmd": {"type": "command", "argv": argv, "timeout_s": 5}}, **FAST, **extra}
    )


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """The console-script entry point in this process: exit code, stdout, stderr."""
    capsys.readouterr()  # drop what earlier steps printed (the log sink's lines)
    monkeypatch.setattr(sys, "argv", ["padformer-edge", *args])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_command_gets_the_alert_as_json_on_stdin_and_no_shell(
    engine: Engine, tmp_path: Path
) -> None:
    config = command_config([sys.executable, "-c", RECORDER, str(tmp_path), "$(touch pwned) ;"])
    inspection_id, _ = store_result(engine, config, Cooldown(0), "part.png", score=4.25)
    AlertDispatcher(engine, config).drain_once()
    (alert,) = list_alerts(engine, sink="cmd")
    assert (alert["state"], alert["attempts"]) == ("sent", 1)
    body = json.loads((tmp_path / f"{alert['id']}.json").read_text())
    assert body["alert_id"] == alert["id"] and body["inspection_id"] == inspection_id
    assert (body["score"], body["camera"], body["sink"]) == (4.25, "cam-1", "cmd")
    assert (tmp_path / f"{alert['id']}.argv").read_text() == "$(touch pwned) ;"
    assert not (Path.cwd() / "pwned").exists()


def test_exit_code_timeout_and_missing_program_are_recorded(engine: Engine, tmp_path: Path) -> None:
    # (argv, timeout_s): only "slow" is to be killed; the others get the time a Python
    # start takes on a loaded machine (a 1 s limit killed "exit" under the suite's load)
    cases = {
        "exit": (
            [sys.executable, "-c", "import sys; sys.stderr.write('no andon\\n'); sys.exit(3)"],
            120,
        ),
        "slow": ([sys.executable, "-c", "import time; time.sleep(30)"], 1),
        "missing": ([str(tmp_path / "no-such-program")], 120),
    }
    config = AlertsConfig.model_validate(
        {"sinks": {name: {"type": "command", "argv": argv, "timeout_s": timeout_s}
                   for name, (argv, timeout_s) in cases.items()}, **FAST}
    )  # fmt: skip
    store_result(engine, config, Cooldown(0), "part.png")
    AlertDispatcher(engine, config).drain_once()
    errors = {a["sink"]: a["last_error"] for a in list_alerts(engine) if a["sink"] != "log"}
    assert errors["exit"].endswith("exited with code 3: no andon")
    assert errors["slow"].endswith("was killed after 1 s")
    assert errors["missing"].startswith(f"cannot run {tmp_path / 'no-such-program'}")


def test_dead_alert_shows_in_alerts_list_and_retry_queues_it(
    sqlite_file: Path,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = command_config([sys.executable, "-c", "raise SystemExit(4)"], max_attempts=2)
    store_result(engine, config, Cooldown(0), "part.png", camera="line3-top")
    dispatcher = AlertDispatcher(engine, config)
    dispatcher.drain_once()
    assert [a["state"] for a in list_alerts(engine, sink="cmd")] == ["pending"]
    wait_until(  # the second attempt is due after the 10 ms backoff
        lambda: dispatcher.drain_once() or list_alerts(engine, sink="cmd")[0]["state"] == "dead",
        "the second failure",
    )

    db = ("--db", str(sqlite_file))
    code, listed, _ = run_cli(
        monkeypatch, capsys, "alerts", "list", *db, "--state", "dead", "--json"
    )
    assert code == 0
    (dead,) = json.loads(listed)
    assert (dead["sink"], dead["camera"], dead["attempts"]) == ("cmd", "line3-top", 2)
    assert "exited with code 4" in dead["last_error"]
    code, table, _ = run_cli(monkeypatch, capsys, "alerts", "list", *db)
    assert code == 0 and "line3-top" in table and "dead" in table and "sent" in table

    code, out, _ = run_cli(monkeypatch, capsys, "alerts", "retry", str(dead["id"]), *db)
    assert code == 0 and f"queued 1 alert(s) again: {dead['id']}" in out
    (again,) = list_alerts(engine, sink="cmd")
    assert (again["state"], again["attempts"]) == ("pending", 0)

    log_alert = next(a["id"] for a in list_alerts(engine, sink="log"))
    code, _, err = run_cli(monkeypatch, capsys, "alerts", "retry", "999", str(log_alert), *db)
    assert code == 2 and "there is no alert 999" in err
    code, _, err = run_cli(monkeypatch, capsys, "alerts", "retry", str(log_alert), *db)
    assert code == 2 and "was already sent" in err
    code, _, err = run_cli(monkeypatch, capsys, "alerts", "list", *db, "--state", "lost")
    assert code == 2 and "--state 'lost' is not an alert state" in err
    assert len(err.strip().splitlines()) == 1
