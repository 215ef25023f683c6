"""``padformer-edge doctor`` as a real process: a sound setup is all OK with status 0, and
a broken one lists every problem (not just the first, as ``watch`` would) with status 1.

Real parts throughout: profiles made by ``create_profile``, a SQLite file migrated by
the real migrations, a listening TCP socket for the reachable webhook and a closed port
for the unreachable one.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.errors import UserError
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.profile import load_profile
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.tools import doctor as doctor_module
from tests.cli_process import run_cli, run_cli_modules
from tests.profiles.conftest import FAST, write_checkpoint

HEAVY = {"torch", "timm", "kornia", "cv2"}


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on loopback that accepts connections."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def setup(tmp_path: Path, product: Path, checkpoint: Path) -> dict[str, Path]:
    """Two profiles (one calibrated), a migrated database and a camera folder."""
    profiles = tmp_path / "profiles"
    made = create_profile(profiles, "duck", checkpoint, product / "train" / "good", 2, FAST)
    pin_threshold(made.profile, 0.5)
    create_profile(profiles, "raw", checkpoint, product / "train" / "good", 2, FAST)
    database = tmp_path / "line.sqlite3"
    engine = open_engine(str(database))
    upgrade(engine)
    engine.dispose()
    (tmp_path / "cam").mkdir()
    return {"profiles": profiles, "database": database, "cam": tmp_path / "cam"}


def write_config(path: Path, **fields: object) -> Path:
    path.write_text(yaml.safe_dump(fields))
    return path


def doctor(config: Path, tmp_path: Path, setup: dict[str, Path]):
    env = {"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state")}
    return run_cli_modules(
        "doctor", "--config", str(config), "--json", record=tmp_path / "modules",
        env={**env, "PADFORMER_EDGE_PROFILES": str(setup["profiles"])},
    )  # fmt: skip


def test_a_sound_setup_is_all_ok(tmp_path: Path, setup: dict[str, Path], listening: int) -> None:
    config = write_config(
        tmp_path / "good.yaml",
        database=str(setup["database"]),
        cameras=[{"name": "line1", "path": str(setup["cam"]), "profile": "duck"}],
        alerts={"sinks": {"hook": {"type": "webhook", "url": f"http://127.0.0.1:{listening}/"}}},
    )
    result, modules = doctor(config, tmp_path, setup)
    findings = json.loads(result.stdout)
    assert result.returncode == 0, findings
    assert all(f["ok"] for f in findings)
    subjects = [f["subject"] for f in findings]
    assert subjects[:6] == [
        "config", "camera 'line1'", "profile 'duck'", "device", "database", "sink 'log'"
    ]  # fmt: skip
    assert subjects[6] == "sink 'hook'" and subjects[7].startswith("disk ")
    assert not modules & HEAVY, sorted(modules & HEAVY)


def broken_profiles(profiles: Path, product: Path, tmp_path: Path) -> None:
    """Calibrated profiles whose files went wrong after they were made: ``moved`` lost its
    checkpoint, ``swapped`` had its checkpoint replaced, ``bare`` lost a reference."""
    for name, seed in (("moved", 1), ("swapped", 2), ("bare", 3)):
        model = write_checkpoint(tmp_path / f"{name}.safetensors", seed)
        made = create_profile(profiles, name, model, product / "train" / "good", 2, FAST)
        pin_threshold(made.profile, 0.5)
    (tmp_path / "moved.safetensors").unlink()
    write_checkpoint(tmp_path / "swapped.safetensors", seed=9)
    load_profile(profiles, "bare").reference_paths[0].unlink()


def test_a_broken_setup_lists_every_problem(
    tmp_path: Path, setup: dict[str, Path], product: Path
) -> None:
    broken_profiles(setup["profiles"], product, tmp_path)
    empty = tmp_path / "empty.sqlite3"
    empty.write_bytes(b"")  # a file, but no schema: never migrated
    port = closed_port()
    config = write_config(
        tmp_path / "broken.yaml",
        database=str(empty),
        cameras=[
            {"name": "gone", "path": str(tmp_path / "no-such-folder"), "profile": "duck"},
            {"name": "new", "path": str(setup["cam"]), "profile": "raw"},
            {"name": "typo", "path": str(setup["cam"]), "profile": "dukc"},
            *(
                {"name": name, "path": str(setup["cam"]), "profile": name}
                for name in ("moved", "swapped", "bare")
            ),
        ],
        alerts={
            "sinks": {
                "hook": {"type": "webhook", "url": f"http://127.0.0.1:{port}/alert"},
                "pager": {"type": "command", "argv": [str(tmp_path / "no-such-program")]},
            }
        },
    )
    result, _ = doctor(config, tmp_path, setup)
    assert result.returncode == 1, result.stderr
    problems = {f["subject"]: f["detail"] for f in json.loads(result.stdout) if not f["ok"]}
    assert set(problems) == {
        "camera 'gone'", "profile 'raw'", "profile 'dukc'", "profile 'moved'",
        "profile 'swapped'", "profile 'bare'", "database", "sink 'hook'", "sink 'pager'",
    }  # fmt: skip
    assert "no-such-folder does not exist; create it or fix its path" in problems["camera 'gone'"]
    assert "profile calibrate raw --good DIR" in problems["profile 'raw'"]
    assert "(known: bare, duck, moved, raw, swapped)" in problems["profile 'dukc'"]
    assert "moved.safetensors does not exist" in problems["profile 'moved'"]
    assert "changed since the profile was made" in problems["profile 'swapped'"]
    assert "is missing; put it back, or re-create the profile with" in problems["profile 'bare'"]
    assert "has no schema yet; run `padformer-edge db upgrade --db" in problems["database"]
    assert f"127.0.0.1:{port} cannot be reached" in problems["sink 'hook'"]
    assert "no-such-program is not found" in problems["sink 'pager'"]


def test_the_table_marks_each_line_and_an_invalid_config_is_a_problem(
    tmp_path: Path, setup: dict[str, Path]
) -> None:
    config = write_config(tmp_path / "typo.yaml", cameras=[{"name": "c", "pth": "/x"}])
    env = {"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state")}
    result = run_cli("doctor", "--config", str(config), env=env)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    config_lines = [line for line in lines if line.startswith("PROBLEM config: ")]
    assert len(config_lines) == 3  # path and profile missing, pth unknown: each its line
    assert any("key 'cameras.0.pth': unknown key" in line for line in config_lines)
    assert any(line.startswith("OK      disk ") for line in lines)


def test_a_nearly_full_disk_is_a_problem_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real file system under ``tmp_path``, judged against a floor above its free
    space (filling a disk in a test is not an option): one problem naming the prune."""
    free = shutil.disk_usage(tmp_path).free
    monkeypatch.setattr(doctor_module, "MIN_FREE_BYTES", free + (1 << 40))
    findings = list(doctor_module.check_disk([tmp_path / "state", tmp_path / "db.sqlite3"]))
    assert len(findings) == 1  # one file system, judged once
    assert not findings[0].ok
    assert "results prune --older-than" in findings[0].detail
    monkeypatch.setattr(doctor_module, "MIN_FREE_BYTES", 0)
    assert all(f.ok for f in doctor_module.check_disk([tmp_path]))


