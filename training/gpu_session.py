"""One training session on a lent GPU: candidates trained side by side, everything they
produce in one output folder.

A lent machine is bare, brief and cannot reach a package registry, so one prepared call
must do the whole session: unpack the bundle (``padformer_edge_training.release.gpu_bundle``), write
each candidate's recipe, start every training at once on the one GPU, stop the ones still
running at the deadline like Ctrl-C (each writes its resume point), and bring back every
candidate's weights and log. The candidates, their recipes, lengths and data are options,
so a new session is a new command line, not a new script:

    python3 training/gpu_session.py --out "$OUT" --bundle .gpu/bundle --deadline 330 \\
        --data synth224-s0 \\
        --candidate edge-gpu=config/train/edge-synth-gpu.yaml \\
        --candidate "edge-gpu-3x=config/train/edge-synth-gpu.yaml,epochs=3/9,workers=3" \\
        --candidate "no_aat=config/train/edge-synth-gpu.yaml,off=use_aat" \\
        --candidate "generic-gpu=config/train/generic-gpu.yaml,data=generic" \\
        --candidate "pointer-gpu=config/train/generic-pointer.yaml,data=generic,init=generic" \\
        --candidate "comparator=config/train/comparator.yaml,data=comparator-train,steps=3000" \\
        --detect-speed

A candidate is ``NAME=RECIPE`` with optional ``data=`` (a dataset name in the bundle, or a
folder), ``epochs=WITHIN/CROSS`` (the stages' lengths; steps are epochs times the views
over the batch size), ``workers=N`` (loader workers), ``off=SWITCH`` (a ModelConfig
switch set false, Table 3's ablation of that module; repeatable) and ``init=MODEL`` (what
``train --init`` takes: ``generic``, the shipped model, or a checkpoint path, checked
before any training starts; a recipe with ``init_overrides`` fine-tunes, so it needs
one). A comparator recipe (``kind: comparator``) takes ``data=`` and ``steps=N`` (its
``optim.steps``) and none of the PADFormer options. Into ``--out`` go ``NAME.yaml`` (the
recipe as trained), ``NAME.log``, ``NAME.safetensors`` and ``session.json`` (the card
torch saw; each candidate's exit status, seconds, init and what became of its weights).
A candidate stopped at the deadline sends its last weights, scaled here (a comparator's
as they are), marked as such: ``last.safetensors`` itself stays as its resume point
recorded it, or ``train --resume`` refuses to continue the run. Only the standard
library is imported before the bundle is unpacked, since the machine's Python lacks the
project's other dependencies until then.

It runs by its path, as above, because a lent machine gets a bare copy of the repository
with nothing installed, where ``python3 -m padformer_edge_training.gpu_session`` finds no
such package: the folders ``training/`` and ``migrations/`` have their import names only
once installed. There the session makes a folder of links that gives them those names
and puts it, with the repository, on the path of itself and every process it starts.
Where padformer-edge is installed, ``-m padformer_edge_training.gpu_session`` works too.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# The repository's folders and the names an install gives them (pyproject's package-dir).
INSTALLED_NAMES = {"padformer_edge_training": "training", "padformer_edge_migrations": "migrations"}
GRACE_S = 90  # after the deadline's SIGTERM: time to write the resume point and stop workers


class CandidateError(ValueError):
    """A ``--candidate`` that cannot be run as written."""


@dataclass(frozen=True)
class Candidate:
    """One training of the session, as ``--candidate`` names it."""

    name: str
    recipe: Path
    data: str | None = None
    epochs: tuple[int, int] | None = None
    workers: int | None = None
    off: tuple[str, ...] = ()
    init: str | None = None
    steps: int | None = None  # a comparator recipe's optim.steps


PADFORMER_ONLY = ("epochs", "workers", "off", "init")


def parse_candidate(spec: str) -> Candidate:
    """``NAME=RECIPE[,data=D][,epochs=W/C][,workers=N][,off=SWITCH...][,init=MODEL]
    [,steps=N]`` as a Candidate."""
    head, *options = spec.split(",")
    name, _, recipe = head.partition("=")
    if not name or not recipe or "/" in name:
        raise CandidateError(
            f"--candidate {spec!r} needs NAME=RECIPE first (a name without '/'), e.g. "
            "edge-gpu=config/train/edge-synth-gpu.yaml."
        )
    fields: dict[str, Any] = {"off": ()}
    for option in options:
        key, _, value = option.partition("=")
        try:
            if key == "data" and value:
                fields["data"] = value
            elif key == "epochs":
                within, cross = value.split("/")
                fields["epochs"] = (int(within), int(cross))
            elif key == "workers":
                fields["workers"] = int(value)
            elif key == "off" and value:
                fields["off"] = (*fields["off"], value)
            elif key == "init" and value:
                fields["init"] = value
            elif key == "steps" and int(value) > 0:
                fields["steps"] = int(value)
            else:
                raise ValueError
        except ValueError:
            raise CandidateError(
                f"--candidate {name}: cannot read {option!r}; give data=NAME_OR_FOLDER, "
                "epochs=WITHIN/CROSS, workers=N, off=SWITCH, init=MODEL or (a comparator) "
                "steps=N."
            ) from None
    return Candidate(name, Path(recipe), **fields)


def write_recipe(candidate: Candidate, target: Path) -> dict[str, Any]:
    """The candidate's recipe, changed as it asks and validated as the trainer validates
    it, written to ``target``; returns the recipe as written."""
    import yaml

    from padformer_edge.config import load_config
    from padformer_edge_training.comparator.recipe import ComparatorRecipe
    from padformer_edge_training.config import TrainConfig

    recipe = yaml.safe_load(candidate.recipe.read_text(encoding="utf-8")) or {}
    if recipe.get("kind") == "comparator":
        given = [name for name in PADFORMER_ONLY if getattr(candidate, name) not in (None, ())]
        if given:
            raise CandidateError(
                f"--candidate {candidate.name}: {given[0]}= is for PADFormer recipes; a "
                "comparator recipe takes data= and steps=."
            )
        if candidate.steps is not None:
            recipe.setdefault("optim", {})["steps"] = candidate.steps
        target.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
        load_config(target, ComparatorRecipe)  # a mistyped key fails here, not on the GPU
        return recipe
    if candidate.steps is not None:
        raise CandidateError(
            f"--candidate {candidate.name}: steps= is for comparator recipes; give "
            "epochs=WITHIN/CROSS for a PADFormer one."
        )
    if candidate.epochs is not None:
        stages = recipe.setdefault("stages", {})
        for stage, epochs in zip(("within_view", "cross_view"), candidate.epochs, strict=True):
            stages.setdefault(stage, {})["epochs"] = epochs
    if candidate.workers is not None:
        recipe.setdefault("data", {})["num_workers"] = candidate.workers
    if candidate.off:
        overrides = recipe.setdefault("model", {}).setdefault("overrides", {})
        overrides.update(dict.fromkeys(candidate.off, False))
    target.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
    load_config(target, TrainConfig)  # a mistyped key fails here, not on the GPU
    return recipe


def _utc_now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class Outcome:
    """What became of one candidate, as ``session.json`` records it."""

    name: str
    recipe: str
    data: str
    exit: int | None = None
    seconds: float = 0.0
    started: str | None = None  # UTC, ISO 8601: when its process was started and seen ended
    ended: str | None = None
    stopped_at_deadline: bool = False
    weights: str = "none written"
    init: str | None = None
    kind: str = "padformer"  # the recipe's kind: what `train` trained
    notes: list[str] = field(default_factory=list)


class Session:
    """The trainings of one session and the folder their results go to."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out
        self.work: Path = args.work
        self.site: Path | None = None
        self.import_paths: list[str] = []  # where padformer-edge is not installed
        self.log = self.out / "session.log"

    def say(self, text: str) -> None:
        """Print a line and keep it in ``session.log``, which comes back with the rest."""
        print(text, flush=True)
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")

    def env(self) -> dict[str, str]:
        paths = [str(self.site)] if self.site else []
        paths += [*self.import_paths, str(REPO), os.environ.get("PYTHONPATH", "")]
        return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p),
                "PYTHONUNBUFFERED": "1"}  # fmt: skip

    def name_the_packages(self) -> None:
        """On a bare copy of the repository (nothing installed), links in ``--work`` that
        give ``training/`` and ``migrations/`` their installed import names; they and the
        repository go on this process's path and every child's. Nothing where
        ``padformer_edge_training`` already imports."""
        if importlib.util.find_spec("padformer_edge_training") is not None:
            return
        folder = self.work / "import-names"
        folder.mkdir(parents=True, exist_ok=True)
        for name, source in INSTALLED_NAMES.items():
            link = folder / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(REPO / source, target_is_directory=True)
        self.import_paths = [str(folder), str(REPO)]
        sys.path[:0] = self.import_paths
        self.say(f"padformer-edge is not installed here; {folder} names its packages")

    def unpack(self) -> None:
        """The bundle's site folder and datasets into ``--work``; then the project's own
        dependencies import here too."""
        command = [sys.executable, "-m", "padformer_edge_training.release.gpu_bundle", "unpack"]
        command += ["--bundle", str(self.args.bundle), "--to", str(self.work)]
        subprocess.run(command, check=True, cwd=REPO, env=self.env())
        self.site = self.work / "site"
        sys.path[:0] = [str(self.site)]

    def data_folder(self, candidate: Candidate) -> Path:
        name = candidate.data or self.args.data
        if name is None:
            raise CandidateError(f"--candidate {candidate.name} has no data; give --data or data=.")
        unpacked = self.work / "data" / name
        folder = unpacked if self.args.bundle and unpacked.is_dir() else Path(name)
        if not folder.is_dir():
            raise CandidateError(f"--candidate {candidate.name}: no dataset folder {folder}.")
        return folder

    def prepare(self, candidate: Candidate) -> Outcome:
        """Write and check the candidate's recipe and find its data, before any starts."""
        recipe = write_recipe(candidate, self.out / f"{candidate.name}.yaml")
        outcome = Outcome(candidate.name, str(candidate.recipe), str(self.data_folder(candidate)))
        outcome.kind = str(recipe.get("kind", "padformer"))
        if candidate.init is not None:
            from padformer_edge.weights import GENERIC, resolve_init

            start = resolve_init(candidate.init)  # a wrong name or path fails before any starts
            outcome.init = GENERIC if candidate.init == GENERIC else str(start.resolve())
        return outcome

    def start(self, outcome: Outcome) -> tuple[subprocess.Popen[bytes], Outcome, float]:
        command = [sys.executable, "-m", "padformer_edge", "--log-format", "json", "train"]
        command += ["--config", str(self.out / f"{outcome.name}.yaml"), "--data", outcome.data]
        command += ["--out", str(self.work / "runs" / outcome.name)]
        command += ["--device", self.args.device]
        if outcome.init is not None:
            command += ["--init", outcome.init]
        with (self.out / f"{outcome.name}.log").open("wb") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=self.env()
            )
        outcome.started = _utc_now()
        return process, outcome, time.monotonic()

    def train_all(self, prepared: list[Outcome]) -> list[Outcome]:
        """Every candidate at once; at the deadline the ones still running get SIGTERM (the
        trainer's Ctrl-C: a resume point), and SIGKILL after GRACE_S more seconds."""
        running = [self.start(outcome) for outcome in prepared]
        began = time.monotonic()
        deadline = self.args.deadline
        stopped = killed = False
        while any(p.poll() is None for p, _, _ in running):
            self.note_ended(running)
            elapsed = time.monotonic() - began
            if deadline is not None and not stopped and elapsed >= deadline:
                stopped = True
                for process, outcome, _ in running:
                    if process.poll() is None:
                        outcome.stopped_at_deadline = True
                        process.send_signal(signal.SIGTERM)
            if stopped and not killed and elapsed >= deadline + GRACE_S:
                killed = True
                for process, outcome, _ in running:
                    if process.poll() is None:
                        outcome.notes.append(f"killed {GRACE_S} s after the deadline's SIGTERM")
                        process.kill()
            time.sleep(0.2)
        self.note_ended(running)
        for process, outcome, _ in running:
            outcome.exit = process.returncode
            self.say(f"{outcome.name}: exit {outcome.exit} after {outcome.seconds:.0f} s")
        return [outcome for _, outcome, _ in running]

    @staticmethod
    def note_ended(running: list[tuple[subprocess.Popen[bytes], Outcome, float]]) -> None:
        """Each candidate's own end and length, once its process is seen ended (not the
        session's: a short candidate beside a long one must not report the long one's)."""
        for process, outcome, started in running:
            if outcome.ended is None and process.poll() is not None:
                outcome.ended = _utc_now()
                outcome.seconds = round(time.monotonic() - started, 1)

    def send_weights(self, outcome: Outcome) -> None:
        """The run's weights into ``--out``; a stopped run's last weights, scaled here."""
        folder = self.work / "runs" / outcome.name
        target = self.out / f"{outcome.name}.safetensors"
        if (folder / "model.safetensors").is_file():
            shutil.copy2(folder / "model.safetensors", target)
            outcome.weights = "finished"
        elif (folder / "last.safetensors").is_file():
            shutil.copy2(folder / "last.safetensors", target)
            if outcome.kind == "comparator":  # no score scales: a comparator's are learned
                outcome.weights = "last"
                self.say(f"{outcome.name}: weights {outcome.weights}")
                return
            command = [
                sys.executable,
                "-m",
                "padformer_edge_training.score_scales",
                str(target),
                outcome.data,
            ]
            scaled = subprocess.run(command, cwd=REPO, env=self.env(), check=False)
            outcome.weights = "last, scaled here" if scaled.returncode == 0 else "last, unscaled"
        self.say(f"{outcome.name}: weights {outcome.weights}")

    def describe_device(self) -> str:
        """torch's version and the card it sees, as the trainings will (the bundle's site
        folder on the path), so the session's record names the machine it ran on."""
        probe = (
            "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0) "
            "if torch.cuda.is_available() else 'no GPU')"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=self.env()
        )
        lines = (done.stdout or done.stderr).strip().splitlines()
        machine = lines[-1] if lines else "torch printed nothing"
        self.say(machine)
        return machine

    def detect_speed(self) -> None:
        script = REPO / "benchmarks" / "gpu_detect_speed.py"
        command = [
            sys.executable,
            str(script),
            "--json-out",
            str(self.out / "gpu_detect_speed.json"),
        ]
        done = subprocess.run(command, cwd=REPO, env=self.env(), check=False)
        self.say(f"gpu_detect_speed: exit {done.returncode}")

    def gpu_benchmarks(self) -> list[Any]:
        """Issue 40's benchmark steps (``gpu_benchmarks``) into ``--out``, within
        ``--bench-deadline`` seconds."""
        from padformer_edge_training.gpu_benchmarks import plan, run_steps

        device = "cuda" if self.args.device.startswith("cuda") else "cpu"
        render = self.args.render or self.work / "render"
        steps = plan(self.out, render, device, tiny=self.args.bench_tiny)
        return run_steps(steps, REPO, self.out, self.env(), self.args.bench_deadline, self.say)

    def pack_logs(self) -> None:
        """Logs, recipes and JSON as one ``logs.tar.gz``; the weights stay separate files."""
        kept = sorted(p for p in self.out.iterdir() if p.suffix in (".log", ".json", ".yaml"))
        with tarfile.open(self.out / "logs.tar.gz", "w:gz") as archive:
            for path in kept:
                archive.add(path, arcname=path.name)
        for path in kept:
            path.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 training/gpu_session.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="Folder for weights and logs.")
    parser.add_argument(
        "--candidate",
        action="append",
        default=[],
        help="NAME=RECIPE[,data=D][,epochs=W/C][,workers=N][,off=SWITCH][,init=MODEL]"
        "[,steps=N (comparator recipes)]; repeat: all train at once. None with "
        "--detect-speed: only the timing.",
    )
    parser.add_argument("--data", help="Dataset of candidates without data= (name or folder).")
    parser.add_argument("--bundle", type=Path, help="A gpu_bundle pack folder to unpack first.")
    parser.add_argument(
        "--work", type=Path, default=Path(".gpu/work"), help="Unpacked bundle and run folders."
    )
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu.")
    parser.add_argument("--deadline", type=float, help="Seconds until trainings are stopped.")
    parser.add_argument("--detect-speed", action="store_true", help="Then time detection (CUDA).")
    parser.add_argument(
        "--gpu-benchmarks",
        action="store_true",
        help="Then issue 40's measurements: the daemon on a burst and at a steady rate, the "
        "shipped model's detection grid with its CPU parity check.",
    )
    parser.add_argument(
        "--bench-deadline",
        type=float,
        default=330.0,
        help="Seconds for all of --gpu-benchmarks' steps together.",
    )
    parser.add_argument(
        "--render",
        type=Path,
        help="--gpu-benchmarks: the demo part's rendered views (benchmarks/rendered_part.py); "
        "default: rendered into --work, which needs the renderer's packages",
    )
    parser.add_argument(
        "--bench-tiny",
        action="store_true",
        help="--gpu-benchmarks at the smallest sizes (checks the session on a CPU).",
    )
    parser.add_argument("--pack-logs", action="store_true", help="Logs as one logs.tar.gz.")
    args = parser.parse_args(argv)
    if not args.candidate and not args.detect_speed and not args.gpu_benchmarks:
        parser.error(
            "give at least one --candidate to train, or --detect-speed or --gpu-benchmarks "
            "to measure"
        )
    try:
        candidates = [parse_candidate(spec) for spec in args.candidate]
    except CandidateError as err:
        parser.error(str(err))
    names = [c.name for c in candidates]
    if len(set(names)) != len(names):
        parser.error(f"--candidate names must differ; {sorted(names)} repeats one.")
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    session = Session(args)
    session.name_the_packages()
    if args.bundle is not None:
        session.unpack()
    from padformer_edge.errors import UserError  # importable once the bundle is unpacked

    try:
        prepared = [session.prepare(candidate) for candidate in candidates]
    except (CandidateError, UserError, OSError) as err:  # refused before any training starts
        print(f"error: {err}", file=sys.stderr)
        return 2
    machine = session.describe_device()
    outcomes = session.train_all(prepared)
    for outcome in outcomes:
        session.send_weights(outcome)
    if args.detect_speed and args.device.startswith("cuda"):
        session.detect_speed()
    benchmarks = session.gpu_benchmarks() if args.gpu_benchmarks else []
    summary = {
        "device": args.device,
        "machine": machine,
        "candidates": [asdict(o) for o in outcomes],
        "benchmarks": [asdict(b) for b in benchmarks],
    }
    (args.out / "session.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    if args.pack_logs:
        session.pack_logs()
    trained = all(o.weights != "none written" for o in outcomes)
    measured = all(b.exit == 0 for b in benchmarks)
    return 0 if trained and measured else 1


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == HERE:
        sys.path.pop(0)  # run by its path: training/ is a package, not a root of modules
    raise SystemExit(main())
