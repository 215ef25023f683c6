"""The documentation's generated parts stay what the code and the scripts make.

- ``docs/config.md`` and ``docs/cli.md`` equal what ``docs/gen_reference.py`` writes from
  the pydantic schemas and the Typer app today;
- every measured table is one block, in ``docs/benchmarks.md`` or ``docs/research.md``,
  with the command, machine and date it was made with, and every block a benchmark script
  writes by a fixed name is there to be rewritten;
- a block's command names only files of ``benchmarks/`` that the tree holds; a table whose
  inputs left the tree is a record, whose header names the commit that holds them instead
  of a command that would fail on every checkout.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

from tests.git_history import is_commit

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
BLOCK_PAGES = (DOCS / "benchmarks.md", DOCS / "research.md")
BEGIN = re.compile(r"^<!-- BEGIN (\S+) -->$", re.MULTILINE)
HEADER = re.compile(r"^(?:Measured with `[^`]+`|Recorded from .+) on .+, \d{4}-\d{2}-\d{2}:$")


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_reference_pages_are_current():
    gen = _generator()
    stale = [str(path.relative_to(REPO)) for path in gen.stale_pages()]
    assert stale == [], "run python docs/gen_reference.py and commit the pages"


def _package_tree():
    spec = importlib.util.spec_from_file_location("package_tree", DOCS / "package_tree.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_architecture_tree_lists_every_package_and_module():
    """The page's tree has an entry for every package and module the wheel installs, the
    web, demo, store and daemon packages among them."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    tree = _package_tree()
    block = text.split(tree.START, 1)[1].split(tree.END, 1)[0]
    entries = [line for line in block.splitlines()[2:-1] if not line.startswith(" " * tree.COLUMN)]
    names = [line.split()[0] for line in entries]
    for folder, _ in tree.ROOTS:
        for path in sorted((REPO / folder).rglob("*.py")):
            name = f"{path.parent.name}/" if path.name == "__init__.py" else path.name
            assert name in names, f"{path.relative_to(REPO)} is not in the package tree"
    for package in ("web/", "demo/", "store/", "daemon/", "alerts/", "compare/", "padformer/"):
        assert package in names


def _tiny_tree(root):
    for folder, _ in _package_tree().ROOTS:
        (root / folder / "sub").mkdir(parents=True)
        (root / folder / "__init__.py").write_text(f'"""The {folder} package. More."""\n')
        (root / folder / "sub" / "__init__.py").write_text('"""A subpackage."""\n')
        (root / folder / "a.py").write_text('"""Does ``a``: in full. Then details."""\n')


def test_the_tree_is_written_from_the_docstrings(tmp_path):
    tree = _package_tree()
    _tiny_tree(tmp_path)
    text = tree.package_tree(tmp_path)
    assert "  a.py" in text and "Does `a`: in full." in text and "Then details" not in text
    assert text.index("a.py") < text.index("sub/")  # modules, then subpackages
    (tmp_path / "training" / "a.py").write_text('"""Another job."""\n')
    assert tree.package_tree(tmp_path) != text and "Another job." in tree.package_tree(tmp_path)
    page = f"x\n{tree.START}\nold\n{tree.END}\ny\n"
    assert tree.architecture_page(page, "new") == f"x\n{tree.START}\nnew\n{tree.END}\ny\n"
    (tmp_path / "migrations" / "b.py").write_text("x = 1\n")
    tree.REPO = tmp_path
    with pytest.raises(ValueError, match=r"migrations/b\.py has no docstring"):
        tree.package_tree(tmp_path)


def test_a_long_first_sentence_ends_at_a_clause():
    tree = _package_tree()
    long = "Word " * 30 + "(an aside), " + "more " * 30 + "end."
    cut = tree.first_sentence(long)
    assert len(cut) <= tree.LONGEST + 4 and cut.endswith(" ...")


