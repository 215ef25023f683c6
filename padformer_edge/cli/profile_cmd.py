"""``padformer-edge profile``: set up, calibrate and try out inspection profiles."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import typer
import yaml
from rich.console import Console
from rich.table import Table

from padformer_edge.cli import detection_options as options
from padformer_edge.cli.checks import require_file, require_folder
from padformer_edge.cli.choices import choice_option
from padformer_edge.cli.database import config_option, database_of, db_option
from padformer_edge.cli.output import echo_json, table_console
from padformer_edge.cli.progress import job_progress
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.devices.runtimes import DEVICES, GRAPH_RUNTIMES
from padformer_edge.errors import UserError
from padformer_edge.methods.registry import method_for, metrics
from padformer_edge.profiles.delete import UNKNOWN_FIX, delete_profile
from padformer_edge.profiles.layout import profiles_root
from padformer_edge.profiles.profile import (
    existing_profile_folder,
    list_profile_names,
    load_profile,
)
from padformer_edge.weights import resolve_model

if TYPE_CHECKING:
    from padformer_edge.profiles.review_calibration import ReviewPlan
    from padformer_edge.profiles.schema import CalibrationResult, FalseAlarmBounds

app = typer.Typer(
    help="Inspection profiles: a product's model, references and threshold.",
    no_args_is_help=True,
)
ROOT_HELP = "Profiles folder; else $PADFORMER_EDGE_PROFILES, else <state dir>/profiles."
DEVICE_HELP = "Where the model runs (default: the profile's own setting)."
REGIONS_HELP = (
    "YAML file of polygons in frame pixels to leave out of scoring (fixtures, labels, "
    "stamps): ignore_regions: [{name: ..., points: [[x, y], ...]}]."
)
_out = table_console()
_err = Console(stderr=True)


def _say(text: str) -> None:
    _out.print(text, highlight=False, soft_wrap=True)


@app.command("create")
@options.with_detection_options()
def create(
    name: str = typer.Argument(..., help="Profile name (letters, digits, '.', '_', '-')."),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="Checkpoint (.safetensors); default: the shipped generic model."
    ),
    references: Path = typer.Option(
        ..., "--references", "-r", help="Folder of good images of the product, one size."
    ),
    shots: int | None = typer.Option(
        None, "--shots", "-n", help="References to keep, chosen to cover viewpoints (default all)."
    ),
    background: Path | None = typer.Option(
        None, "--background", help="Photo of the camera's empty belt: find the part in each frame."
    ),
    ignore_regions: Path | None = typer.Option(
        None, "--ignore-regions", help=REGIONS_HELP, metavar="FILE.yaml"
    ),
    settings: DetectionSettings = options.FROM_OPTIONS,
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
) -> None:
    """Make profile NAME; with --shots, keep the references that cover the most views.
    With --runtime onnxruntime or openvino the profile also stores its exported graphs."""
    # The folder and the checkpoint first: a mistyped path is one line at once, not after
    # seconds of loading torch (or of hashing the shipped model).
    require_folder(references, "reference folder", "pass a folder of good images of the product")
    # the weights the method will read named (compare: its comparator, checked against its
    # card once per process), so a checkpoint it never reads is neither located nor hashed;
    # a --model given is still checked to exist: a mistyped path is never taken silently
    settings = method_for(settings.metric).settled(settings)
    if model is not None or settings.section.weights_sha256() is None:
        model = resolve_model(model)
        require_file(model, "checkpoint", "give the path of a .safetensors file")
    if background is not None:
        require_file(background, "belt photo", "give a photo of the camera's empty belt")
    from padformer_edge.profiles.regions import read_regions  # no torch: refused at once

    regions = [] if ignore_regions is None else read_regions(ignore_regions)
    from padformer_edge.profiles.create import create_profile  # torch: only when run

    result = create_profile(
        profiles_root(root), name, model, references, shots, settings, background, regions
    )
    chosen = ", ".join(p.name for p in result.chosen)
    _say(f"created profile '{name}' at {result.profile.folder}")
    _say(f"references ({len(result.chosen)} of {result.offered}): {chosen}")
    _say(f"next: padformer-edge profile calibrate {name} --good DIR")


@app.command("export")
def export(
    name: str = typer.Argument(..., help="Profile name."),
    runtime: str = choice_option(
        "onnxruntime",
        "--runtime",
        GRAPH_RUNTIMES,
        help="The runtime the profile switches to: onnxruntime (ONNX graphs), or openvino "
        "(the ONNX graphs plus their OpenVINO IR).",
    ),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
) -> None:
    """Store NAME's graphs and their sha256 in the profile and switch it to --runtime,
    so a line PC runs it without torch."""
    from padformer_edge.profiles.export import export_profile  # torch: only when run

    profile = export_profile(profiles_root(root), name, runtime)  # type: ignore[arg-type]
    assert profile.config.exported is not None
    _say(
        f"exported profile '{name}' to {profile.folder / profile.config.exported.folder} "
        f"({len(profile.config.exported.files)} files, sha256 in profile.yaml); "
        f"runtime: {runtime}"
    )


@app.command("calibrate")
def calibrate(
    name: str = typer.Argument(..., help="Profile name."),
    good: Path | None = typer.Option(
        None, "--good", "-g", help="Held-out good images (not references)."
    ),
    anomalous: list[Path] = typer.Option(
        [],
        "--anomalous",
        "-a",
        help="Labelled defective images, for recall and F1: a folder of them, or a parent "
        "with one folder per defect kind (as synth writes test/); repeatable.",
    ),
    target_fpr: float = typer.Option(
        0.01, "--target-fpr", help="False-alarm rate wanted on good parts."
    ),
    upper_bound: bool = typer.Option(
        False,
        "--upper-bound",
        help="Set the threshold so that the target is the 95% upper bound of the false-alarm "
        "rate it promises (exact order-statistic bound; needs at least 29 good images for "
        "0.1, 59 for 0.05, 299 for 0.01), instead of the quantile plus its bootstrap margin.",
    ),
    device: str | None = choice_option(None, "--device", DEVICES, help=DEVICE_HELP),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
    from_reviews: bool = typer.Option(
        False,
        "--from-reviews",
        help="Instead of --good: the threshold that keeps every reviewed true defect of "
        "NAME flagged with the fewest reviewed false alarms, from the history database. "
        "Shows the change and writes nothing unless --yes names who applies it.",
    ),
    yes: str | None = typer.Option(
        None,
        "--yes",
        metavar="ENGINEER",
        help="With --from-reviews: apply the change shown, recorded in the profile's "
        "history under this name: once the database has users, a user with role engineer; "
        "before that, any name, recorded beside the shell account.",
    ),
    accept_unreviewed: int | None = typer.Option(
        None,
        "--accept-unreviewed",
        metavar="N",
        min=0,
        help="With --from-reviews --yes: pass the N unreviewed parts the current threshold "
        "flags that the new one would clear, unreviewed (N: their count in the preview; "
        "without it such a change is refused until they are reviewed).",
    ),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Set NAME's threshold so good parts raise false alarms at the target rate, or
    (--from-reviews) from the inspections operators reviewed."""
    _check_calibration_flags(good, anomalous, upper_bound, from_reviews, yes, accept_unreviewed)
    if from_reviews:
        _calibrate_from_reviews(name, root, db, config, yes, accept_unreviewed)
        return
    _calibrate_from_good(name, root, good, anomalous, target_fpr, device, upper_bound)


