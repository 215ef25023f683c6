"""``padformer-edge doctor``: everything a daemon config depends on, checked at once.

``config check`` validates a file against its schema; it cannot know whether the camera
folder exists on this PC, whether the profile it names was calibrated, whether the model
file still matches, whether the database was migrated or the webhook answers. ``watch``
stops at the first of those; an operator setting up a line wants all of them in one
list, each with its fix. Nothing here imports torch or writes anything.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from padformer_edge.daemon.alerts.config import SinkConfig
from padformer_edge.daemon.assignments import assigned_versions, assignments_url
from padformer_edge.daemon.settings import BUNDLED_CONFIG, DaemonConfig, load_daemon_config
from padformer_edge.detect.settings import PRODUCT_METRIC
from padformer_edge.devices.runtimes import INSTALL_COMMANDS, missing_modules
from padformer_edge.errors import UserError
from padformer_edge.profiles.layout import PROFILE_FILE, profiles_root
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.store.engine import describe, open_engine, resolve_url, sqlite_path, state_dir
from padformer_edge.store.migrations import current_revision, head_revision
from padformer_edge.tools.device_check import check_device
from padformer_edge.tools.findings import Finding
from padformer_edge.web.config import HttpConfig

MIN_FREE_BYTES = 1 << 30  # below 1 GiB a day of heatmaps and database growth may not fit
CONNECT_TIMEOUT_S = 3.0


def examine(config_path: Path | None, expect_running: bool = False) -> list[Finding]:
    """Every finding for the daemon config at ``config_path`` (the bundled one if None);
    with ``expect_running``, also whether its daemon's heartbeat is fresh."""
    source = config_path or BUNDLED_CONFIG
    try:  # a schema error is one finding per problem, then what needs no config
        config = load_daemon_config(config_path, [])
    except UserError as err:
        return [
            *(Finding("config", False, line) for line in str(err).splitlines()),
            *check_database(None),
            *check_disk([state_dir()]),
        ]
    cameras = len(config.cameras)
    findings = [Finding("config", True, f"{source}: valid daemon config, {cameras} camera(s)")]
    findings += check_cameras(config)
    findings += check_profiles(config)
    findings += check_device(config, profiles_folder(config))
    findings += check_database(config.database)
    findings += check_plant(config)
    findings += check_sinks(config)
    findings += check_certificate(config)
    heatmaps = state_dir() / (config.heatmaps or "heatmaps")
    database_file = sqlite_path(resolve_url(config.database))
    findings += check_disk([state_dir(), heatmaps, *([database_file] if database_file else [])])
    if expect_running:
        multiple = config.http.stale_after_beats if config.http else HttpConfig().stale_after_beats
        findings += check_heartbeat(config.database, multiple, config.line_name)
    return findings


def check_cameras(config: DaemonConfig) -> Iterator[Finding]:
    """Each camera folder exists and can be listed and read by this user."""
    base = state_dir()
    heatmaps = (base / (config.heatmaps or "heatmaps")).expanduser().absolute()
    for cam in config.cameras:
        subject = f"camera '{cam.name}'"
        folder = (base / cam.path).expanduser()
        if not folder.is_dir():
            yield Finding(
                subject, False, f"folder {folder} does not exist; create it or fix its path."
            )
        elif not os.access(folder, os.R_OK | os.X_OK):
            yield Finding(
                subject, False, f"folder {folder} cannot be read; give the daemon's user access."
            )
        elif heatmaps.resolve().is_relative_to(folder.resolve()):
            yield Finding(
                subject,
                False,
                f"heatmap folder {heatmaps} is inside {folder}; set heatmaps to another folder.",
            )
        else:
            yield Finding(subject, True, f"folder {folder} is readable")


def profiles_folder(config: DaemonConfig) -> Path:
    """Where the daemon of ``config`` finds its profiles."""
    return state_dir() / config.profiles_dir if config.profiles_dir else profiles_root()