def test_expect_running_reports_a_missing_or_silent_daemon_and_plain_doctor_does_not(
    tmp_path: Path, setup: dict[str, Path]
) -> None:
    """Before the first ``watch`` plain doctor stays all OK; ``--expect-running`` says no
    daemon ever beat, then that one beat 22 minutes ago (the silence doctor missed), then
    OK for a fresh beat: each through a heartbeat written into the real database."""
    from datetime import timedelta

    from padformer_edge.store.heartbeat import record_heartbeat
    from padformer_edge.store.models import utc_now

    config = write_config(
        tmp_path / "good.yaml",
        database=str(setup["database"]),
        cameras=[{"name": "line1", "path": str(setup["cam"]), "profile": "duck"}],
    )
    env = {"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state"),
           "PADFORMER_EDGE_PROFILES": str(setup["profiles"])}  # fmt: skip

    def daemon_findings(*flags: str) -> tuple[int, list[dict]]:
        done = run_cli("doctor", "--config", str(config), "--json", *flags, env=env)
        return done.returncode, [f for f in json.loads(done.stdout) if f["subject"] == "daemon"]

    assert daemon_findings() == (0, [])
    status, (never,) = daemon_findings("--expect-running")
    assert status == 1 and not never["ok"]
    assert "no daemon has written a heartbeat" in never["detail"]
    engine = open_engine(str(setup["database"]))
    started = utc_now() - timedelta(hours=1)
    beat = {"interval_s": 5.0, "started_at": started, "pid": 4242, "host": "line-pc",
            "status": "backlog 0"}  # fmt: skip
    record_heartbeat(engine, **beat, now=utc_now() - timedelta(minutes=22))
    status, (silent,) = daemon_findings("--expect-running")
    assert status == 1 and not silent["ok"]
    assert silent["detail"].startswith("silent: last heartbeat 22 min ago (pid 4242 on line-pc)")
    assert daemon_findings() == (0, [])  # plain doctor is unchanged by a stale beat
    record_heartbeat(engine, **beat)
    engine.dispose()
    status, (alive,) = daemon_findings("--expect-running")
    assert status == 0 and alive["ok"] and "backlog 0" in alive["detail"]


