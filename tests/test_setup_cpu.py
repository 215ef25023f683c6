"""README's CPU-only set-up (scripts/setup_cpu.py): torch and torchvision under one
constraint, and one sentence, with nothing installed, when PyTorch's CPU index is out
of reach."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "setup_cpu.py"
CONSTRAINTS = REPO / "constraints" / "torch-cpu.txt"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again once the socket is


def test_an_unreachable_index_stops_before_pip_with_one_sentence(tmp_path: Path) -> None:
    index = f"http://127.0.0.1:{_closed_port()}/whl/cpu"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--index-url", index],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""  # pip never ran: it reports on stdout
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: PyTorch's CPU-only index is out of reach")
    assert index in line and "nothing was installed" in line


def constraint_pairs() -> dict[str, str]:
    """Distribution name -> the release its ``==X.Y.*`` line allows."""
    lines = CONSTRAINTS.read_text(encoding="utf-8").splitlines()
    found = dict(re.findall(r"^(torch|torchvision)==(\d+\.\d+)\.\*$", "\n".join(lines), re.M))
    return found


def test_the_constraint_holds_both_to_the_pair_the_suite_runs_on() -> None:
    pairs = constraint_pairs()
    assert set(pairs) == {"torch", "torchvision"}
    for name, release in pairs.items():
        assert metadata.version(name).split("+")[0].startswith(release + "."), name
    # PyTorch releases torchvision 0.(N+15) with torch 2.N
    torch_minor = int(pairs["torch"].split(".")[1])
    assert pairs["torchvision"] == f"0.{torch_minor + 15}"