CODE_NAME = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)`")
CODE_PATH = re.compile(r"`([\w/.-]+\.(?:py|md|yaml))`")
NAME_BASES = (
    "padformer_edge", "padformer_edge.methods", "padformer_edge.methods.compare",
    "padformer_edge.methods.padformer", "padformer_edge.detect", "padformer_edge.deploy",
    "padformer_edge.detect.detection", "padformer_edge.profiles.profile",
    "padformer_edge_training", "",
)  # fmt: skip
"""Where a dotted name on the page is looked up, in order: the page names code relative to
the runtime package, the methods, the package a paragraph is about, or in full."""


def _attribute(obj, name: str):
    """``obj.name``, a dataclass's or a pydantic model's field included; None if absent."""
    if hasattr(obj, name):
        return getattr(obj, name)
    fields = getattr(obj, "model_fields", None) or getattr(obj, "__dataclass_fields__", {})
    return fields.get(name)


def resolves(name: str) -> bool:
    """Whether the dotted ``name`` is a module or attribute under one of ``NAME_BASES``;
    ``detection.KEY`` is a key of a profile's detection section (shared or a method's)."""
    if name.startswith("detection."):
        from padformer_edge.detect.settings import DetectionSettings
        from padformer_edge.methods.registry import METHODS

        keys = set(DetectionSettings.model_fields)
        keys |= {key for m in METHODS.values() for key in m.settings_type.model_fields}
        return name.split(".", 1)[1] in keys
    for base in NAME_BASES:
        parts = f"{base}.{name}".split(".") if base else name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                obj = _attribute(obj, attribute)
                if obj is None:
                    break
            else:
                return True
            break
    return False


def named_but_missing(text: str) -> list[str]:
    """The code names and file paths a page (outside its generated tree) names in
    backticks that the checkout has no module, attribute or file for."""
    tree = _package_tree()
    if tree.START in text:
        text = text.split(tree.START)[0] + text.split(tree.END)[1]
    files = {p.as_posix() for f, _ in tree.ROOTS for p in (REPO / f).rglob("*")}
    missing = [
        path
        for path in sorted(set(CODE_PATH.findall(text)))
        if not (REPO / path).exists() and not any(f.endswith("/" + path) for f in files)
    ]
    names = sorted(set(CODE_NAME.findall(text)) - set(CODE_PATH.findall(text)))
    return missing + [name for name in names if not resolves(name)]


def test_the_architecture_page_names_only_code_that_exists():
    """The page's prose names modules, functions and files; a rename or a removal that
    leaves the page naming what is gone fails here."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert len(CODE_NAME.findall(text)) > 30
    assert named_but_missing(text) == []


def test_the_name_check_finds_what_is_gone():
    page = "`detect.readout.read_cells`, `detect.gone`, `methods/compare/detector.py`, `x/y.py`"
    page += ", `detection.metric`, `detection.nothing`"
    assert named_but_missing(page) == ["x/y.py", "detect.gone", "detection.nothing"]


def test_a_changed_page_is_found_stale(tmp_path, monkeypatch):
    gen = _generator()
    for name in ("CONFIG_PAGE", "CLI_PAGE"):
        copy = tmp_path / getattr(gen, name).name
        copy.write_text(getattr(gen, name).read_text(encoding="utf-8"), encoding="utf-8")
        monkeypatch.setattr(gen, name, copy)
    assert gen.stale_pages() == []
    gen.CLI_PAGE.write_text(gen.CLI_PAGE.read_text(encoding="utf-8") + "typed by hand\n")
    assert gen.stale_pages() == [gen.CLI_PAGE]


def test_the_references_cover_every_kind_and_command():
    gen = _generator()
    config, cli = gen.config_reference(), gen.cli_reference()
    for kind in ("daemon", "profile", "train"):
        assert f"## `{kind}`" in config
    assert "| `cameras[].profile` | str | required |" in config
    for command in ("watch", "serve", "profile create", "results export", "alerts retry"):
        assert f"`padformer-edge {command}`" in cli
    assert "| `--shots`, `-n` | `<int>` |" in cli


def blocks() -> dict[str, list[str]]:
    """Each block name, with the pages it is in."""
    found: dict[str, list[str]] = {}
    for page in [*sorted(DOCS.glob("*.md")), REPO / "README.md"]:
        for name in BEGIN.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(page.name)
    return found


def test_every_block_is_once_on_a_benchmark_or_research_page():
    misplaced = {
        name: pages
        for name, pages in blocks().items()
        if len(pages) != 1 or pages[0] not in ("benchmarks.md", "research.md")
    }
    assert misplaced == {}


@pytest.mark.parametrize("page", BLOCK_PAGES, ids=lambda p: p.name)
def test_blocks_are_whole_and_say_how_where_and_when(page):
    text = page.read_text(encoding="utf-8")
    names = BEGIN.findall(text)
    assert names, f"{page.name} holds no generated table"
    for name in names:
        body = text.split(f"<!-- BEGIN {name} -->\n", 1)[1]
        assert f"<!-- END {name} -->" in body, f"{name} has no END marker"
        assert HEADER.match(body.splitlines()[0]), f"{name}: {body.splitlines()[0]}"


def test_scripts_write_blocks_that_exist():
    """A block name a script writes by default (its ``update_docs_section`` call or its
    ``--section`` default) is a block of the docs, so a run replaces a table rather than
    appending a stray one."""
    written = set()
    scripts = [*(REPO / "benchmarks").glob("*.py"), *(REPO / "research").glob("*.py")]
    for script in sorted(scripts):
        text = script.read_text(encoding="utf-8")
        written |= set(re.findall(r'update_docs_section\(\s*"([\w-]+)"', text))
        written |= set(re.findall(r'"--section",\s*default="([\w-]+)"', text))
        written |= set(re.findall(r'add_episode_arguments\(\s*\w+,\s*"([\w-]+)"', text))
    assert len(written) > 20
    # a comparison script's default names no table of its own (it is always given one)
    missing = sorted(written - set(blocks()) - {"sweep-comparison"})
    assert missing == []


COMMAND = re.compile(r"^Measured with `([^`]+)`", re.MULTILINE)
RECORD = re.compile(r"^Recorded from .*? commit (\S+) holds them", re.MULTILINE)


def missing_inputs(text: str) -> list[str]:
    """The files of ``benchmarks/`` and ``research/`` that a block's command names and the
    tree lacks."""
    return [
        word
        for command in COMMAND.findall(text)
        for word in re.split(r"[\s=,#']", command)
        if word.startswith(("benchmarks/", "research/")) and not (REPO / word).exists()
    ]


@pytest.mark.parametrize("page", BLOCK_PAGES, ids=lambda p: p.name)
def test_a_blocks_command_names_only_files_the_tree_holds(page):
    """A table's command runs as written on a checkout; a table whose logs left the tree
    says so in a record header, naming no path that is gone."""
    assert missing_inputs(page.read_text(encoding="utf-8")) == [], (
        "keep the file, or make the table a record (--revision) that names its commit"
    )


def test_the_check_finds_a_gone_input_and_passes_a_record():
    gone = "Measured with `python benchmarks/x.py --run a=benchmarks/gpu_runs/a.log` on m, d:"
    kept = "Measured with `python benchmarks/model_card.py --write-docs` on m, d:"
    record = "Recorded from the logs of a as commit abc1234 holds them (...) on m, 2026-11-26:"
    assert missing_inputs(gone) == ["benchmarks/x.py", "benchmarks/gpu_runs/a.log"]
    moved = "Measured with `python research/x.py --model research/comparators/a.safetensors` on"
    assert missing_inputs(moved) == ["research/x.py", "research/comparators/a.safetensors"]
    assert missing_inputs(f"{kept}\n{record}") == []
    assert HEADER.match(record) and RECORD.findall(record) == ["abc1234"]


@pytest.mark.parametrize("page", BLOCK_PAGES, ids=lambda p: p.name)
def test_a_record_names_a_commit_of_this_repository(page):
    for revision in RECORD.findall(page.read_text(encoding="utf-8")):
        if is_commit(revision) is None:
            pytest.skip("this checkout has no git history to look the commit up in")
        assert is_commit(revision), f"{page.name} names {revision}, which is no commit here"