def test_expect_running_reads_its_own_lines_heartbeat(
    tmp_path: Path, setup: dict[str, Path]
) -> None:
    """On a database two lines share, the other line's fresh beat does not vouch for this
    line's daemon: doctor reads the heartbeat of the line its config names."""
    from padformer_edge.store.heartbeat import record_heartbeat
    from padformer_edge.store.lines import with_line
    from padformer_edge.store.models import utc_now

    config = write_config(
        tmp_path / "press-1.yaml",
        database=str(setup["database"]),
        line="press-1",
        cameras=[{"name": "line1", "path": str(setup["cam"]), "profile": "duck"}],
    )
    env = {"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state"),
           "PADFORMER_EDGE_PROFILES": str(setup["profiles"])}  # fmt: skip
    engine = open_engine(str(setup["database"]))
    beat = {"interval_s": 5.0, "started_at": utc_now(), "pid": 4242, "host": "line-pc",
            "status": "backlog 0"}  # fmt: skip
    record_heartbeat(with_line(engine, "press-2"), **beat)
    done = run_cli("doctor", "--config", str(config), "--json", "--expect-running", env=env)
    (daemon,) = [f for f in json.loads(done.stdout) if f["subject"] == "daemon"]
    assert done.returncode == 1 and "no daemon has written a heartbeat" in daemon["detail"]
    record_heartbeat(with_line(engine, "press-1"), **beat)
    engine.dispose()
    done = run_cli("doctor", "--config", str(config), "--json", "--expect-running", env=env)
    (daemon,) = [f for f in json.loads(done.stdout) if f["subject"] == "daemon"]
    assert done.returncode == 0 and daemon["ok"]


