"""``--defects``: the newer kinds are opt-in and never change what a render already was."""

from __future__ import annotations

import inspect
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import cv2
import pytest

from padformer_edge.errors import UserError
from padformer_edge_training.families import (
    FAMILIES,
    HELD_OUT_FAMILY,
    SCRATCHES,
    TRAINING_FAMILY,
    TRANSFER_FAMILY,
    UNSEEN_FAMILY,
)
from padformer_edge_training.synth import DEFECT_KINDS, ViewCounts, render_dataset
from padformer_edge_training.synth.dataset import min_mask_pixels
from padformer_edge_training.synth.kinds import (
    ALL_KINDS,
    KIND_WORDS,
    NEWER_GENERATORS,
    resolve_kinds,
)
from tests.cli_process import run_cli
from tests.git_history import is_commit

SMALL = ViewCounts(train=2, test_per_defect=2, test_good=1)
MESHES = ["builtin:duck", "procedural:2:0"]
SIZE = 64
REPO = Path(__file__).resolve().parents[2]
BEFORE_NEWER_KINDS = "9fe70e40e96d93584d37e2cb635007ed403b1ef9"  # the last commit without them
BEFORE_UNSEEN_KIND = "7d3dfd9610698220e8ad1b726864f43051e18ea5"  # the last commit without Bent
OLD_RENDER = """
import sys
import padformer_edge_training
from padformer_edge_training.synth import ViewCounts, render_dataset

assert padformer_edge_training.__file__.startswith(sys.argv[2]), padformer_edge_training.__file__
chosen = {"defects": sys.argv[4].split(",")} if len(sys.argv) > 4 else {}
render_dataset(sys.argv[3].split(","), sys.argv[1], ViewCounts(2, 2, 1), size=64, seed=5, **chosen)
"""


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kinds") / "all"
    return render_dataset(MESHES, out, SMALL, size=SIZE, seed=3, defects=["all"])


def test_the_families_name_every_kind_once() -> None:
    """Training, transfer and unseen are disjoint and cover every kind the renderer knows,
    plus the framed render's camera-pixel scratches (a transfer kind no 3D generator makes);
    held-out is exactly the transfer and unseen kinds."""
    named = [kind for family in FAMILIES.values() for kind in family]
    assert sorted(named) == sorted((*ALL_KINDS, SCRATCHES)) and len(set(named)) == len(named)
    assert SCRATCHES in TRANSFER_FAMILY and SCRATCHES not in ALL_KINDS
    assert set(TRAINING_FAMILY).isdisjoint(HELD_OUT_FAMILY)
    assert sorted(TRAINING_FAMILY + HELD_OUT_FAMILY) == sorted((*ALL_KINDS, SCRATCHES))
    assert ALL_KINDS[-len(UNSEEN_FAMILY) :] == UNSEEN_FAMILY, "the newest kind renders last"
    assert set(DEFECT_KINDS) <= set(TRAINING_FAMILY)
    assert ALL_KINDS[: len(DEFECT_KINDS)] == DEFECT_KINDS


def test_kinds_resolve_from_names_and_family_words() -> None:
    assert resolve_kinds([]) == DEFECT_KINDS
    assert resolve_kinds(["cracks,dents", "Burrs"]) == ("Burrs", "Dents", "Cracks")
    assert resolve_kinds(["training"]) == tuple(k for k in ALL_KINDS if k in TRAINING_FAMILY)
    assert resolve_kinds(["held-out"]) == tuple(k for k in ALL_KINDS if k in HELD_OUT_FAMILY)
    rendered_3d = tuple(k for k in HELD_OUT_FAMILY if k != SCRATCHES)
    assert resolve_kinds(["Transfer"]) == tuple(k for k in TRANSFER_FAMILY if k != SCRATCHES)
    assert resolve_kinds(["unseen"]) == UNSEEN_FAMILY
    assert resolve_kinds(["transfer", "unseen"]) == rendered_3d
    assert not set(resolve_kinds(["training"])) & set(HELD_OUT_FAMILY)
    assert resolve_kinds(["all", "Stains"]) == ALL_KINDS
    with pytest.raises(UserError, match="unknown defect kind 'Dentss' in --defects") as caught:
        resolve_kinds(["Dentss"])
    assert "\n" not in str(caught.value)


def test_default_kinds_keep_their_bytes_when_newer_kinds_are_added(
    every_kind: Path, tmp_path: Path
) -> None:
    """Every file of a default render is in a render with all kinds, byte for byte.

    The newer kinds come after the default three and draw from streams of their own;
    were they to share the class's stream or be rendered first, this would fail."""
    default = _files(render_dataset(MESHES, tmp_path / "default", SMALL, SIZE, seed=3))
    everything = _files(every_kind)
    for name, data in default.items():
        if name.endswith(("dataset.json", "transforms.json")):
            continue
        assert everything[name] == data, name
    for name in (n for n in default if n.endswith("transforms.json")):
        frames, more = (json.loads(d[name])["frames"] for d in (default, everything))
        assert more[: len(frames)] == frames
    manifests = [json.loads(d["dataset.json"]) for d in (default, everything)]
    assert manifests[0]["defect_kinds"] == list(DEFECT_KINDS)
    assert manifests[1]["defect_kinds"] == list(ALL_KINDS)
    assert {**manifests[1], "defect_kinds": list(DEFECT_KINDS)} == manifests[0]


