"""A torch and a torchvision of different releases, found where torchvision is imported.

torchvision's compiled operators are built against one torch release. Beside another it
fails while it loads, with errors that name neither package's version (``RuntimeError:
operator torchvision::nms does not exist``, an undefined symbol in ``_C.so``). timm
imports torchvision, so every command that builds the model meets it first. ``main``
asks ``mismatch_sentence`` about any exception a command raised: an error raised while
importing a module of torchvision becomes one sentence naming both versions and how to
install them as one pair, never a traceback.
"""

from __future__ import annotations

import traceback
from importlib import metadata
from pathlib import PurePath

PAIR_FIX = (
    "reinstall them as one pair from one index: pip install --force-reinstall -c "
    "constraints/torch-cpu.txt torch torchvision --index-url "
    "https://download.pytorch.org/whl/cpu (README's CPU-only set-up, "
    "scripts/setup_cpu.py, does this), or pip install --force-reinstall torch torchvision "
    "for the default CUDA wheels"
)


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def raised_importing_torchvision(err: BaseException) -> bool:
    """Whether ``err`` came out of a torchvision module while it loaded: some frame of
    its traceback runs the body (``<module>``) of a file in a ``torchvision`` package
    folder. A failure later, inside a torchvision call a command made, is that command's
    own and passes through."""
    return any(
        frame.name == "<module>" and "torchvision" in PurePath(frame.filename).parts
        for frame in traceback.extract_tb(err.__traceback__)
    )


def mismatch_sentence(err: BaseException) -> str | None:
    """The one sentence for ``err`` when it is torchvision failing to load beside this
    torch, else None."""
    if not isinstance(err, RuntimeError | ImportError | OSError | AttributeError):
        return None
    if not raised_importing_torchvision(err):
        return None
    detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return (
        f"torchvision {_version('torchvision')} does not load beside torch "
        f"{_version('torch')} ({detail}): the two come from different releases; "
        f"{PAIR_FIX}."
    )
