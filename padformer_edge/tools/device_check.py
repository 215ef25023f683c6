"""``doctor``'s device line: the GPU the daemon will detect on, or the CPU, and why.

A profile runs where ``worker.device`` (else its own ``detection.device``) says: ``cpu``,
``cuda``, or ``auto`` (the first CUDA GPU torch sees, else the CPU). Whether torch sees
one is torch's to say, and doctor stays torch-free, so the question goes to a child
process (``padformer_edge.devices.gpu_probe``), and only when it can matter: some profile on the
torch runtime asks for ``auto`` or ``cuda`` and a GPU driver is loaded on this PC (no
driver, no CUDA device, without starting torch). Graph runtimes are reported as they run:
OpenVINO on the CPU, onnxruntime where its providers put it (not probed here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.errors import UserError
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.tools.findings import Finding

PROBE_TIMEOUT_S = 120.0  # a first torch import on a slow line PC takes tens of seconds
DRIVER_FILES = (Path("/proc/driver/nvidia/version"), Path("/dev/kfd"))
"""An NVIDIA driver, or ROCm's device (torch.cuda on AMD), must be present for a GPU."""

Probe = Callable[[], dict[str, Any]]


def driver_loaded(files: Iterable[Path] = DRIVER_FILES) -> bool:
    return any(path.exists() for path in files)


def probe_torch_cuda(timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """``gpu_probe``'s answer from a child process; ``{"error": ...}`` if it gave none."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "padformer_edge.devices.gpu_probe"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:  # a busy PC, or a torch that hangs on import
        return {
            "error": f"torch did not answer within {timeout_s:.0f} s (a busy PC or a torch "
            "import that hangs); run doctor again when the PC is quieter, or time "
            "`python -c 'import torch'` on it"
        }
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return {"error": f"the probe exited {done.returncode}: {last}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def placements(config: DaemonConfig, root: Path) -> dict[str, tuple[str, str]]:
    """Each loadable profile the cameras name: (runtime, device) as the worker runs it.
    Profiles that do not load are ``check_profiles``' findings, not this one's."""
    found = {}
    for name in sorted({cam.profile for cam in config.cameras}):
        try:
            profile: Profile = load_profile(root, name)
        except UserError:
            continue
        detection = profile.detection
        runtime = config.worker.runtime or detection.runtime
        found[name] = (runtime, config.worker.device or detection.device)
    return found


def gib(total_bytes: int) -> str:
    return f"{total_bytes / 2**30:.1f} GiB"


def quoted(names: Iterable[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def check_device(
    config: DaemonConfig,
    root: Path,
    probe: Probe = probe_torch_cuda,
    has_driver: Callable[[], bool] = driver_loaded,
) -> Iterator[Finding]:
    """One finding, where the cameras' profiles will detect; none without such profiles."""
    where = placements(config, root)
    if not where:
        return
    graphs = sorted(n for n, (runtime, _) in where.items() if runtime != "torch")
    notes = "".join(f"; {quoted([n])} runs on {where[n][0]} ({where[n][1]})" for n in graphs)
    on_torch = sorted(n for n in where if n not in graphs)
    on_gpu = [n for n in on_torch if where[n][1] != "cpu"]
    if not on_gpu:
        head = f"the CPU for {quoted(on_torch)}" if on_torch else "no profile on torch"
        yield Finding("device", True, head + notes)
        return
    seen = probe() if has_driver() else {"device": None, "reason": "no GPU driver is loaded"}
    if "error" in seen:
        yield Finding(
            "device", False, f"cannot tell which device {quoted(on_gpu)} will use: {seen['error']}"
        )
        return
    gpu = seen["device"]
    if gpu is not None:
        yield Finding(
            "device",
            True,
            f"{gpu['name']}, {gib(gpu['total_bytes'])} (torch {seen['torch']}, CUDA "
            f"{seen['cuda']}) for {quoted(on_gpu)}{notes}",
        )
        return
    why = seen.get("reason") or f"torch {seen['torch']} sees none"
    asked = [n for n in on_gpu if where[n][1] == "cuda"]
    if asked:  # watch would refuse to start these
        yield Finding(
            "device",
            False,
            f"{quoted(asked)} ask for device cuda, but {why}; set worker.device: cpu to "
            "run on the CPU, or fix the GPU's driver.",
        )
    else:
        yield Finding("device", True, f"no CUDA device: the CPU ({why}){notes}")
