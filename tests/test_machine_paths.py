"""No tracked file names a path that exists only on some machine.

A user's home folder or root's, a development machine's work folder at the top of the
file system, or a fixed folder in the system's temporary directory, named in a command, a
config, a model card or a docs table, works on no user's machine. Tests make their own
temporary folders (``tmp_path``) and never type one. Paths a product installs to or reads
on a line PC (``/etc/``, ``/opt/``, ``/srv/``, ``/var/lib/``, ``/usr/``) are not machine
paths.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Written in pieces so that this file does not name what it looks for.
MACHINE_PATH = re.compile(
    "|".join(
        [
            r"(?<![\w.])/" + "home" + r"/[A-Za-z_][\w.-]*",
            r"(?<![\w.])/" + "Users" + r"/[A-Za-z_][\w.-]*",  # a Mac's home folders
            r"(?<![\w.])/" + "root" + r"/",
            r"(?<![\w.])/" + "work" + r"/",
            r"(?<![\w.])/(?:var/)?" + "tmp" + r"/[\w.-]+",
        ]
    )
)


def tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.fail("this check needs the git checkout (git ls-files) to list tracked files")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    return [REPO / name for name in listed.split("\0") if name]


def machine_paths(text: str) -> list[str]:
    return [match.group(0) for match in MACHINE_PATH.finditer(text)]


def test_no_tracked_file_names_a_machine_path():
    offenders = []
    for path in tracked_files():
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # weights, pictures: binary
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if found := machine_paths(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {', '.join(found)}")
    assert offenders == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("--data /" + "work/runs/data/synth224-s1", ["/" + "work/"]),
        ("WORK=${WORK:-/" + "tmp/gpu}", ["/" + "tmp/gpu"]),
        ('"path": "/' + 'home/alice/model.safetensors"', ["/" + "home/alice"]),
        ("cd /" + "root/project", ["/" + "root/"]),
        ("open /" + "Users/bob/Desktop/run.log", ["/" + "Users/bob"]),
        ("--out /var/" + "tmp/padformer-run", ["/var/" + "tmp/padformer-run"]),
        ("/etc/padformer-edge/daemon.yaml /var/lib/padformer-edge /srv/camera", []),
        ("docs/work/notes.md runs/tmp/x ~/.local/state/padformer-edge", []),
    ],
)
def test_the_pattern(text, found):
    assert machine_paths(text) == found
