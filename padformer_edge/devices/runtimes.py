"""The runtimes and devices a detection can run on, and the one rule that turns a device
name into a torch device: the one home of both choices, importable by anything.

Its own module (no import of the package but ``errors``, torch only inside the function
that needs it) so that the daemon's config, which the operator's page loads, can name the
runtimes and devices without importing the detection package, and so that detection and
training choose a device the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

from padformer_edge.errors import UserError

if TYPE_CHECKING:
    import torch

DeviceName = Literal["auto", "cpu", "cuda"]
DEVICES: tuple[str, ...] = get_args(DeviceName)
"""The devices a detection setting names; training also takes ``cuda:N``."""

RuntimeName = Literal["torch", "onnxruntime", "openvino"]
RUNTIMES: tuple[str, ...] = get_args(RuntimeName)
GRAPH_RUNTIMES = ("onnxruntime", "openvino")
"""The runtimes that run exported graphs rather than the torch model."""

RUNTIME_MODULES: dict[str, tuple[str, ...]] = {
    "torch": ("torch", "timm", "kornia"),
    "onnxruntime": ("onnxruntime",),
    "openvino": ("openvino",),
}
"""The import names each runtime needs on top of the base install."""
INSTALL_COMMANDS: dict[str, str] = {
    "torch": "pip install 'padformer-edge[torch]'",
    "onnxruntime": "pip install 'padformer-edge[line]'",
    "openvino": "pip install 'padformer-edge[line-openvino]'",
}
"""How to add a runtime to an install: the smallest extra that brings its modules."""


def missing_modules(runtime: str) -> list[str]:
    """The modules of ``runtime`` this Python cannot import, found without importing them.

    ``doctor`` asks before ``watch`` would fail: a profile on torch in a ``.[line]``
    install, or on OpenVINO where only onnxruntime is installed. ``find_spec`` locates a
    module without running it, so the answer costs no torch import; a finder that refuses
    the module (``ModuleNotFoundError``) or a module set to ``None`` counts as missing.
    """
    from importlib.util import find_spec

    missing = []
    for name in RUNTIME_MODULES[runtime]:
        try:
            found = find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def resolve_device(name: str, local_rank: int | None = None) -> torch.device:
    """The torch device ``name`` asks for. ``auto`` is a CUDA GPU when torch sees one,
    else the CPU; ``cuda:N`` is that GPU. A bare ``cuda`` (or ``auto`` on a GPU) is torch's
    current GPU, or GPU ``local_rank`` when given: each process ``torchrun`` starts trains
    on its own. A GPU asked for where torch sees none, or a name not listed, is refused in
    one sentence. Detection adds its float32 mode (``detect.device.detection_device``)."""
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or (name.startswith("cuda:") and name[5:].isdigit()):
        if not torch.cuda.is_available():
            raise UserError(
                f"device '{name}' was asked for but no CUDA GPU is visible; use --device cpu "
                "or check the GPU driver."
            )
        if name == "cuda" and local_rank is not None:
            return torch.device(f"cuda:{local_rank}")
        return torch.device(name)
    raise UserError(f"unknown device '{name}'; use auto, cpu, cuda or cuda:N.")
