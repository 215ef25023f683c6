"""The resume point: everything besides the weights that a run needs to continue exactly.

Weights go through the model checkpoint format (safetensors, no pickle); this file holds
optimizer, scheduler, AMP scaler and RNG states plus the position in the run. It is read
with ``torch.load(weights_only=True)`` so opening a resume file cannot execute code. Both
files are written to a temporary name and renamed, so a crash never leaves a half-file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from padformer_edge.errors import UserError
from padformer_edge.files.atomic import atomic_path

RESUME_FORMAT = "padformer-edge-resume/1"


def capture_rng() -> dict[str, Any]:
    """Torch's global RNG states (CPU and every GPU).

    Data sampling, augmentation and masks draw from keyed generators (see
    ``padformer_edge_training.data.samples``), so only draws made through the global
    generators (e.g. dropout) need saving; numpy and ``random`` are not used by training.
    """
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_resume(path: Path, state: dict[str, Any]) -> None:
    """Write the resume point atomically."""
    with atomic_path(path, fix="choose a writable output folder") as tmp:
        torch.save({"format": RESUME_FORMAT, **state}, tmp)


def load_resume(path: Path) -> dict[str, Any]:
    """Read a resume point; a missing or foreign file is a ``UserError``."""
    if not path.is_file():
        raise UserError(
            f"no resume point at {path}; start without --resume or pass the run's --out."
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # any unpickling failure means the file is not ours
        raise UserError(f"{path} is not a readable resume point ({err}); start a new run.") from err
    if not isinstance(state, dict) or state.get("format") != RESUME_FORMAT:
        raise UserError(f"{path} is not a padformer-edge resume point; start a new run.")
    return state
