"""Reference encodings saved next to ``profile.yaml`` so a restart does not re-encode them.

With the paper's ViT-B encoder a handful of references costs a noticeable share of a
daemon's start-up; on a line the references of a product never change between restarts.
The cache file is keyed by the model file's sha256, the sha256 of every reference file
(in order) and the precision it was computed in: when any of them changes the key no
longer matches and the encodings are rebuilt, so a stale cache can never be used.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save

from padformer_edge.deploy.cache_files import cache_key, stored_key
from padformer_edge.files.atomic import write_atomic
from padformer_edge.model.padformer import PADFormer, ReferenceCache
from padformer_edge.reporting.log import get_logger

__all__ = ["ReferenceCacheFile", "cache_key", "read_cache", "stored_key", "write_cache"]


def read_cache(
    path: Path, key: str, model: PADFormer, device: torch.device
) -> ReferenceCache | None:
    """The cached encodings if ``path`` holds ones made under ``key``, else None.

    Only the encoder features (and, for a model that reads them, the references' CNN
    features) are stored; the model derives its decoder-side terms from them, which costs
    a small fraction of encoding the references again.
    """
    if stored_key(path) != key:
        return None
    try:
        tensors = load_file(str(path), device=str(device))
        features = tensors["features"]
        targets = tensors["targets"] if model.reads_reference_features else None
    except (SafetensorError, OSError, ValueError, KeyError):
        return None  # damaged after its header was written (or older): encode again
    with torch.no_grad():
        dtype = model.mean.dtype
        return model.cache_from_features(
            features.to(dtype), None if targets is None else targets.to(dtype)
        )


def write_cache(path: Path, key: str, cache: ReferenceCache) -> None:
    """Save encodings atomically; a read-only profile folder only costs a re-encode later."""
    tensors = {"features": cache.features.detach().cpu().contiguous()}
    if cache.targets is not None:  # a model that reads the references' CNN features
        tensors["targets"] = cache.targets.detach().cpu().contiguous()
    try:
        write_atomic(path, save(tensors, metadata={"key": key}))
    except Exception as err:  # the detector works without the file; say so and go on
        get_logger("profiles").warning("profile.cache_not_written", path=str(path), error=str(err))


@dataclass(frozen=True)
class ReferenceCacheFile:
    """A profile's cache file as the ``Detector``'s encoding store, valid under ``key``."""

    path: Path
    key: str

    def load(self, model: PADFormer, device: torch.device) -> ReferenceCache | None:
        return read_cache(self.path, self.key, model, device)

    def save(self, cache: ReferenceCache) -> None:
        write_cache(self.path, self.key, cache)
