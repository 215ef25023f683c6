"""The reference cache file's key and its arrays read as numpy, without torch.

A safetensors file is plain bytes with a JSON header, so the line runtime reads and
writes the same ``reference_cache.safetensors`` the torch detector does, through
safetensors' numpy API; the key in its metadata names what the encodings were made from
(``cache_key``) whichever runtime made them. The file is a profile's, but it lives here,
beside the line runtime that reads it: profiles build on this package, never the reverse.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save

from padformer_edge.files.atomic import write_atomic
from padformer_edge.reporting.log import get_logger


def cache_key(model_sha256: str, reference_sha256s: Sequence[str], precision: str) -> str:
    """One hex digest naming exactly what the cached encodings were computed from."""
    payload = {"model": model_sha256, "references": list(reference_sha256s), "precision": precision}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def stored_key(path: Path) -> str | None:
    """The key a cache file was written with, or None when there is no readable cache."""
    try:
        with safe_open(str(path), framework="numpy") as handle:
            return (handle.metadata() or {}).get("key")
    except (FileNotFoundError, SafetensorError, OSError, ValueError):
        return None


def read_encodings(
    path: Path, key: str, with_targets: bool = False
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The cached (encoder features ``[1, N, M, E]``, the references' CNN features
    ``[1, N, M, F]`` when ``with_targets``, else None) if ``path`` holds them under
    ``key``, else None (absent, stale, damaged or lacking the targets a pointer model
    reads: the caller encodes again). The names are ``reference_cache``'s."""
    if stored_key(path) != key:
        return None
    try:
        tensors = load_file(str(path))
        return tensors["features"], tensors["targets"] if with_targets else None
    except (SafetensorError, OSError, ValueError, KeyError):
        return None


def write_encodings(
    path: Path, key: str, features: np.ndarray, targets: np.ndarray | None = None
) -> None:
    """Save encoder features (and a pointer model's reference CNN features) under ``key``
    atomically; a read-only profile folder only costs a re-encode at the next start."""
    arrays = {"features": np.ascontiguousarray(features)}
    if targets is not None:
        arrays["targets"] = np.ascontiguousarray(targets)
    try:
        data = save(arrays, metadata={"key": key})
        write_atomic(path, data)
    except Exception as err:  # the detector works without the file; say so and go on
        get_logger("profiles").warning("profile.cache_not_written", path=str(path), error=str(err))
