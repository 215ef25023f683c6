"""README's shell commands run as written on a fresh install.

Every ``padformer-edge`` command in README's shell blocks must name an existing command and
only options that command has (read from the Typer app itself, as ``--help`` does), and
every path a README command names must exist in the repository or be made by an earlier
README step (a venv, ``mkdir``, a file written with ``cat >`` or ``cp``, a command's
``--out`` folder). The documentation pages' commands are held to the same options.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pytest
import typer

from padformer_edge.cli.app import app

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.DOTALL | re.MULTILINE)
OPERATORS = {"&&", "||", ";", "|", "&", ">", ">>", "<", "2>", "2>&1"}
# Options whose value is something a command makes, not a path that must exist.
OUTPUT_OPTIONS = {"--out", "-o", "--to"}
# Commands whose last argument is the file they write.
OUTPUT_ARGUMENTS = {("padformer-edge", "results", "export")}
INPUT_SUFFIXES = (".yaml", ".yml", ".safetensors", ".png", ".jpg", ".json")


def shell_lines(markdown: str) -> list[str]:
    """The logical lines of every shell block: continuations joined, heredoc bodies and
    comments left out."""
    lines: list[str] = []
    for block in SHELL_BLOCK.findall(markdown):
        heredoc_end = None
        pending = ""
        for raw in block.splitlines():
            if heredoc_end is not None:
                if raw.strip() == heredoc_end:
                    heredoc_end = None
                continue
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            line = (pending + raw).strip()
            pending = ""
            if heredoc := re.search(r"<<-?\s*'?\"?(\w+)'?\"?", line):
                heredoc_end = heredoc.group(1)
                line = line[: heredoc.start()].strip()
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def simple_commands(line: str) -> list[list[str]]:
    """``line`` split into its simple commands (at ``&&``, ``|``, ``;``, redirections ...),
    comments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    redirect = False
    for token in lexer:
        if token in OPERATORS or set(token) <= set("&|;<>"):
            redirect = token in {">", ">>", "<"}
            commands.append([])
            if redirect:
                commands[-1].append(token)  # keep the target with its operator
            continue
        commands[-1].append(token)
    return [command for command in commands if command]


@dataclass
class Invocation:
    """One ``padformer-edge`` command line resolved against the app."""

    words: list[str]
    problems: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)


def resolve(words: list[str]) -> Invocation:
    """Walk ``words`` (after the program name) down the command tree, checking each option
    against the command it is given to."""
    found = Invocation(words)
    command = typer.main.get_command(app)
    path = ["padformer-edge"]
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if word.startswith("-") and word != "-":
            name, _, inline = word.partition("=")
            options = {
                opt: param
                for param in command.params
                if param.param_type_name == "option"
                for opt in (*param.opts, *param.secondary_opts)
            }
            if name in ("--help",):
                continue
            if name not in options:
                found.problems.append(f"{' '.join(path)} has no option {name}")
                continue
            param = options[name]
            takes_value = not getattr(param, "is_flag", False) and not getattr(
                param, "count", False
            )
            if takes_value and not inline:
                if not rest:
                    found.problems.append(f"{' '.join(path)} {name} needs a value")
                    continue
                inline = rest.pop(0)
            if takes_value:
                (found.outputs if name in OUTPUT_OPTIONS else found.inputs).append(inline)
            continue
        subcommands = getattr(command, "commands", None)
        if subcommands is not None:
            if word not in subcommands:
                found.problems.append(f"{' '.join(path)} has no command {word!r}")
                return found
            command = subcommands[word]
            path.append(word)
            continue
        found.inputs.append(word)
    if tuple(path) in OUTPUT_ARGUMENTS and found.inputs:
        found.outputs.append(found.inputs.pop())
    asks_version = bool(words) and words[0] in ("--version", "--help")
    if path == ["padformer-edge"] and not asks_version:
        found.problems.append("padformer-edge is given no command")
    return found