def _check_calibration_flags(
    good: Path | None,
    anomalous: list[Path],
    upper_bound: bool,
    from_reviews: bool,
    yes: str | None,
    accept_unreviewed: int | None,
) -> None:
    """Refuse options that belong to the other source (good images or the reviews)."""
    if upper_bound and from_reviews:
        raise UserError(
            "--upper-bound sets a threshold from good images; drop it or --from-reviews."
        )
    if from_reviews:
        if good is not None or anomalous:
            raise UserError(
                "--from-reviews reads the reviewed history, not image folders; "
                "drop --good and --anomalous, or drop --from-reviews."
            )
        if accept_unreviewed is not None and yes is None:
            raise UserError(
                "--accept-unreviewed N goes with --yes ENGINEER, which applies the change; "
                "a preview passes nothing. Add --yes, or drop --accept-unreviewed."
            )
    elif yes is not None or accept_unreviewed is not None:
        raise UserError(
            "--yes ENGINEER and --accept-unreviewed confirm a recalibration from reviews; "
            "add --from-reviews, or drop them (calibrating from --good images asks for no "
            "confirmation)."
        )


def _calibrate_from_good(
    name: str,
    root: Path | None,
    good: Path | None,
    anomalous: list[Path],
    target_fpr: float,
    device: str | None,
    upper_bound: bool,
) -> None:
    """``calibrate --good``: score the held-out good images and set the threshold."""
    if good is None:
        raise UserError(
            "give --good DIR (held-out good images) or --from-reviews (the reviewed history)."
        )
    # The profile and the folders before torch loads: a typo costs one line, not seconds.
    load_profile(profiles_root(root), name)
    require_folder(good, "good folder", "pass a folder of held-out good images")
    for folder in anomalous:
        require_folder(folder, "anomalous folder", "pass a folder of defective images")
    from padformer_edge.profiles.calibrate import calibrate_profile  # torch: only when run

    with job_progress("calibrating", console=_err) as progress:
        report = calibrate_profile(
            profiles_root(root),
            name,
            good,
            anomalous,
            target_fpr,
            device,
            progress=progress.update,
            rule="upper-bound" if upper_bound else "quantile",
        )
    _say_calibration(report.result)