def test_a_changed_reference_is_refused_by_doctor_and_by_loading(
    tmp_path: Path, setup: dict[str, Path], product: Path
) -> None:
    """A reference photo overwritten with another picture: doctor reports it, and building
    the detector refuses it in one sentence naming the file and the commands that fix it."""
    profile = load_profile(setup["profiles"], "duck")
    changed = profile.reference_paths[0]
    other = sorted((product / "test" / "good").iterdir())[0]
    changed.write_bytes(other.read_bytes())  # a real picture, just not the recorded one
    config = DaemonConfig.model_validate(
        {"cameras": [{"name": "line1", "path": str(setup["cam"]), "profile": "duck"}]}
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PADFORMER_EDGE_PROFILES", str(setup["profiles"]))
        (finding,) = doctor_module.check_profiles(config)
    assert not finding.ok
    assert f"reference {changed} differs from the sha256 profile.yaml records" in finding.detail
    with pytest.raises(UserError) as refused:
        profile.build_detector()
    sentence = str(refused.value)
    assert len(sentence.splitlines()) == 1
    assert str(changed) in sentence
    assert "padformer-edge profile create duck --references DIR" in sentence


@pytest.mark.parametrize(
    ("runtime", "module", "install"),
    [
        ("openvino", "openvino", "pip install 'padformer-edge[line-openvino]'"),
        ("onnxruntime", "onnxruntime", "pip install 'padformer-edge[line]'"),
        ("torch", "kornia", "pip install 'padformer-edge[torch]'"),
    ],
)
def test_a_runtime_this_install_cannot_import_is_a_problem(
    setup: dict[str, Path], runtime: str, module: str, install: str
) -> None:
    """The runtime a config runs a profile on (here ``worker.runtime``) is checked before
    its files; a module set to None in ``sys.modules`` cannot be imported, as in an
    install that lacks it."""
    config = DaemonConfig.model_validate(
        {
            "cameras": [{"name": "line1", "path": str(setup["cam"]), "profile": "duck"}],
            "worker": {"runtime": runtime},
        }
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PADFORMER_EDGE_PROFILES", str(setup["profiles"]))
        patch.setitem(sys.modules, module, None)
        (finding,) = doctor_module.check_profiles(config)
    assert not finding.ok
    assert f"runs on {runtime}, but this install cannot import {module}; {install}" in (
        finding.detail
    )


def test_doctor_names_profiles_not_yet_on_the_learned_comparison(
    tmp_path: Path, setup: dict[str, Path], product: Path, checkpoint: Path
) -> None:
    """A calibrated profile on an earlier metric is fine, and doctor says how to move it;
    one on ``compare`` has its comparator checked against the card, still without torch."""
    compared = create_profile(
        setup["profiles"], "cmp", checkpoint, product / "train" / "good", 2,
        FAST.replace(metric="compare"),
    )  # fmt: skip
    pin_threshold(compared.profile, 0.3)
    config = write_config(
        tmp_path / "two.yaml",
        database=str(setup["database"]),
        cameras=[
            {"name": "a", "path": str(setup["cam"]), "profile": "duck"},
            {"name": "b", "path": str(setup["cam"]), "profile": "cmp"},
        ],
    )
    result, modules = doctor(config, tmp_path, setup)
    findings = {f["subject"]: f for f in json.loads(result.stdout)}
    assert result.returncode == 0, findings
    earlier = findings["profile 'duck'"]["detail"]
    assert "metric 'auto', not the learned comparison" in earlier
    assert "profile set-model duck --metric compare" in earlier
    current = findings["profile 'cmp'"]["detail"]
    assert "comparator" in current and "matches its card" in current
    assert "set-model" not in current
    assert not modules & HEAVY, sorted(modules & HEAVY)


def test_doctor_says_when_a_profile_kept_no_image_statistics(
    tmp_path: Path, setup: dict[str, Path]
) -> None:
    """A profile whose calibration has no image statistics (calibrated before they were
    kept; here a pinned threshold) is OK with a note that the drift watch cannot see a
    lighting or camera change; with them, or with the drift watch off, no note."""
    config = write_config(
        tmp_path / "one.yaml", database=str(setup["database"]),
        cameras=[{"name": "a", "path": str(setup["cam"]), "profile": "duck"}],
    )  # fmt: skip

    def detail(path: Path) -> str:
        result, _ = doctor(path, tmp_path, setup)
        findings = {f["subject"]: f for f in json.loads(result.stdout)}
        assert result.returncode == 0, findings
        return findings["profile 'duck'"]["detail"]

    note = "kept no image statistics, so the drift watch cannot see a change of lighting"
    assert note in detail(config) and "profile calibrate duck --good DIR` adds them" in (
        detail(config)
    )
    off = write_config(tmp_path / "off.yaml", **{**yaml.safe_load(config.read_text()),
                                                 "drift": {"enabled": False}})  # fmt: skip
    assert note not in detail(off)
    path = setup["profiles"] / "duck" / "profile.yaml"
    profile = yaml.safe_load(path.read_text())
    profile["calibration"]["good_image_stats"] = {
        name: [float(i) for i in range(30)]
        for name in ("luminance_p10", "luminance_p50", "luminance_p90")
    }
    path.write_text(yaml.safe_dump(profile))
    assert note not in detail(config)