def program(command: list[str]) -> list[str]:
    """``command`` from its program on: ``sudo [-u USER]``, ``env`` and ``VAR=value``
    words in front are left out."""
    words = list(command)
    while words:
        if words[0] == "sudo":
            words = words[3:] if words[1:2] == ["-u"] else words[1:]
        elif words[0] == "env" or re.fullmatch(r"\w+=.*", words[0]):
            words = words[1:]
        else:
            break
    return words


def is_padformer(word: str) -> bool:
    return PurePosixPath(word).name == "padformer-edge"


def looks_like_path(word: str) -> bool:
    """A word that names a file or folder: it has a slash or a file suffix, and no shell
    expansion or URL in it."""
    if word.startswith("-") or "$" in word or "://" in word or "=" in word:
        return False
    return "/" in word or word.endswith(INPUT_SUFFIXES)


def made_by(command: list[str]) -> list[str]:
    """The paths a non-padformer command line makes: a venv, ``mkdir``, ``cp``'s target,
    a redirection's file."""
    program, args = command[0], [a for a in command[1:] if not a.startswith("-")]
    if command[0] in (">", ">>"):
        return command[1:2]
    if "venv" in command and args:
        return args[-1:]
    if program in ("mkdir", "cp", "install", "touch") and args:
        return args if program in ("mkdir", "touch") else args[-1:]
    return []


def exists_or_made(word: str, made: list[str]) -> bool:
    path = PurePosixPath(word.rstrip("/"))
    for earlier in made:
        earlier_path = PurePosixPath(earlier.rstrip("/"))
        if path == earlier_path or earlier_path in path.parents:
            return True
    if any(ch in word for ch in "*?["):
        return bool(list(REPO.glob(word)))
    return (REPO / word).exists()


def readme_check(markdown: str | None = None) -> tuple[list[str], list[list[str]]]:
    """Every problem of README's commands (or of ``markdown``'s), and the padformer-edge
    commands it found."""
    problems, found, _ = _walk(markdown)
    return problems, found


def readme_writes(markdown: str | None = None) -> list[str]:
    """Every path README's commands (or ``markdown``'s) make, in order."""
    return _walk(markdown)[2]


def _walk(markdown: str | None) -> tuple[list[str], list[list[str]], list[str]]:
    problems: list[str] = []
    found: list[list[str]] = []
    made: list[str] = []
    text = README.read_text(encoding="utf-8") if markdown is None else markdown
    for line in shell_lines(text):
        for command in map(program, simple_commands(line)):
            if not command:
                continue
            if is_padformer(command[0]):
                found.append(command)
                invocation = resolve(command[1:])
                problems += [f"{line}: {problem}" for problem in invocation.problems]
                for word in invocation.inputs:
                    if looks_like_path(word) and not exists_or_made(word, made):
                        problems.append(f"{line}: {word} exists nowhere before this step")
                made += invocation.outputs
                continue
            outputs = made_by(command)
            for word in command[1:]:
                if word in outputs or not looks_like_path(word):
                    continue
                if not exists_or_made(word, made) and not is_padformer(word):
                    problems.append(f"{line}: {word} exists nowhere before this step")
            made += outputs
    return problems, found, made


def test_readme_commands_name_existing_commands_options_and_paths():
    problems, found = readme_check()
    assert problems == []
    # the walk-through is there: every step of the line engineer's path has a command
    steps = {" ".join(command[1:3]) for command in found}
    for step in ("demo", "profile create", "profile calibrate", "profile test", "serve"):
        assert any(s.startswith(step) for s in steps), step
    assert any(command[1] == "watch" for command in found)


def test_readme_keeps_ci_install_and_test_commands():
    text = README.read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("pip install -e '.[dev]'", "python -m pytest"):
        assert command in text and command in ci
    assert len(text.splitlines()) <= 300


