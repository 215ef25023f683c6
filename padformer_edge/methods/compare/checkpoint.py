"""Comparator checkpoints: one safetensors file with the frozen CNN, the comparator and a
header (format tag, backbone, ``ComparatorConfig`` as JSON, weights sha256, metadata).

The CNN's weights travel in the file so that a line PC scores with exactly the cells the
comparator was trained on, without the package that ships ImageNet weights. Loading never
unpickles anything.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from padformer_edge.errors import UserError
from padformer_edge.files.atomic import atomic_path
from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel
from padformer_edge.model.header import tensors_sha256

COMPARATOR_FORMAT = "padformer-edge-comparator/1"


def save_comparator(path: str | Path, model: ComparisonModel, metadata: dict | None = None) -> None:
    """Write ``model`` atomically; a stopped run leaves the previous file whole."""
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    header = {
        "format": COMPARATOR_FORMAT,
        "backbone": model.backbone,
        "config": json.dumps(model.config.to_json(), sort_keys=True),
        "weights_sha256": tensors_sha256(tensors),
        "metadata": json.dumps(metadata or {}, sort_keys=True),
    }
    with atomic_path(path, fix="choose a writable output folder") as tmp:
        save_file(tensors, str(tmp), metadata=header)


def is_comparator_file(path: str | Path) -> bool:
    """Whether ``path`` is a readable comparator checkpoint (by its format tag)."""
    try:
        with safe_open(str(path), framework="pt") as fh:
            return (fh.metadata() or {}).get("format") == COMPARATOR_FORMAT
    except (SafetensorError, OSError, ValueError):
        return False


def load_comparator(path: str | Path, device: str = "cpu") -> tuple[ComparisonModel, dict]:
    """(model in eval mode, the caller's metadata), or one sentence saying what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"comparator {path} does not exist; give a file written by training.")
    if not is_comparator_file(path):
        raise UserError(
            f"{path} is not a comparator checkpoint (no '{COMPARATOR_FORMAT}' tag); "
            "give a file written by the comparator's training."
        )
    with safe_open(str(path), framework="pt") as fh:
        header = fh.metadata() or {}
    try:
        config = ComparatorConfig(**json.loads(header["config"]))
        metadata = json.loads(header.get("metadata", "{}"))
        backbone = header["backbone"]
    except (KeyError, ValueError, TypeError) as err:
        raise UserError(f"comparator {path} has a broken header ({err}); write it again.") from None
    tensors = load_file(str(path))
    if tensors_sha256(tensors) != header.get("weights_sha256"):
        raise UserError(f"comparator {path} is corrupt (weights checksum differs); copy it again.")
    model = ComparisonModel(config, backbone)
    model.load_state_dict(tensors, strict=True)
    return model.to(torch.device(device)).eval(), metadata


def shared_comparator(path: str | Path, device: str = "cpu") -> ComparisonModel:
    """The comparator at ``path`` on ``device``, loaded once per process while the file
    is unchanged (its size and modification time): what ``profile create`` chooses
    references with, exports and builds its detector on, and every detector of a line,
    share one model, which scoring only reads."""
    stat = Path(path).stat()
    return _loaded(str(Path(path).absolute()), stat.st_size, stat.st_mtime_ns, device)


def forget_shared_comparators() -> None:
    """Drop the comparators ``shared_comparator`` keeps: what a new process starts with
    (a benchmark's restart, a test counting loads)."""
    _loaded.cache_clear()


@functools.lru_cache(maxsize=4)
def _loaded(path: str, size: int, mtime_ns: int, device: str) -> ComparisonModel:
    """``load_comparator``'s model, kept by ``shared_comparator``'s key.

    Loaded outside inference mode whatever the first caller runs under: a detector may be
    built inside ``torch.inference_mode``, and weights made there are inference tensors that
    a later sharer (the export's tracer, anything autograd records) cannot use."""
    with torch.inference_mode(False):
        return load_comparator(path, device)[0]
