"""The runtimes a detection can run on: the one list, importable by anything.

Its own module (no imports of the package) so that the daemon's config, which the
operator's page loads, can name the runtimes without importing the detection package.
"""

from __future__ import annotations

from typing import Literal, get_args

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
