"""An install adds only ``padformer_edge*`` import names to the Python it goes into.

The repository keeps the design's folders ``training/`` and ``migrations/``; pyproject's
``package-dir`` installs them as ``padformer_edge_training`` and
``padformer_edge_migrations``, so a line PC gains no top-level ``training`` or
``migrations`` to collide with another package so called. A mapped folder cannot be
found by ``packages.find``, so pyproject lists every package, and these tests fail on a
package folder missing from that list, on a wheel with any other top-level name or
without one of the modules, and on code or docs that still name a folder as a module:
from the repository's root that would load a second copy of every module beside the
installed one (the two packages refuse their folder's name for the same reason).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.wheel_build import ROOT, copy_sources, isolation_flags

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
# Top-level import name -> the repository folder it installs from.
FOLDERS = {"padformer_edge": "padformer_edge"} | SETUPTOOLS["package-dir"]
INSTALLED_NAMES = {"padformer_edge", "padformer_edge_training", "padformer_edge_migrations"}
OLD_NAMES = ("training", "migrations")
# A folder's name used as a module: `python -m training.x`, "training.x", `training.x`;
# not a path (a/training.x), an attribute (x.training.y) or a file (training.md).
OLD_MODULE = re.compile(
    r"(?<![\w/.-])(?:training|migrations)\.(?=[a-z_])"
    r"(?!(?:md|yaml|yml|json|log|py|txt|csv|html)\b)"
    r"|^\s*(?:from (?:training|migrations)(?:\.\w+)* import|import (?:training|migrations)\b)",
    re.MULTILINE,
)
CODE_FOLDERS = ("padformer_edge", "training", "migrations", "tests", "benchmarks", "docs")
TEXT_FILES = ("README.md", "mkdocs.yml", "docs/*.md", "config/**/*.yaml", "systemd/*", ".ci/*")


def package_names_on_disk() -> set[str]:
    """Every folder with an ``__init__.py`` under the mapped folders, by its import name."""
    names = set()
    for name, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            names.add(".".join((name, *parts)))
    return names


def module_paths_in_a_wheel() -> set[str]:
    """The wheel paths every ``.py`` file of the mapped folders must have."""
    return {
        "/".join((name, *path.relative_to(ROOT / folder).parts))
        for name, folder in FOLDERS.items()
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    }


def test_pyproject_lists_every_package_folder() -> None:
    missing = package_names_on_disk() - set(SETUPTOOLS["packages"])
    assert not missing, f"add {sorted(missing)} to [tool.setuptools] packages in pyproject.toml"
    assert set(SETUPTOOLS["packages"]) <= package_names_on_disk(), "a listed package is gone"


def test_the_wheel_holds_only_padformer_edge_names_and_every_module(tmp_path: Path) -> None:
    source = copy_sources(tmp_path / "src")
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation_flags()]
    subprocess.run(
        [*build, "--wheel-dir", str(wheels), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("padformer_edge-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        files = set(archive.namelist())
        (top_level,) = [f for f in files if f.endswith(".dist-info/top_level.txt")]
        declared = set(archive.read(top_level).decode().split())
    tops = {f.split("/")[0] for f in files if not f.split("/")[0].endswith(".dist-info")}
    assert tops == INSTALLED_NAMES, f"the wheel installs {sorted(tops)}"
    assert declared == INSTALLED_NAMES
    assert all(name.startswith("padformer_edge") for name in tops | declared)
    assert module_paths_in_a_wheel() <= files
    assert "padformer_edge_migrations/script.py.mako" in files
    assert "padformer_edge/daemon/daemon.yaml" in files


def test_this_environments_install_declares_only_padformer_edge_names() -> None:
    """The install this suite runs on (README's ``pip install -e '.[dev]'`` in CI), read
    from site-packages: from the repository's root a build's ``*.egg-info`` there would
    be found first."""
    site = sysconfig.get_paths()["purelib"]
    (installed,) = importlib.metadata.distributions(name="padformer-edge", path=[site])
    declared = installed.read_text("top_level.txt")
    assert set((declared or "").split()) == INSTALLED_NAMES


@pytest.mark.parametrize("folder", OLD_NAMES)
def test_a_folder_refuses_its_own_name_from_the_repository_root(folder: str) -> None:
    refused = subprocess.run(
        [sys.executable, "-c", f"import {folder}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert f"import padformer_edge_{folder}" in refused.stderr.strip().splitlines()[-1]
    loaded = subprocess.run(
        [sys.executable, "-c", f"import padformer_edge_{folder} as p; print(p.__file__)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert Path(loaded.stdout.strip()) == ROOT / folder / "__init__.py"


def _old_names_in_code(tree: ast.AST) -> list[int]:
    """Lines that import a folder's name, or name one as a module in text: ``-m``, an
    importer, ``python -c`` code, a docstring."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = ["training"] if OLD_MODULE.search(node.value) else []
        else:
            continue
        if any(n.split(".")[0] in OLD_NAMES for n in names):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_code_names_a_folder_as_a_module() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in CODE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != Path(__file__)  # the one file that names them, to find them
        for line in _old_names_in_code(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == [], "name padformer_edge_training / padformer_edge_migrations instead"


def test_no_doc_or_config_names_a_folder_as_a_module() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}"
        for pattern in TEXT_FILES
        for path in sorted(ROOT.glob(pattern))
        if path.is_file()
        for text in [path.read_text(encoding="utf-8")]
        for match in OLD_MODULE.finditer(text)
    ]
    assert found == [], "name padformer_edge_training / padformer_edge_migrations instead"


def test_the_old_name_finders_see_every_form() -> None:
    tree = ast.parse(
        "import training\nfrom migrations.env import x\nimport training.config as c\n"
        "run(['python', '-m', 'training.gpu_session'])\nimport_module('migrations.versions')\n"
        "import padformer_edge_training\nfrom . import training\nopen('docs/training.md')\n"
        "x = 'training'\nself.training.eval()\nrun(['-c', 'import migrations'])\n"
        "'''from training the model learns'''\n"
    )
    assert _old_names_in_code(tree) == [1, 2, 3, 4, 5, 11]
    text = (
        "python3 -m training.gpu_session\nfrom training.synth import x\n"
        "see [Training](training.md)\nconfig/train/edge.yaml\npadformer_edge_training.config\n"
        "runs/training.log\n"
    )
    assert [m.group(0).strip() for m in OLD_MODULE.finditer(text)] == [
        "training.",
        "from training.synth import",
    ]