def _say_calibration(result: CalibrationResult) -> None:
    """The threshold, what it rests on and promises, and the anomalous images' check."""
    if result.rule == "upper-bound":
        _say(
            f"threshold {result.threshold:.6g} = the lowest of {result.good.count} good scores "
            f"whose promised false-alarm rate is at most {result.target_fpr:g} at its upper bound"
        )
    else:
        _say(
            f"threshold {result.threshold:.6g} = {1 - result.target_fpr:g} quantile of "
            f"{result.good.count} good scores ({result.good_quantile:.6g}) + margin "
            f"{result.margin:.6g} (bootstrap standard error of that quantile)"
        )
    _say(f"false alarms on the calibration set: {result.observed_fpr:.2%}")
    if result.rate_bounds is not None:
        _say(promise_sentence(result.rate_bounds, result.target_fpr, result.rule))
    if result.anomalous is not None:
        check = result.anomalous
        _say(
            f"{check.count} anomalous images: recall {check.recall_at_threshold:.2%}, "
            f"precision {check.precision_at_threshold:.2%} at the threshold; F1-optimal "
            f"threshold {check.f1_optimal_threshold:.6g} (F1 {check.f1_optimal:.3f})"
        )
    for warning in result.warnings:
        _err.print(f"[bold yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)


def promise_sentence(bounds: FalseAlarmBounds, target_fpr: float, rule: str) -> str:
    """What the threshold promises, in one sentence: the rate's bounds, what they rest
    on, and how many images the target needs."""
    line = (
        f"false-alarm rate this threshold promises on good parts: {bounds.low:.2%} to "
        f"{bounds.high:.2%} (each end holds with {bounds.confidence:.0%} confidence: exact "
        f"order-statistic bounds from {bounds.exceeding} of {bounds.count} good scores above "
        "it)"
    )
    if rule == "upper-bound":
        return line + f"; the target {target_fpr:g} is within the upper end."
    if bounds.high <= target_fpr:
        return line + f"; the target {target_fpr:g} is within the upper end."
    if bounds.count < bounds.images_needed:
        return line + (
            f"; promising the target {target_fpr:g} needs at least {bounds.images_needed} good "
            "images (then --upper-bound sets the threshold for it)."
        )
    return line + f"; --upper-bound sets the threshold so that {target_fpr:g} is the upper end."


def _calibrate_from_reviews(
    name: str,
    root: Path | None,
    db: str | None,
    config: Path | None,
    engineer: str | None,
    accepted: int | None,
) -> None:
    """``calibrate --from-reviews``: the preview, then the change only under ``--yes``.
    The database and, unless --root, the profiles folder come from the daemon config when
    one is given, as the daemon would read them."""
    from padformer_edge.profiles.review_calibration import (  # only when run; no torch
        apply_plan,
        plan_from_reviews,
    )
    from padformer_edge.store.engine import describe, reading, resolve_url
    from padformer_edge.store.migrations import open_checked
    from padformer_edge.store.signers import RECALIBRATE, check_given, signer

    check_given(engineer, RECALIBRATE)  # an empty name is refused before the database is read
    if config is not None and root is None:
        from padformer_edge.daemon.settings import load_daemon_config

        root = load_daemon_config(config, []).profiles_dir
    database = database_of(db, config)
    engine = open_checked(database)
    try:
        if engineer is not None:  # the one rule for who signs (store.signers)
            with reading(engine) as conn:
                engineer = signer(conn, engineer, RECALIBRATE)
        plan = plan_from_reviews(profiles_root(root), name, engine, describe(resolve_url(database)))
    finally:
        engine.dispose()
    _show_plan(plan)
    if engineer is None:
        accept = f" --accept-unreviewed {len(plan.unreviewed)}" if plan.unreviewed else ""
        _say(
            f"nothing changed. To apply this threshold, run `padformer-edge profile calibrate "
            f"{name} --from-reviews --yes ENGINEER{accept}` (ENGINEER: your name, recorded "
            "in the profile's history)."
        )
        return
    # refused (check_accepted) after the preview, so the engineer sees which parts
    profile = apply_plan(profiles_root(root), plan, engineer, accepted)
    change = profile.config.history[-1]
    _say(
        f"applied: profile '{name}' threshold {change.new_threshold:.6g}, recorded in "
        f"{profile.folder / 'profile.yaml'} (history: by {change.by} at {change.at})."
    )


def _show_unreviewed(plan: ReviewPlan) -> None:
    """The parts nobody reviewed that the current threshold flags and the new one would
    pass, apart from the rest and first: any of them may be a real defect."""
    if not plan.unreviewed:
        old = "none" if plan.old_threshold is None else f"{plan.old_threshold:.6g}"
        _say(f"no unreviewed part flagged at the current threshold ({old}) would pass.")
        return
    count = len(plan.unreviewed)
    _out.print(
        f"[bold red]{count} unreviewed parts flagged at the current threshold would pass; "
        "any may be a real defect:[/] review them (padformer-edge results review ID "
        f"--true-defect or --false-alarm) and preview again, or accept them with "
        f"--accept-unreviewed {count} when applying.",
        highlight=False,
        soft_wrap=True,
    )
    table = Table("inspection", "camera", "score", "stored", title="unreviewed, would pass")
    for c in plan.unreviewed:  # highest score first: the most defect-like on top
        stored = "anomaly" if c.was_anomaly else "good"
        table.add_row(str(c.inspection_id), c.camera, f"{c.score:.6g}", stored)
    _out.print(table)


def _show_plan(plan: ReviewPlan) -> None:
    """The preview: thresholds, the reviews used, every verdict that would change."""
    from padformer_edge.store.models import ReviewVerdict

    result = plan.result
    check = result.anomalous
    assert check is not None
    old = "none" if plan.old_threshold is None else f"{plan.old_threshold:.6g}"
    _say(
        f"profile '{plan.profile.name}': threshold {old} -> {result.threshold:.6g}, from "
        f"{check.count} reviewed true defects (lowest {check.scores.min:.6g}) and "
        f"{result.good.count} reviewed false alarms in {plan.source}"
    )
    _say(
        f"reviewed true defects flagged: {check.recall_at_threshold:.0%}; reviewed false "
        f"alarms still flagged: {result.observed_fpr:.0%}"
    )
    used = Table("inspection", "verdict", "score", "reviewer", "reviewed at", title="reviews used")
    for r in plan.used:
        used.add_row(
            str(r.inspection_id), r.verdict.value, f"{r.score:.6g}", r.reviewer,
            r.reviewed_at.isoformat(timespec="seconds"),
        )  # fmt: skip
    _out.print(used)
    _show_unreviewed(plan)
    changes = plan.other_changes
    if not changes:
        _say(f"no {'other ' if plan.unreviewed else ''}stored inspection would change its verdict.")
    else:
        passing = sum(c.newly_passing for c in changes)
        _say(
            f"{'other ' if plan.unreviewed else ''}stored verdicts that would change: "
            f"{passing} would pass, {len(changes) - passing} would be flagged (reviewed "
            "true defects that would pass first, then reviewed false alarms, highest score "
            "first: a real defect reviewed as a false alarm by mistake sits at the top)"
        )
        table = Table("inspection", "camera", "score", "stored", "new", "review")
        for c in changes:
            review = c.review.value if c.review is not None else "-"
            if c.newly_passing and c.review is ReviewVerdict.true_defect:
                review = f"[bold red]{review}[/]"
            stored, new = ("anomaly", "good") if c.newly_passing else ("good", "anomaly")
            table.add_row(str(c.inspection_id), c.camera, f"{c.score:.6g}", stored, new, review)
        _out.print(table)
    for warning in result.warnings:
        _err.print(f"[bold yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)


@app.command("list")
def list_profiles(
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
    as_json: bool = typer.Option(False, "--json", help="A JSON array, one object per profile."),
) -> None:
    """List the profiles with their model, reference count and threshold."""
    folder = profiles_root(root)
    profiles, broken = [], []
    for name in list_profile_names(folder):
        try:
            profiles.append(load_profile(folder, name))
        except UserError as err:  # one bad file must not hide the other profiles
            broken.append((name, str(err)))
    if as_json:
        rows: list[dict[str, object]] = [
            {
                "name": p.name,
                "model": p.weights_label,
                "threshold": p.threshold,
                "references": len(p.reference_paths),
            }
            for p in profiles
        ]
        echo_json(rows + [{"name": name, "error": error} for name, error in broken])
        return
    if not profiles and not broken:
        _say(f"no profiles under {folder}; make one with `padformer-edge profile create`.")
        return
    table = Table("name", "model", "references", "threshold", "calibrated")
    for p in profiles:
        calibrated = p.calibration.calibrated_at if p.calibration else "no"
        threshold = f"{p.threshold:.6g}" if p.threshold is not None else "-"
        table.add_row(p.name, p.weights_label, str(len(p.reference_paths)), threshold, calibrated)
    _out.print(table)
    for name, error in broken:
        _err.print(f"[bold red]invalid profile {name}:[/] {error}", highlight=False, soft_wrap=True)


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Profile name."),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
) -> None:
    """Print NAME's profile.yaml (settings, references, calibration) and its folder."""
    profile = load_profile(profiles_root(root), name)
    _say(f"# {profile.folder}")
    typer.echo(yaml.safe_dump(profile.config.model_dump(mode="json"), sort_keys=False), nl=False)


@app.command("test")
def test(
    name: str = typer.Argument(..., help="Profile name."),
    images: list[Path] = typer.Argument(..., metavar="IMAGE", help="Image files to inspect."),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Folder for heatmap PNGs (default: <state dir>/profile-test/NAME; never the "
        "current folder).",
    ),
    device: str | None = choice_option(None, "--device", DEVICES, help=DEVICE_HELP),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
    as_json: bool = typer.Option(False, "--json", help="A JSON array, one object per image."),
    no_fail: bool = typer.Option(
        False, "--no-fail", help="Exit 0 even when an image is anomalous."
    ),
) -> None:
    """Inspect IMAGE files with NAME exactly as the daemon would: score and verdict.

    Exits 1 when any image is anomalous (unless --no-fail), so a script can gate on it."""
    from padformer_edge.profiles.verdicts import (  # torch: only when run
        default_heatmap_folder,
        inspect_images,
    )

    for image in images:
        require_file(image, "image", "check the path")
    folder = out if out is not None else default_heatmap_folder(name)
    with job_progress("testing", console=_err) as progress:
        verdicts = inspect_images(
            profiles_root(root), name, images, folder, device, progress.update
        )
    if as_json:
        echo_json([{**asdict(v), "path": str(v.path), "heatmap": str(v.heatmap)} for v in verdicts])
    else:
        table = Table("file", "score", "normalised", "verdict", "heatmap")
        for v in verdicts:
            verdict = f"[red]{v.word}[/]" if v.anomalous else f"[green]{v.word}[/]"
            table.add_row(str(v.path), *v.shown(), verdict, str(v.heatmap))
        _out.print(table)
    if any(v.anomalous for v in verdicts) and not no_fail:
        raise typer.Exit(1)


@app.command("set-model")
def set_model_cmd(
    name: str = typer.Argument(..., help="Profile name."),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="The new checkpoint (.safetensors)."
    ),
    metric: str | None = choice_option(
        None,
        "--metric",
        metrics,
        help="The new metric; compare is the learned comparison (the shipped comparator).",
    ),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
) -> None:
    """Adopt a new checkpoint or metric for NAME; its threshold is cleared until
    recalibrated."""
    load_profile(profiles_root(root), name)  # the name and the file before torch loads
    if model is None and metric is None:
        raise UserError(
            f"profile set-model {name} needs --model FILE, --metric NAME or both; "
            f"e.g. padformer-edge profile set-model {name} --metric compare."
        )
    if model is not None:
        require_file(model, "checkpoint", "give the path of a .safetensors file")
    from padformer_edge.profiles.create import set_model  # torch: only when run

    profile = set_model(profiles_root(root), name, model, metric)
    _say(
        f"profile '{name}' now uses {profile.weights_label} (sha256 "
        f"{profile.model_sha256[:12]}...) with metric {profile.detection.metric}"
    )
    _say(f"next: padformer-edge profile calibrate {name} --good DIR")