# The line engineer's path as the issue orders it: each step's heading, with a word its
# text must hold and the first padformer-edge command of that step.
PATH_STEPS = (
    ("Photos of the part", "photos", "demo --out"),
    ("The profile: create, calibrate, test", "calibrate", "profile create"),
    ("The daemon", "systemd", "watch"),
    ("The operator's page", "/metrics", "serve"),
    ("History and alerts", "alert", "results list"),
)


def sections(markdown: str) -> list[tuple[str, str]]:
    """(heading, text under it up to the next heading) for every ``##``/``###`` heading,
    in order; headings inside code blocks do not count."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.DOTALL | re.MULTILINE)
    parts = re.split(r"^#{2,3} (.+)$", prose, flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def test_readme_walks_the_line_engineers_path_in_order():
    """Set-up, then photos, profile, daemon with systemd, the page, history and alerts,
    then the links into the docs and the targets the product misses (a user reads what
    it does before what it does not); each step's commands come in that order too."""
    text = README.read_text(encoding="utf-8")
    headings = [re.sub(r"^\d+\. ", "", heading) for heading, _ in sections(text)]
    expected = ["Set-up", "The line engineer's path", *(s[0] for s in PATH_STEPS)]
    assert headings == [*expected, "Documentation", "Known limits"]
    under = {re.sub(r"^\d+\. ", "", h): body for h, body in sections(text)}
    for heading, word, _ in PATH_STEPS:
        assert word in under[heading], f"README's step {heading!r} never mentions {word}"
    _, found = readme_check()
    lines = [" ".join(command[1:]) for command in found]
    first = [next(i for i, line in enumerate(lines) if line.startswith(c)) for *_, c in PATH_STEPS]
    assert first == sorted(first), "README's commands leave the line engineer's order"
    assert re.findall(r"\]\((docs/[\w.-]+\.md)", under["Documentation"]), "no link into docs"


def test_the_order_check_fails_on_a_swapped_step(monkeypatch, tmp_path):
    text = README.read_text(encoding="utf-8")
    page, history = text.index("### 4. The operator's page"), text.index("### 5. History")
    end = text.index("## Documentation")
    swapped = text[:page] + text[history:end] + text[page:history] + text[end:]
    readme = tmp_path / "README.md"
    readme.write_text(swapped, encoding="utf-8")
    monkeypatch.setitem(globals(), "README", readme)
    with pytest.raises(AssertionError):
        test_readme_walks_the_line_engineers_path_in_order()


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("padformer-edge profile create x --references r --bogus", "has no option --bogus"),
        ("padformer-edge profil list", "has no command 'profil'"),
        ("padformer-edge results list --since", "--since needs a value"),
        ("padformer-edge watch --config no/such/daemon.yaml", "exists nowhere"),
    ],
)
def test_the_check_finds_what_would_fail(line, problem, monkeypatch, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"```bash\n{line}\n```\n", encoding="utf-8")
    monkeypatch.setitem(globals(), "README", readme)
    problems, _ = readme_check()
    assert any(problem in p for p in problems), problems


def test_paths_made_by_earlier_steps_count(monkeypatch, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "```bash\npadformer-edge demo --out run-a\n"
        "mkdir -p state/camera\n"
        "cat > line.yaml <<'EOF'\ncameras: []\nEOF\n"
        "padformer-edge profile create p --references run-a/data/duck/train/good\n"
        "padformer-edge watch --config line.yaml\n"
        "cp run-a/camera/*.png state/camera/\n```\n",
        encoding="utf-8",
    )
    monkeypatch.setitem(globals(), "README", readme)
    problems, found = readme_check()
    assert problems == [] and len(found) == 3


DOC_PAGES = sorted((REPO / "docs").glob("*.md"))


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: p.name)
def test_doc_pages_name_existing_commands_and_options(page):
    problems = []
    for line in shell_lines(page.read_text(encoding="utf-8")):
        for command in map(program, simple_commands(line)):
            if command and is_padformer(command[0]):
                words = [w for w in command[1:] if w != "..."]
                problems += [f"{line}: {p}" for p in resolve(words).problems]
    assert problems == []


