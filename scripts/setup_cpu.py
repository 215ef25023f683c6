"""The set-up on a machine without an NVIDIA GPU: PyTorch's CPU-only wheels, then the project.

Run it with the interpreter of the virtual environment it installs into::

    python3 -m venv .venv && .venv/bin/python scripts/setup_cpu.py

The default Linux wheels of torch bring CUDA libraries several times torch's own size;
the CPU index serves torch without them. torch and torchvision are installed in one pip
command under ``constraints/torch-cpu.txt``, which holds them to one release pair, and
the project's install keeps that constraint, so nothing later swaps one of the two for a
build of another release. When the index cannot be reached the script stops before pip
runs, with one sentence: pip would otherwise fall back on whatever other source it is
configured with and could mix releases (or bring the CUDA wheels after all).

Only the standard library is used: the environment holds nothing else yet.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints" / "torch-cpu.txt"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
REACH_TIMEOUT_S = 30


def unreachable(index: str, timeout_s: float = REACH_TIMEOUT_S) -> str | None:
    """Why ``index`` serves no torch page (a sentence's tail), or None when it does."""
    url = index.rstrip("/") + "/torch/"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            answer.read(1)
    except urllib.error.HTTPError as err:
        return f"{url} answered HTTP {err.code}"
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        return f"{url} could not be reached: {reason}"
    return None


def pip(*args: str) -> None:
    """Run pip of this interpreter; its own output is the user's progress report."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", *args], check=False)
    if done.returncode != 0:
        sys.exit(done.returncode)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-url", default=CPU_INDEX, help="PyTorch's CPU index or a mirror")
    parser.add_argument(
        "--extras", default="dev", help="the project's extras to install (default: dev)"
    )
    args = parser.parse_args(argv)
    if sys.prefix == sys.base_prefix:
        sys.exit(
            "error: run this script with the Python of a virtual environment "
            "(python3 -m venv .venv && .venv/bin/python scripts/setup_cpu.py)."
        )
    why = unreachable(args.index_url)
    if why is not None:
        sys.exit(
            f"error: PyTorch's CPU-only index is out of reach ({why}), so nothing was "
            "installed; connect this machine to it, give a mirror with --index-url, or "
            "use README's default set-up, which installs the CUDA wheels."
        )
    constraint = ("-c", str(CONSTRAINTS))
    pip(*constraint, "--index-url", args.index_url, "torch", "torchvision")
    pip(*constraint, "-e", f"{REPO}[{args.extras}]")


if __name__ == "__main__":
    main()
