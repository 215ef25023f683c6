"""How much disk PyTorch takes on a line PC, and what the torch-free line installs take.

Each ``--site LABEL=PATH`` is a site-packages folder (or a ``pip install --target``
folder). For every installed distribution whose files make up PyTorch's runtime (torch
itself, triton and the ``nvidia-*`` / ``cuda-*`` libraries the CUDA wheel pulls in) the
sizes of the files its RECORD lists are summed, so the table counts what pip installed and
nothing else in the folder.

    pip install --no-deps --target out/cpu-torch torch --index-url https://download.pytorch.org/whl/cpu
    pip install --target out/line-site '.[line]'
    pip install --target out/line-openvino-site '.[line-openvino]'
    python benchmarks/install_size.py --site "CUDA (default)=.venv/lib/python3.11/site-packages" \
        --site "CPU-only=out/cpu-torch" --install "line install=out/line-site" \
        --install "OpenVINO line install=out/line-openvino-site" --write-docs

Each ``--install LABEL=PATH`` is a whole install (``pip install --target``): every
distribution in it is summed (pip, setuptools and wheel left out: every venv has them),
and its total is set against a CPU-only torch install of the same package: its base (this
install without its line runtime, the ``--runtime`` distributions: onnxruntime or OpenVINO
and OpenVINO's telemetry, which the torch install does not need) plus the smallest
``--site`` torch stack. timm, kornia and torchvision also come with torch and are not
counted, so the ratio printed is an upper bound of the line install's share.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section

TORCH_STACK_NAMES = ("torch", "triton")
INSTALLER_NAMES = ("pip", "setuptools", "wheel")
LINE_TARGET = 0.1  # issue 33: the line install at most a tenth of the CPU-only torch install
TORCH_STACK_PREFIXES = ("nvidia-", "nvidia_", "cuda-", "cuda_")
# what the line extras put in torch's place: `line` onnxruntime, `line-openvino` OpenVINO
LINE_RUNTIME_NAMES = ("onnxruntime", "openvino", "openvino-telemetry")


def is_torch_stack(name: str) -> bool:
    """torch and the runtime libraries its wheel depends on (not torchvision, timm...)."""
    name = name.lower()
    return name in TORCH_STACK_NAMES or name.startswith(TORCH_STACK_PREFIXES)


def stack_sizes(site: Path) -> dict[str, int]:
    """Bytes on disk of each torch-stack distribution installed in ``site``."""
    return distribution_sizes(site, is_torch_stack)


def install_sizes(site: Path) -> dict[str, int]:
    """Bytes on disk of every distribution installed in ``site`` but the installer's own."""
    return distribution_sizes(site, lambda name: name.lower() not in INSTALLER_NAMES)


def distribution_sizes(site: Path, keep) -> dict[str, int]:
    """Bytes of the files each RECORD in ``site`` lists, for the distributions ``keep``
    accepts by name."""
    sizes: dict[str, int] = {}
    for dist in metadata.distributions(path=[str(site)]):
        name = dist.metadata["Name"]
        if not name or not keep(name):
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
    parser.add_argument(
        "--install", action="append", default=[], help="LABEL=PATH of a whole install"
    )
    parser.add_argument(
        "--runtime",
        action="append",
        help="a distribution a line extra installs in torch's place (repeatable; default: "
        + ", ".join(LINE_RUNTIME_NAMES)
        + ")",
    )
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
    text = f"{table}\n\n{summary}"
    if args.install:
        smallest = min(totals)
        runtimes = tuple(name.lower() for name in args.runtime or LINE_RUNTIME_NAMES)
        text += "\n\n" + whole_installs(args.install, smallest, payload, runtimes)
    print(text)
    print_json_line("install_size", payload)
    if args.write_docs:
        update_docs_section("install-size", text)


def whole_installs(
    specs: list[str], torch_stack: int, payload: dict, runtimes: tuple[str, ...]
) -> str:
    """The table of whole installs, each against the smallest torch stack measured put in
    the place of its own line runtime (the ``runtimes`` distributions it holds)."""
    rows = []
    for spec in specs:
        label, _, path = spec.partition("=")
        sizes = install_sizes(Path(path))
        if not sizes:
            raise SystemExit(f"no installed distribution found in {path}; give a pip --target.")
        if any(is_torch_stack(name.split()[0]) for name in sizes):
            raise SystemExit(f"{path} holds torch: the line install must not.")
        total = sum(sizes.values())
        largest = sorted(sizes.items(), key=lambda item: -item[1])[:3]
        named = ", ".join(f"{name.split()[0]} {size / 2**20:.0f}" for name, size in largest)
        runtime = {k: v for k, v in sizes.items() if k.split()[0].lower() in runtimes}
        if not runtime:
            raise SystemExit(
                f"{path} holds none of the line runtimes ({', '.join(runtimes)}); install "
                "it with a line extra or name its runtime with --runtime."
            )
        runtime_bytes = sum(runtime.values())
        torch_install = total - runtime_bytes + torch_stack  # the same base, torch for it
        ratio = total / torch_install
        verdict = "met" if ratio <= LINE_TARGET else "not met"
        runtime_named = ", ".join(
            f"{name.split()[0]} {size / 2**20:.0f}" for name, size in runtime.items()
        )
        rows.append(
            [
                label,
                len(sizes),
                total / 2**20,
                named,
                runtime_named,
                torch_install / 2**20,
                ratio,
                verdict,
            ]
        )
        payload[label] = {
            "distributions": sizes,
            "total_bytes": total,
            "runtime_bytes": runtime_bytes,
            "cpu_torch_install_lower_bound_bytes": torch_install,
            "ratio": ratio,
        }
    table = markdown_table(
        [
            "whole install",
            "distributions",
            "MiB",
            "largest (MiB)",
            "line runtime (MiB)",
            "CPU-only torch install MiB (at least)",
            "line / torch (at most)",
            f"target <= {LINE_TARGET:g}",
        ],
        rows,
    )
    return table


if __name__ == "__main__":
    main()
