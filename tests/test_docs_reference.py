"""The documentation's generated parts stay what the code and the scripts make.

- ``docs/config.md`` and ``docs/cli.md`` equal what ``docs/gen_reference.py`` writes from
  the pydantic schemas and the Typer app today;
- every measured table is one block, in ``docs/benchmarks.md`` or ``docs/research.md``,
  with the command, machine and date it was made with, and every block a benchmark script
  writes by a fixed name is there to be rewritten.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
BLOCK_PAGES = (DOCS / "benchmarks.md", DOCS / "research.md")
BEGIN = re.compile(r"^<!-- BEGIN (\S+) -->$", re.MULTILINE)
HEADER = re.compile(r"^Measured with `[^`]+` on .+, \d{4}-\d{2}-\d{2}:$")


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_reference_pages_are_current():
    gen = _generator()
    stale = [str(path.relative_to(REPO)) for path in gen.stale_pages()]
    assert stale == [], "run python docs/gen_reference.py and commit the pages"


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
    for script in sorted((REPO / "benchmarks").glob("*.py")):
        text = script.read_text(encoding="utf-8")
        written |= set(re.findall(r'update_docs_section\(\s*"([\w-]+)"', text))
        written |= set(re.findall(r'"--section",\s*default="([\w-]+)"', text))
        written |= set(re.findall(r'add_episode_arguments\(\s*\w+,\s*"([\w-]+)"', text))
    assert len(written) > 20
    # a comparison script's default names no table of its own (it is always given one)
    missing = sorted(written - set(blocks()) - {"sweep-comparison"})
    assert missing == []


RESTORE = re.compile(r"`git restore --source=(\S+) -- '([^']+)'`")
COMMAND = re.compile(r"^Measured with `([^`]+)`", re.MULTILINE)


def _in_history(commit: str, path: str) -> bool | None:
    """Whether ``commit`` holds ``path``; None where git or that commit is not here (a
    shallow clone, a source archive)."""
    if shutil.which("git") is None:
        return None

    def git(*args: str) -> bool:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, timeout=30)
        return done.returncode == 0

    if not git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"):
        return None
    return git("cat-file", "-e", f"{commit}:{path}")


@pytest.mark.parametrize("page", BLOCK_PAGES, ids=lambda p: p.name)
def test_a_blocks_inputs_are_in_the_tree_or_the_page_says_how_to_restore_them(page):
    """A table's command runs as written: a file of ``benchmarks/`` it reads is in the
    tree, or the page gives the ``git restore`` that brings it back from the commit that
    holds it (past runs' logs leave the tree; git history keeps them)."""
    text = page.read_text(encoding="utf-8")
    restorable = RESTORE.findall(text)
    unaccounted = []
    for command in COMMAND.findall(text):
        for word in re.split(r"[\s=,#']", command):
            if not word.startswith("benchmarks/") or (REPO / word).exists():
                continue
            commits = [commit for commit, pattern in restorable if fnmatch(word, pattern)]
            if not commits or any(_in_history(c, word) is False for c in commits):
                unaccounted.append(word)
    assert unaccounted == [], "keep the file, or name the commit that holds it on the page"
