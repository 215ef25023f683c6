"""``padformer-edge demo``: the whole product on one synthetic part, start to finish.

Render a small dataset, take a model (the shipped generic one, or train one briefly with
``--train``), make and calibrate a profile, start the daemon on a camera folder, deliver
good and defective images as a camera would, and collect what the line would see: the
result history, the alerts and the heatmaps. Every step is the real code path an
installation uses; only the sizes are small.

Rendering and training come from the training package, imported inside the functions
that use them: the runtime package never imports ``padformer_edge_training`` while
it loads.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from padformer_edge.daemon.alerts.outbox import list_alerts
from padformer_edge.demo.line import (
    DaemonProcess,
    deliver_as_camera,
    wait_for_alerts,
    wait_until_finished,
)
from padformer_edge.demo.plan import CAMERA_FRAME, DemoPlan
from padformer_edge.detect.images import list_images
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.profiles.calibrate import calibrate_profile
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.schema import FalseAlarmBounds
from padformer_edge.reporting.native_output import import_native
from padformer_edge.store.engine import fold_sqlite_journal, open_engine, resolve_url
from padformer_edge.store.history import Filters, list_inspections, record
from padformer_edge.store.migrations import migrate_lock_path

if TYPE_CHECKING:
    from padformer_edge_training.config import TrainConfig

PRODUCT = "demo-part"
CAMERA = "line1-top"
# Appends each delivered alert to a file: shows the command sink with a real program.
ALERT_WRITER = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')"


@dataclass
class TrainingFacts:
    steps: int
    samples: int
    seconds: float
    views: int
    epochs: tuple[int, int]
    preset: str


@dataclass
class DemoReport:
    workdir: Path
    heatmaps: Path
    database: Path
    alerts_file: Path
    daemon_log: Path
    model: Path
    training: TrainingFacts | None  # None: a given model (the shipped one), no training step
    threshold: float
    promise: FalseAlarmBounds | None  # the false-alarm rate the threshold promises
    rows: list[dict[str, Any]]
    alerts: list[dict[str, Any]]
    daemon_exit: int


def _workdir(out: Path | None) -> Path:
    if out is None:
        return Path(tempfile.mkdtemp(prefix="padformer-edge-demo-"))
    if out.exists() and any(out.iterdir()):
        raise UserError(f"demo folder {out} is not empty; give a new or empty --out folder.")
    out.mkdir(parents=True, exist_ok=True)
    return out.absolute()


def _recipe(plan: DemoPlan, data: Path, out: Path) -> TrainConfig:
    from padformer_edge_training.config import TrainConfig

    steps_per_epoch = max(1, plan.train_views // plan.batch_size)
    return TrainConfig.model_validate({
        "model": {"preset": plan.preset},
        "data": {"root": str(data), "layout": "mad-sim", "num_refs": plan.num_refs,
                 "num_workers": 0},
        "loss": {"perceptual": plan.perceptual},
        "optim": {"batch_size": plan.batch_size, "min_lr": 1e-6,
                  "warmup_steps": steps_per_epoch * plan.within_view_epochs // 3},
        "stages": {"within_view": {"epochs": plan.within_view_epochs},
                   "cross_view": {"epochs": plan.cross_view_epochs}},
        "checkpoint": {"out": str(out), "every_steps": 10_000},
        "cpu_threads": 1,  # one thread: measured faster than two on a shared 2-core CPU
    })  # fmt: skip


def _train(plan: DemoPlan, data: Path, out: Path) -> tuple[Path, TrainingFacts]:
    from padformer_edge_training.trainer import run_training

    started = time.monotonic()
    summary = run_training(_recipe(plan, data, out), data, out)
    if summary.checkpoint is None:
        raise UserError(f"training stopped before it wrote a model; see {out}.")
    stages = summary.stages.values()
    facts = TrainingFacts(
        steps=summary.global_step,
        samples=sum(round(s["samples_per_s"] * s["seconds"]) for s in stages),
        seconds=time.monotonic() - started,
        views=plan.train_views,
        epochs=(plan.within_view_epochs, plan.cross_view_epochs),
        preset=plan.preset,
    )
    return summary.checkpoint, facts


def _daemon_config(work: Path, profiles: Path) -> Path:
    config = {
        "database": str(work / "results.sqlite3"),
        "heatmaps": str(work / "heatmaps"),
        "profiles_dir": str(profiles),
        "cameras": [{"name": CAMERA, "path": str(work / "camera"), "profile": PRODUCT}],
        "intake": {"stable_ms": 200, "rescan_interval_s": 30},
        "alerts": {
            "cooldown_s": 0,  # every anomaly notifies, so the demo shows them all
            "poll_interval_s": 0.5,
            "sinks": {"alerts-file": {
                "type": "command",
                "argv": [sys.executable, "-c", ALERT_WRITER, str(work / "alerts.jsonl")],
            }},
        },
    }  # fmt: skip
    path = work / "daemon.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _camera_images(class_dir: Path, plan: DemoPlan) -> tuple[list[Path], list[tuple[str, Path]]]:
    """Held-out good views split into calibration and camera sets, plus every defect."""
    good = list_images(class_dir / "test" / "good")
    calibration, camera_good = good[: plan.calibration_views], good[plan.calibration_views :]
    defects = [(d.name, p) for d in sorted((class_dir / "test").iterdir())
               if d.is_dir() and d.name != "good" for p in list_images(d)]  # fmt: skip
    # Interleaved, as parts arrive on a line: good and defective mixed.
    shots = [("good", p) for p in camera_good] + defects
    return calibration, sorted(shots, key=lambda item: (int(item[1].stem), item[0]))


def _camera_frame(size: str) -> Any:
    """The demo camera's frames (``plan.CAMERA_FRAME``) at ``size`` (WIDTHxHEIGHT)."""
    from padformer_edge_training.synth.frames import FrameSpec, parse_frame_size

    return FrameSpec(*parse_frame_size(size), **CAMERA_FRAME)


