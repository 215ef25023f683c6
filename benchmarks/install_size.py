"""How much disk PyTorch takes on a line PC: the default (CUDA) wheels against the CPU-only ones.

Each ``--site LABEL=PATH`` is a site-packages folder (or a ``pip install --target``
folder). For every installed distribution whose files make up PyTorch's runtime (torch
itself, triton and the ``nvidia-*`` / ``cuda-*`` libraries the CUDA wheel pulls in) the
sizes of the files its RECORD lists are summed, so the table counts what pip installed and
nothing else in the folder.

    pip install --no-deps --target cpu-torch torch --index-url https://download.pytorch.org/whl/cpu
    python benchmarks/install_size.py --site "CUDA (default)=.venv/lib/python3.11/site-packages" \
        --site "CPU-only=cpu-torch" --write-docs
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section

TORCH_STACK_NAMES = ("torch", "triton")
TORCH_STACK_PREFIXES = ("nvidia-", "nvidia_", "cuda-", "cuda_")


def is_torch_stack(name: str) -> bool:
    """torch and the runtime libraries its wheel depends on (not torchvision, timm...)."""
    name = name.lower()
    return name in TORCH_STACK_NAMES or name.startswith(TORCH_STACK_PREFIXES)


def stack_sizes(site: Path) -> dict[str, int]:
    """Bytes on disk of each torch-stack distribution installed in ``site``."""
    sizes: dict[str, int] = {}
    for dist in metadata.distributions(path=[str(site)]):
        name = dist.metadata["Name"]
        if not name or not is_torch_stack(name):
            continue
        total = 0
        for file in dist.files or []:
            path = Path(dist.locate_file(file))
            if path.is_file():
                total += path.stat().st_size
        sizes[f"{name} {dist.version}"] = total
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", action="append", required=True, help="LABEL=PATH")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    rows, payload = [], {}
    for spec in args.site:
        label, _, path = spec.partition("=")
        sizes = stack_sizes(Path(path))
        if not sizes:
            raise SystemExit(f"no torch installation found in {path}; give its site-packages.")
        torch_only = sum(v for k, v in sizes.items() if k.split()[0].lower() == "torch")
        total = sum(sizes.values())
        version = next(k.split()[1] for k in sizes if k.split()[0].lower() == "torch")
        rows.append([label, version, len(sizes), torch_only / 2**20, total / 2**20])
        payload[label] = {"torch": version, "distributions": sizes, "total_bytes": total}
    table = markdown_table(
        ["install", "torch", "distributions", "torch MiB", "torch + its libraries MiB"], rows
    )
    totals = [p["total_bytes"] for p in payload.values()]
    summary = (
        f"The largest install takes {max(totals) / min(totals):.1f}x the disk of the smallest."
        if len(totals) > 1
        else ""
    )
    print(table + "\n\n" + summary)
    print_json_line("install_size", payload)
    if args.write_docs:
        update_docs_section("install-size", f"{table}\n\n{summary}")


if __name__ == "__main__":
    main()