def block_rows(name: str) -> list[list[str]]:
    """The cells of every table row of the docs block ``name``."""
    page = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    body = page.split(f"<!-- BEGIN {name} -->", 1)[1].split(f"<!-- END {name} -->", 1)[0]
    rows = [line.strip("|").split(" | ") for line in body.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row] for row in rows[1:]]


def test_readme_set_up_figures_are_the_measured_ones():
    """README's time and size of the set-up are those the benchmarks wrote, rounded as
    README rounds them (setup_variants.py, install_size.py), never typed apart from them."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    default = next(row for row in block_rows("setup-variants") if row[0] == "default")
    minutes, gib = float(default[3]), float(default[4])
    assert f"command 1 took {minutes:.1f} minutes and filled {gib:.1f} GiB" in text
    sizes = {row[0]: float(row[4]) for row in block_rows("install-size") if len(row) == 5}
    cuda = next(v for k, v in sizes.items() if k.startswith("CUDA"))
    cpu = next(v for k, v in sizes.items() if k.startswith("CPU"))
    assert f"CUDA libraries take {cuda:.0f} MiB, its CPU-only wheel {cpu:.0f} MiB" in text


WALK_THROUGH = "## The line engineer's path"
STATE_EXPORT = re.compile(r'^export PADFORMER_EDGE_STATE_DIR="\$PWD/([\w.-]+)"$', re.MULTILINE)


def walk_through_folder(markdown: str) -> str | None:
    """The folder the walk-through's first shell block makes its state directory."""
    part = markdown[markdown.index(WALK_THROUGH) :]
    first = SHELL_BLOCK.search(part)
    found = STATE_EXPORT.search(first.group(1)) if first else None
    return found.group(1) if found else None


def loose_writes(markdown: str) -> list[str]:
    """The paths the walk-through's commands make outside the one folder it names at its
    start (all of them when it names none); commands that write without being told where
    write to the state directory, that folder."""
    folder = walk_through_folder(markdown)
    part = markdown[markdown.index(WALK_THROUGH) : markdown.index("## Documentation")]
    written = readme_writes(part)
    if folder is None:
        return written or ["(no state directory named at the walk-through's start)"]
    return [p for p in written if PurePosixPath(p).parts[:1] != (folder,)]


def test_the_walk_through_writes_under_one_ignored_folder():
    """README's line engineer's path names its folder first, as the state directory, and
    every file or folder its commands make (an --out, a config written with cat, a
    camera folder, an export) lies in it, so the checkout stays clean; git ignores it."""
    text = README.read_text(encoding="utf-8")
    folder = walk_through_folder(text)
    assert folder is not None
    assert loose_writes(text) == []
    assert len(readme_writes(text[text.index(WALK_THROUGH) :])) >= 4
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert f"/{folder}/" in ignored
    # the set-up before it makes the virtual environment only, which git ignores too
    set_up = text[: text.index(WALK_THROUGH)]
    assert set(readme_writes(set_up)) == {".venv"} and ".venv/" in ignored


@pytest.mark.parametrize(
    "line",
    [
        "padformer-edge profile test duck state/a.png --out checks",
        "cat > line.yaml <<'EOF'\ncameras: []\nEOF",
        "padformer-edge results export --since 7d week.csv",
        "mkdir -p camera",
    ],
)
def test_the_folder_check_finds_a_loose_write(line):
    walk = (
        f'{WALK_THROUGH}\n\n```bash\nexport PADFORMER_EDGE_STATE_DIR="$PWD/state"\n```\n\n'
        f"```bash\nmkdir -p state/camera\n{line}\n```\n\n## Documentation\n"
    )
    assert loose_writes(walk) != []
    assert loose_writes(walk.replace(line, "mkdir -p state/other")) == []
