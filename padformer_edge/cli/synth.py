"""``padformer-edge synth``: render a synthetic multi-pose anomaly dataset (MAD-Sim layout)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import typer

from padformer_edge.cli.progress import job_progress
from padformer_edge.errors import UserError
from padformer_edge.reporting.native_output import import_native


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
    list_builtins: bool = typer.Option(False, "--list-builtins", help="List built-in models."),
) -> None:
    """Render good and defective views (Burrs, Missing, Stains; more with --defects) with
    pixel-exact masks."""
    if list_builtins:
        from padformer_edge_training.synth.builtins import (
            BUILTINS,  # the catalogue only: no renderer needed
        )

        for name, builtin in BUILTINS.items():
            typer.echo(f"builtin:{name}\t{builtin.description}")
        return
    import_native("pybullet")  # first, so its build banner (printed from C) is logged
    from padformer_edge_training.synth import ViewCounts, procedural_specs, render_dataset
    from padformer_edge_training.synth.kinds import resolve_kinds

    if (not mesh and procedural == 0) or out is None:
        raise UserError(
            "pass at least one --mesh or --procedural N, and an --out folder (or --list-builtins)."
        )
    if procedural:
        mesh = [*mesh, *procedural_specs(procedural, seed)]
    counts = ViewCounts(train_views, test_views_per_defect, good_test_views)
    kinds = resolve_kinds(defects)
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
        )
    elapsed = time.perf_counter() - started
    images = counts.per_class_with(kinds)
    typer.echo(f"{result}: {len(mesh)} class(es) x {images} images in {elapsed:.1f} s.")