@pytest.mark.parametrize(
    ("commit", "kinds"),
    [
        (BEFORE_NEWER_KINDS, None),  # the default three, before any newer kind existed
        (BEFORE_UNSEEN_KIND, [k for k in ALL_KINDS if k not in UNSEEN_FAMILY]),
    ],
    ids=["default-before-newer-kinds", "every-older-kind-before-bent"],
)
def test_a_render_is_byte_identical_to_the_code_before_later_kinds(
    tmp_path: Path, commit: str, kinds: list[str] | None
) -> None:
    """The code of an earlier commit, taken from git history, and today's code render the
    same dataset to the same bytes: the default three as before the newer kinds, and every
    older kind as before the unseen kind was added after them."""
    if is_commit(commit) is None:
        pytest.skip("this checkout has no git history to take the earlier code from")
    assert is_commit(commit)
    archive = subprocess.run(
        ["git", "archive", commit, "training", "padformer_edge"],
        cwd=REPO, capture_output=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    old = tmp_path / "old"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(old, filter="data")
    (old / "packages").mkdir()
    (old / "packages" / "padformer_edge_training").symlink_to(old / "training")
    (old / "packages" / "padformer_edge").symlink_to(old / "padformer_edge")
    meshes = ",".join(MESHES)
    chosen = [",".join(kinds)] if kinds else []
    subprocess.run(
        [sys.executable, "-c", OLD_RENDER, str(tmp_path / "before"), str(old), meshes, *chosen],
        env={**os.environ, "PYTHONPATH": str(old / "packages")}, check=True, timeout=600,
        capture_output=True, cwd=tmp_path,  # not the checkout: `-c` puts the folder first
    )  # fmt: skip
    now = render_dataset(
        MESHES, tmp_path / "now", ViewCounts(2, 2, 1), size=64, seed=5,
        **({"defects": kinds} if kinds else {}),
    )  # fmt: skip
    before = _files(tmp_path / "before")
    assert len(before) > 20 and _files(now) == before


def test_a_newer_kind_does_not_depend_on_its_companions(every_kind: Path, tmp_path: Path) -> None:
    alone = _files(
        render_dataset(MESHES, tmp_path / "one", SMALL, SIZE, seed=3, defects=["Cracks"])
    )
    everything = _files(every_kind)
    cracks = [n for n in alone if "/Cracks/" in n]
    assert len(cracks) == 2 * len(MESHES) * SMALL.test_per_defect
    assert all(alone[n] == everything[n] for n in cracks)


def test_same_seed_gives_identical_files_with_every_kind(every_kind: Path, tmp_path: Path) -> None:
    again = render_dataset(MESHES, tmp_path / "again", SMALL, SIZE, seed=3, defects=["all"])
    assert _files(again) == _files(every_kind)


def test_every_kind_has_its_folders_and_visible_masks(every_kind: Path) -> None:
    for name in ("duck", "procedural-2-000"):
        for kind in ALL_KINDS:
            for n in range(SMALL.test_per_defect):
                image = cv2.imread(str(every_kind / name / "test" / kind / f"{n}.png"))
                mask = cv2.imread(str(every_kind / name / "ground_truth" / kind / f"{n}_mask.png"))
                assert image.shape == (SIZE, SIZE, 3) and mask is not None
                assert (mask[..., 0] == 255).sum() >= min_mask_pixels(SIZE), (name, kind, n)


def test_the_option_help_names_every_kind_and_word() -> None:
    from padformer_edge.cli.synth import synth

    help_text = inspect.signature(synth).parameters["defects"].default.help
    words = set(help_text.replace(",", " ").replace(".", " ").replace(":", " ").split())
    assert set(ALL_KINDS) | set(KIND_WORDS) <= words


def test_cli_renders_the_chosen_kinds_and_refuses_unknown_ones(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    result = run_cli(
        "--log-format", "json", "synth", "--mesh", "builtin:lego", "--out", str(out),
        "--defects", "transfer", "--defects", "dents", "--train-views", "1",
        "--test-views-per-defect", "1", "--good-test-views", "1", "--size", "48",
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "1 class(es) x 5 images" in result.stdout
    chosen = [k for k in ALL_KINDS if k in ("Dents", *TRANSFER_FAMILY)]
    assert sorted(p.name for p in (out / "lego" / "test").iterdir()) == sorted(["good", *chosen])
    bad = run_cli("synth", "--mesh", "builtin:lego", "--out", str(tmp_path / "x"),
                  "--defects", "scratches", timeout=600)  # fmt: skip
    assert bad.returncode == 2
    [error] = bad.stderr.splitlines()
    assert "unknown defect kind 'scratches'" in error and not (tmp_path / "x").exists()
    assert set(NEWER_GENERATORS) <= set(error.replace(",", " ").replace(".", " ").split())


def test_cli_renders_only_the_unseen_kind_when_asked_for_it(tmp_path: Path) -> None:
    out = tmp_path / "unseen"
    result = run_cli(
        "--log-format", "json", "synth", "--mesh", "builtin:lego", "--out", str(out),
        "--defects", "unseen", "--train-views", "1", "--test-views-per-defect", "2",
        "--good-test-views", "1", "--size", "64", timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "1 class(es) x 4 images" in result.stdout
    assert json.loads((out / "dataset.json").read_text())["defect_kinds"] == list(UNSEEN_FAMILY)
    for folder in ("test", "ground_truth"):
        kinds = sorted(p.name for p in (out / "lego" / folder).iterdir())
        assert kinds == sorted(["good", *UNSEEN_FAMILY] if folder == "test" else UNSEEN_FAMILY)
    for n in range(2):
        mask = cv2.imread(str(out / "lego" / "ground_truth" / UNSEEN_FAMILY[0] / f"{n}_mask.png"))
        assert (mask[..., 0] == 255).sum() >= min_mask_pixels(64)