@app.command("set-regions")
def set_regions_cmd(
    name: str = typer.Argument(..., help="Profile name."),
    ignore_regions: Path | None = typer.Option(
        None, "--ignore-regions", help=REGIONS_HELP, metavar="FILE.yaml"
    ),
    clear: bool = typer.Option(
        False, "--clear", help="Remove every region: score the whole frame."
    ),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
) -> None:
    """Set the parts of the frame NAME's score ignores, or --clear them; its threshold is
    cleared until recalibrated."""
    if (ignore_regions is None) == (not clear):
        raise UserError(
            f"profile set-regions {name} needs exactly one of --ignore-regions FILE.yaml or "
            f"--clear; e.g. padformer-edge profile set-regions {name} --ignore-regions "
            "regions.yaml."
        )
    from padformer_edge.profiles.regions import set_regions

    profile = set_regions(profiles_root(root), name, ignore_regions)
    named = ", ".join(region.name for region in profile.config.ignore_regions)
    _say(f"profile '{name}' ignores {named}" if named else f"profile '{name}' ignores no region")
    _say(f"next: padformer-edge profile calibrate {name} --good DIR")


@app.command("delete")
def delete(
    name: str = typer.Argument(..., help="Profile name."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
) -> None:
    """Delete NAME's folder: its profile.yaml, references and cache. Asks first unless --yes."""
    folder = existing_profile_folder(profiles_root(root), name, UNKNOWN_FIX)
    if not yes:
        if not sys.stdin.isatty():  # nobody to ask: a script must say --yes
            raise UserError(f"deleting profile '{name}' needs confirmation; add --yes.")
        if not typer.confirm(f"Delete profile '{name}' and everything in {folder}?"):
            _say(f"kept profile '{name}'.")
            raise typer.Exit(1)
    delete_profile(folder.parent, name)
    _say(f"deleted profile '{name}' ({folder}).")