def check_profiles(config: DaemonConfig) -> Iterator[Finding]:
    """Each profile the cameras name exists, is valid, runs on a runtime this install
    can import, has its model or graphs and its references unchanged, and has been
    calibrated."""
    root = profiles_folder(config)
    assigned: dict[str, int] | None = None
    for name in sorted({cam.profile for cam in config.cameras}):
        subject = f"profile '{name}'"
        if not (root / name / PROFILE_FILE).is_file():
            assigned = assigned_here(config) if assigned is None else assigned
            if name in assigned:
                where = describe(assignments_url(config))
                yield Finding(
                    subject,
                    True,
                    f"not on this PC yet: version {assigned[name]} is assigned to line "
                    f"'{config.line_name}' in {where}, and watch pulls it at start",
                )
                continue
        try:
            profile = load_profile(root, name)
            if config.worker.runtime is not None:  # what watch will run it on
                profile = profile.on_runtime(config.worker.runtime)
            require_runtime(profile.detection.runtime, name)
            # the checkpoint (torch) or the exported graphs (onnxruntime), and the references
            checked = profile.verify_runnable()
        except UserError as err:
            yield Finding(subject, False, str(err))
            continue
        if profile.threshold is None:
            yield Finding(
                subject,
                False,
                f"no threshold yet; run `padformer-edge profile calibrate {name} --good DIR`.",
            )
        else:
            yield Finding(
                subject,
                True,
                f"{checked}, threshold {profile.threshold:.6g}{earlier_score(profile)}"
                f"{unwatched_images(profile, config)}",
            )


def assigned_here(config: DaemonConfig) -> dict[str, int]:
    """The versions assigned to this line (``daemon.assignments``: the database
    ``published_profiles.database`` or ``plant_database`` names); none when that database
    cannot say (its own finding, ``plant``, says why)."""
    try:
        return assigned_versions(config)
    except Exception:  # unreachable or unreadable: the profile's own finding stands
        return {}


def earlier_score(profile: Profile) -> str:
    """For a profile that scores with an earlier metric than the learned comparison, or
    with an earlier comparator than the shipped default, the sentence naming it and the
    two commands that move it; empty otherwise."""
    from padformer_edge.weights import comparator_label, comparator_path, comparator_sha256

    metric = profile.detection.metric
    move = (
        f"`padformer-edge profile set-model {profile.name} --metric compare` then "
        f"`padformer-edge profile calibrate {profile.name} --good DIR` move it"
    )
    if metric != PRODUCT_METRIC:
        return f"; it scores with metric '{metric}', not the learned comparison: {move}"
    default = comparator_sha256(comparator_path())
    recorded = profile.detection.section.comparator  # metric compare: its section
    if recorded is None or default is None or recorded == default:
        return ""
    return (
        f"; it scores with the earlier {comparator_label(recorded)}, not the shipped "
        f"{comparator_label(default)}: {move}"
    )


def unwatched_images(profile: Profile, config: DaemonConfig) -> str:
    """For a profile calibrated before calibration kept the good images' statistics, the
    sentence saying the drift watch cannot see a lighting or camera change on its
    cameras and how to fix it; empty otherwise (or with the drift watch off). Not a
    problem: the profile inspects as before."""
    calibration = profile.calibration
    if not config.drift.enabled or calibration is None or calibration.good_image_stats:
        return ""
    return (
        "; its calibration kept no image statistics, so the drift watch cannot see a "
        f"change of lighting or camera: `padformer-edge profile calibrate {profile.name} "
        "--good DIR` adds them"
    )


def require_runtime(runtime: str, profile: str) -> None:
    """Refuse a runtime whose modules this install lacks, naming the extra to install:
    ``watch`` would otherwise start and exit 2 at its first profile load."""
    missing = missing_modules(runtime)
    if not missing:
        return
    other = (
        f", or run `padformer-edge profile export {profile}` where torch is installed and "
        "run it on onnxruntime"
        if runtime == "torch"
        else ""
    )
    raise UserError(
        f"runs on {runtime}, but this install cannot import {', '.join(missing)}; "
        f"{INSTALL_COMMANDS[runtime]}{other}."
    )


