"""The reference cache file's key and its arrays read as numpy, without torch.

A safetensors file is plain bytes with a JSON header, so the line runtime reads and
writes the same ``reference_cache.safetensors`` the torch detector does, through
safetensors' numpy API; the key in its metadata names what the encodings were made from
(``cache_key``) whichever runtime made them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save

from padformer_edge.atomic import write_atomic
from padformer_edge.log import get_logger


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


def read_features(path: Path, key: str) -> np.ndarray | None:
    """The cached encoder features ``[1, N, M, E]`` if ``path`` holds ones made under
    ``key``, else None (absent, stale or damaged: the caller encodes again)."""
    if stored_key(path) != key:
        return None
    try:
        return load_file(str(path))["features"]
    except (SafetensorError, OSError, ValueError, KeyError):
        return None


def write_features(path: Path, key: str, features: np.ndarray) -> None:
    """Save encoder features under ``key`` atomically; a read-only profile folder only
    costs a re-encode at the next start."""
    try:
        data = save({"features": np.ascontiguousarray(features)}, metadata={"key": key})
        write_atomic(path, data)
    except Exception as err:  # the detector works without the file; say so and go on
        get_logger("profiles").warning("profile.cache_not_written", path=str(path), error=str(err))