def _tidy_database(database: Path) -> None:
    """Leave the database file alone in the demo's folder: the daemon has stopped and
    the last reader was read-only, so the write-ahead log, its index and the migration
    lock would otherwise stay beside it (issue 51)."""
    fold_sqlite_journal(database)
    # nobody holds the lock: the daemon has exited
    migrate_lock_path(resolve_url(str(database))).unlink(missing_ok=True)


def run_demo(
    out: Path | None,
    plan: DemoPlan,
    say: Callable[[str], None],
    checkpoint: Path | None = None,
    model_note: str = "",
) -> DemoReport:
    """Run the line on one synthetic part; ``checkpoint`` None trains a model first.

    ``model_note`` tells the reader which model inspects the part (e.g. that the shipped
    one never saw it); it is printed with the rendering step.
    """
    import_native("pybullet")  # first, so its build banner (printed from C) is logged
    work = _workdir(out)
    say(f"working in {work}")
    try:
        return _run_in(work, plan, say, checkpoint, model_note)
    except BaseException:
        # a demo that fails (or is interrupted) leaves no temporary folder behind; a
        # folder the user named with --out stays, to be looked into
        if out is None:
            shutil.rmtree(work, ignore_errors=True)
        raise


def _run_in(
    work: Path,
    plan: DemoPlan,
    say: Callable[[str], None],
    checkpoint: Path | None,
    model_note: str,
) -> DemoReport:
    """The demo's steps in its folder ``work``."""
    from padformer_edge_training.synth import ViewCounts, render_dataset

    steps = 4 if checkpoint is not None else 5
    step = iter(range(1, steps + 1))

    counts = ViewCounts(train=plan.train_views, test_per_defect=plan.test_per_defect,
                        test_good=plan.test_good_views)  # fmt: skip
    if plan.frame is None:
        say(f"{next(step)}/{steps} rendering {plan.mesh} at {plan.size} px {model_note}...")
        data = render_dataset([plan.mesh], work / "data", counts, size=plan.size, seed=0)
    else:
        say(f"{next(step)}/{steps} rendering {plan.mesh} in {plan.frame} camera frames of a "
            f"belt {model_note}...")  # fmt: skip
        data = render_dataset(
            [plan.mesh], work / "data", counts, seed=0, frame=_camera_frame(plan.frame)
        )
    (class_dir,) = [d for d in data.iterdir() if d.is_dir()]
    background = data / "belt.png" if plan.frame is not None else None

    facts = None
    if checkpoint is None:
        say(f"{next(step)}/{steps} training the {plan.preset} preset briefly ...")
        checkpoint, facts = _train(plan, data, work / "run")

    say(f"{next(step)}/{steps} creating and calibrating the profile (model {checkpoint}) ...")
    profiles = work / "profiles"
    calibration, shots = _camera_images(class_dir, plan)
    create_profile(
        profiles, PRODUCT, checkpoint, class_dir / "train" / "good", shots=plan.shots,
        settings=DetectionSettings(passes=plan.passes, metric=plan.metric),
        background=background,
    )  # fmt: skip
    calibration_dir = work / "calibration-good"
    calibration_dir.mkdir()
    for path in calibration:
        shutil.copyfile(path, calibration_dir / path.name)
    calibration = calibrate_profile(
        profiles, PRODUCT, calibration_dir, target_fpr=plan.target_fpr
    ).result

    say(f"{next(step)}/{steps} starting the daemon and sending images as a camera would ...")
    (work / "camera").mkdir()
    config = _daemon_config(work, profiles)
    daemon = DaemonProcess(config, work / "daemon.log")
    daemon.start(ready_timeout_s=300)
    try:
        for index, (label, image) in enumerate(shots):
            deliver_as_camera(image, work / "camera", f"{index:03d}-{label}{image.suffix}")
            time.sleep(0.2)  # a camera's pace, so results arrive as the parts do
        wait_until_finished(
            work / "results.sqlite3", len(shots), daemon, timeout_s=120 + 10 * len(shots)
        )
        wait_for_alerts(work / "results.sqlite3", daemon, timeout_s=60)
    finally:
        exit_code = daemon.stop()

    say(f"{next(step)}/{steps} collecting results ...")
    engine = open_engine(str(work / "results.sqlite3"), read_only=True)
    try:
        rows = [record(r) for r in reversed(list_inspections(engine, Filters(), len(shots)))]
        alerts = list_alerts(engine, limit=10 * len(shots))
    finally:
        engine.dispose()
    _tidy_database(work / "results.sqlite3")
    return DemoReport(
        workdir=work, heatmaps=work / "heatmaps", database=work / "results.sqlite3",
        alerts_file=work / "alerts.jsonl", daemon_log=work / "daemon.log", model=checkpoint,
        training=facts,
        threshold=calibration.threshold, promise=calibration.rate_bounds, rows=rows,
        alerts=alerts, daemon_exit=exit_code,
    )  # fmt: skip