def check_database(database: str | None) -> Iterator[Finding]:
    """The database is at the schema this version writes (or does not exist yet)."""
    url = resolve_url(database)
    where = describe(url)
    upgrade = (
        f"run `padformer-edge db upgrade --db {database}`"
        if database
        else ("run `padformer-edge db upgrade`")
    )
    path = sqlite_path(url)
    if path is not None and not path.exists():
        yield Finding("database", True, f"{where} does not exist yet; watch creates it")
        return
    try:
        engine = open_engine(url, read_only=True)
        try:
            current = current_revision(engine)
        finally:
            engine.dispose()
    except UserError as err:
        yield Finding("database", False, str(err))
        return
    head = head_revision()
    if current == head:
        yield Finding("database", True, f"{where} is at schema {head}")
    elif current is None:
        yield Finding("database", False, f"{where} has no schema yet; {upgrade}.")
    else:
        yield Finding(
            "database",
            False,
            f"{where} is at schema {current}, this version needs {head}; {upgrade} "
            "(stop the daemon first).",
        )


def check_plant(config: DaemonConfig) -> Iterator[Finding]:
    """With ``plant_database`` set: the plant database answers (its schema is the
    daemon's to migrate), and what the line still owes it. Unreachable is a finding, not
    a stop: the line inspects and alerts on and forwards the backlog when it returns."""
    if config.plant_database is None:
        return
    from padformer_edge.daemon.forwarder import plant_url
    from padformer_edge.store.lines import with_line
    from padformer_edge.store.outbox import line_backlog

    url = plant_url(config.plant_database)
    owed = ""
    local = sqlite_path(resolve_url(config.database))
    if local is not None and local.exists():
        engine = with_line(open_engine(str(local), read_only=True), config.line_name)
        try:
            owed = f"; {line_backlog(engine)} change(s) of this line not yet forwarded"
        except Exception:  # not migrated to the outbox yet: the database finding says so
            owed = ""
        finally:
            engine.dispose()
    try:
        engine = open_engine(url.update_query_dict({"connect_timeout": "3"}), read_only=True)
        try:
            current = current_revision(engine)
        finally:
            engine.dispose()
    except Exception as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
        yield Finding(
            "plant",
            False,
            f"{describe(url)} cannot be reached ({reason}){owed}; the line inspects and "
            "alerts on and forwards when it answers: check the URL, the server and the "
            "network.",
        )
        return
    schema = f"at schema {current}" if current else "empty (watch migrates it)"
    yield Finding("plant", True, f"{describe(url)} answers, {schema}{owed}")


def check_heartbeat(
    database: str | None, multiple: float, line: str | None = None
) -> Iterator[Finding]:
    """The daemon of ``line`` (None: the newest beat of any) writing ``database`` beat
    within ``multiple`` of its promised interval (the page's rule): asked for only when
    the daemon should be running, because before the first ``watch`` there is no
    heartbeat and nothing is wrong. On a database several lines share, another line's
    fresh beat says nothing of this one."""
    from padformer_edge.store.heartbeat import read_heartbeat
    from padformer_edge.web.daemon_state import seconds

    url = resolve_url(database)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        yield Finding("daemon", False, f"{describe(url)} does not exist: no daemon has run; "
                      "start it with `padformer-edge watch`.")  # fmt: skip
        return
    engine = open_engine(url, read_only=True)
    try:
        beat = read_heartbeat(engine, line=line)
    except Exception as err:  # the database finding already says why it cannot be read
        yield Finding("daemon", False, f"the heartbeat cannot be read: {type(err).__name__}")
        return
    finally:
        engine.dispose()
    if beat is None:
        yield Finding("daemon", False, f"no daemon has written a heartbeat to {describe(url)}; "
                      "start it with `padformer-edge watch`.")  # fmt: skip
    elif beat.stale(multiple):
        yield Finding(
            "daemon", False,
            f"silent: last heartbeat {seconds(beat.age_s)} ago (pid {beat.pid} on "
            f"{beat.host}), more than {multiple:g} x its {seconds(beat.interval_s)} "
            "interval; it is stopped or stuck: check `systemctl status` or its log.",
        )  # fmt: skip
    else:
        yield Finding("daemon", True, f"heartbeat {seconds(beat.age_s)} ago (pid {beat.pid} on "
                      f"{beat.host}): {beat.status}")  # fmt: skip


