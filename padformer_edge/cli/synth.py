"""``padformer-edge synth``: render a synthetic multi-pose anomaly dataset (MAD-Sim layout)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from padformer_edge.cli.progress import job_progress
from padformer_edge.errors import UserError
from padformer_edge.reporting.native_output import import_native

if TYPE_CHECKING:
    from padformer_edge_training.synth import ViewCounts
    from padformer_edge_training.synth.frames import FrameSpec


def _parse_colour(text: str) -> tuple[int, int, int]:
    """'white', '#rrggbb' or 'r,g,b' (0-255) into an RGB triple."""
    named = {"white": (255, 255, 255), "black": (0, 0, 0), "grey": (128, 128, 128)}
    if text.lower() in named:
        return named[text.lower()]
    if re.fullmatch(r"#[0-9a-fA-F]{6}", text):
        return tuple(int(text[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]
    parts = text.split(",")
    if len(parts) == 3 and all(p.strip().isdigit() and int(p) <= 255 for p in parts):
        return tuple(int(p) for p in parts)  # type: ignore[return-value]
    raise UserError(
        f"--background '{text}' is not a colour; use white, black, grey, "
        "#rrggbb or r,g,b with values 0-255."
    )


def synth(
    mesh: list[str] = typer.Option(
        [],
        "--mesh",
        help="Mesh file (OBJ, STL, PLY, OFF, GLB/GLTF, URDF) or builtin:NAME; "
        "repeat for several classes.",
    ),
    procedural: int = typer.Option(
        0,
        "--procedural",
        help="Also render N random procedural objects (classes procedural-SEED-INDEX).",
    ),
    out: Path | None = typer.Option(None, "--out", help="Dataset folder to create."),
    train_views: int = typer.Option(200, "--train-views", help="Good training images per class."),
    test_views_per_defect: int = typer.Option(
        30, "--test-views-per-defect", help="Test images per defect kind per class."
    ),
    good_test_views: int = typer.Option(30, "--good-test-views", help="Good test images."),
    size: int = typer.Option(256, "--size", help="Image width and height in pixels."),
    seed: int = typer.Option(0, "--seed", help="Same seed, same bytes."),
    background: str = typer.Option("white", "--background", help="white, #rrggbb or r,g,b."),
    defects: list[str] = typer.Option(
        [],
        "--defects",
        help="Defect kinds to render, comma-separated or repeated: Burrs, Missing, Stains, "
        "Dents, Discoloured, Foreign, Cracks, Bent, or a family word: default, training, "
        "transfer (Foreign, Cracks), unseen (Bent), held-out (transfer and unseen), all. "
        "Without it: the default Burrs, Missing, Stains.",
    ),
    frame: str | None = typer.Option(
        None,
        "--frame",
        help="Camera frames WIDTHxHEIGHT (e.g. 2448x2048): each image is the part on a belt "
        "at a random position, with its box in CLASS/frames.json.",
    ),
    part_scale: str | None = typer.Option(
        None, "--part-scale", help="With --frame: the part's share of the shorter side (0.15-0.6)."
    ),
    belt: str | None = typer.Option(
        None, "--belt", help="With --frame: plain (the --background colour), belt or photo."
    ),
    light_gain: float | None = typer.Option(
        None, "--light-gain", help="With --frame: per-frame gain drawn from 1 +- this (0)."
    ),
    colour_shift: float | None = typer.Option(
        None, "--colour-shift", help="With --frame: per-frame shift per channel, levels (0)."
    ),
    noise: float | None = typer.Option(
        None, "--noise", help="With --frame: sensor noise, standard deviation in levels (0)."
    ),
    jpeg_quality: int | None = typer.Option(
        None, "--jpeg-quality", help="With --frame: write JPEG at this quality (0: PNG)."
    ),
    empty_frames: int | None = typer.Option(
        None, "--empty-frames", help="With --frame: frames of the belt alone, in OUT/empty (0)."
    ),
    list_builtins: bool = typer.Option(False, "--list-builtins", help="List built-in models."),
) -> None:
    """Render good and defective views (Burrs, Missing, Stains; more with --defects) with
    pixel-exact masks."""
    if list_builtins:
        _list_builtins()
        return
    import_native("pybullet")  # first, so its build banner (printed from C) is logged
    from padformer_edge_training.synth import ViewCounts, procedural_specs
    from padformer_edge_training.synth.kinds import resolve_kinds

    if (not mesh and procedural == 0) or out is None:
        raise UserError(
            "pass at least one --mesh or --procedural N, and an --out folder (or --list-builtins)."
        )
    if procedural:
        mesh = [*mesh, *procedural_specs(procedural, seed)]
    counts = ViewCounts(train_views, test_views_per_defect, good_test_views)
    kinds = resolve_kinds(defects)
    spec = _frame_spec(
        frame, part_scale, belt, light_gain, colour_shift, noise, jpeg_quality, empty_frames
    )
    _render(mesh, out, counts, kinds, spec, size=size, seed=seed, background=background)


def _list_builtins() -> None:
    """``--list-builtins``: the catalogue only, so no renderer is needed."""
    from padformer_edge_training.synth.builtins import BUILTINS

    for name, builtin in BUILTINS.items():
        typer.echo(f"builtin:{name}\t{builtin.description}")


def _frame_spec(
    frame: str | None,
    part_scale: str | None,
    belt: str | None,
    light_gain: float | None,
    colour_shift: float | None,
    noise: float | None,
    jpeg_quality: int | None,
    empty_frames: int | None,
) -> FrameSpec | None:
    """The camera frames ``--frame`` asks for (``None`` without it); a frame option given
    without ``--frame`` is refused, as it would be silently unused."""
    framed = {
        "--part-scale": part_scale, "--belt": belt, "--light-gain": light_gain,
        "--colour-shift": colour_shift, "--noise": noise, "--jpeg-quality": jpeg_quality,
        "--empty-frames": empty_frames,
    }  # fmt: skip
    given = [name for name, value in framed.items() if value is not None]
    if frame is None and given:
        raise UserError(f"{given[0]} applies to camera frames; add --frame WIDTHxHEIGHT.")
    if frame is None:
        return None
    from padformer_edge_training.synth.frames import (
        FrameSpec,
        parse_frame_size,
        parse_share_range,
    )

    width, height = parse_frame_size(frame)
    return FrameSpec(
        width,
        height,
        part_scale=parse_share_range(part_scale or "0.15-0.6"),
        belt=belt or "belt",
        light=light_gain or 0.0,
        colour=colour_shift or 0.0,
        noise=noise or 0.0,
        jpeg=jpeg_quality or 0,
        empty=empty_frames or 0,
    )

def _render(
    mesh: list[str],
    out: Path,
    counts: ViewCounts,
    kinds: tuple[str, ...],
    spec: FrameSpec | None,
    *,
    size: int,
    seed: int,
    background: str,
) -> None:
    """Render the dataset under a progress bar and say what was written, in how long."""
    from padformer_edge_training.synth import render_dataset

    started = time.perf_counter()
    with job_progress("rendering") as progress:
        result = render_dataset(
            mesh,
            out,
            counts,
            size=size,
            seed=seed,
            background=_parse_colour(background),
            progress=progress.update,
            defects=kinds,
            frame=spec,
        )
    elapsed = time.perf_counter() - started
    images = counts.per_class_with(kinds)
    typer.echo(f"{result}: {len(mesh)} class(es) x {images} images in {elapsed:.1f} s.")
