"""README's two set-up commands, each into a fresh virtual environment: how long each
takes and how much disk the environment fills (the demo that follows them is measured by
benchmarks/demo_figures.py).

``default`` is ``pip install -e '.[dev]'``, which takes torch's default Linux wheels and
their CUDA libraries; ``CPU-only`` is ``scripts/setup_cpu.py``, which takes PyTorch's
CPU index under ``constraints/torch-cpu.txt`` and stops with one sentence before pip runs
when that index is out of reach (then its row says so and its size is the bare venv).
Each environment is made in a temporary folder and removed after; the size is the sum
of its regular files (links not followed), the time the wall time of both commands.

    python benchmarks/setup_variants.py [--variant default --variant CPU-only] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section

REPO = Path(__file__).resolve().parent.parent
# README's commands, with the venv's folder as {venv}; the first makes the venv
VARIANTS = {
    "default": ("{venv}/bin/pip install -e '.[dev]'",),
    "CPU-only": ("{venv}/bin/python scripts/setup_cpu.py",),
}
MAKE_VENV = "python3 -m venv {venv}"


def folder_bytes(folder: Path) -> int:
    """Bytes of the regular files under ``folder``; a link counts once, as what it is."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            path = Path(root) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total


def run_variant(name: str, work: Path) -> dict:
    """Make a venv in ``work`` and run the variant's commands in the checkout: wall
    seconds, exit status of the first command that failed (else 0), the last line it
    wrote to stderr, and the venv's bytes."""
    venv = work / "venv"
    start = time.perf_counter()
    status, last = 0, ""
    for command in (MAKE_VENV, *VARIANTS[name]):
        done = subprocess.run(
            command.format(venv=venv), shell=True, cwd=REPO, capture_output=True, text=True
        )
        if done.returncode != 0:
            status = done.returncode
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            last = lines[-1] if lines else ""
            break
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "status": status, "stderr": last, "bytes": folder_bytes(venv)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    names = args.variant or list(VARIANTS)
    rows, payload = [], {}
    for name in names:
        work = Path(tempfile.mkdtemp(prefix=f"padformer-setup-{name}-"))
        try:
            found = run_variant(name, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        payload[name] = found
        outcome = "installed" if found["status"] == 0 else f"stopped: {found['stderr']}"
        command = " && ".join(c.format(venv=".venv") for c in (MAKE_VENV, *VARIANTS[name]))
        rows.append(
            [name, f"`{command}`", found["status"], found["seconds"] / 60,
             found["bytes"] / 2**30, outcome]
        )  # fmt: skip
    table = markdown_table(
        ["set-up", "commands", "exit status", "minutes", "venv GiB", "outcome"], rows
    )
    print(table)
    print_json_line("setup_variants", payload)
    if args.write_docs:
        update_docs_section("setup-variants", table)


if __name__ == "__main__":
    main()