def check_sinks(config: DaemonConfig) -> Iterator[Finding]:
    """Each alert sink can be reached: a webhook's or broker's port accepts a TCP
    connection, a command's program exists. Nothing is sent."""
    yield Finding("sink 'log'", True, "always on")
    for name, sink in sorted(config.alerts.sinks.items()):
        yield sink_finding(f"sink '{name}'", sink)


def sink_finding(subject: str, sink: SinkConfig) -> Finding:
    """Whether one sink is reachable from here, and how to fix it when it is not."""
    if sink.type == "command":
        assert sink.argv
        program = sink.argv[0]
        found = shutil.which(program)
        if found is None:
            return Finding(
                subject, False, f"program {program} is not found or not executable; fix argv."
            )
        return Finding(subject, True, f"program {found} exists")
    if sink.type == "webhook":
        assert sink.url
        parts = urlsplit(sink.url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
    else:
        host = sink.host or ""
        port = sink.port or (8883 if sink.tls else 1883)
    try:
        with socket.create_connection((host, port), timeout=min(sink.timeout_s, CONNECT_TIMEOUT_S)):
            pass
    except OSError as err:
        reason = err.strerror or type(err).__name__
        return Finding(
            subject,
            False,
            f"{host}:{port} cannot be reached ({reason}); check the address, the network "
            "and that the service runs.",
        )
    return Finding(subject, True, f"{host}:{port} accepts connections")


def check_certificate(config: DaemonConfig, now: datetime | None = None) -> Iterator[Finding]:
    """The page's TLS certificate, when there is one, is readable and not about to expire
    (``RENEW_WITHIN_DAYS``): an expired one turns every operator's browser away."""
    if config.http is None or config.http.tls_cert is None:
        return
    from padformer_edge.web.certificate import RENEW_WITHIN_DAYS, expiry

    path = config.http.tls_cert
    try:
        ends = expiry(path)
    except UserError as err:
        yield Finding("certificate", False, str(err))
        return
    left = ends - (now or datetime.now(UTC))
    day = ends.strftime("%Y-%m-%d %H:%M UTC")
    if left.total_seconds() <= 0:
        yield Finding("certificate", False, f"{path} expired on {day}; renew it.")
    elif left < timedelta(days=RENEW_WITHIN_DAYS):
        yield Finding(
            "certificate",
            False,
            f"{path} expires in {left.days} day(s), on {day}; renew it now (the page "
            "takes a renewed certificate up without a restart).",
        )
    else:
        yield Finding("certificate", True, f"{path} is valid until {day}")


def check_disk(paths: list[Path]) -> Iterator[Finding]:
    """Free space on each file system the daemon writes to (state, heatmaps, database)."""
    seen: set[int] = set()
    for path in paths:
        existing = path.expanduser().absolute()
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        device = existing.stat().st_dev
        if device in seen:
            continue
        seen.add(device)
        usage = shutil.disk_usage(existing)
        free = f"{usage.free / (1 << 30):.1f} GiB free of {usage.total / (1 << 30):.1f} GiB"
        if usage.free < MIN_FREE_BYTES:
            yield Finding(
                f"disk {existing}",
                False,
                f"{free}; prune old results (`padformer-edge results prune --older-than 30d`) "
                "or free space.",
            )
        else:
            yield Finding(f"disk {existing}", True, free)
