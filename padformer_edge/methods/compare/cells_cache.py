"""A ``compare`` profile's reference cells, kept beside ``profile.yaml`` for the next start.

The comparator's cells of the references, upright and turned, are most of what building
a ``compare`` detector costs (about a second of CPU for four references at 320 px, against
a tenth to load the comparator); a line's references do not change between restarts. The
file is the profile's reference cache file, keyed by the comparator's sha256 and every
reference's: a new comparator, a changed reference, or a profile moved to another method
rewrites it, so stale cells are never read. Exact floats go in and come out, so a score
is the same bits with or without the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save

from padformer_edge.deploy.cache_files import stored_key
from padformer_edge.files.atomic import write_atomic
from padformer_edge.methods.compare.scorer import ReferenceCells
from padformer_edge.reporting.log import get_logger


def cells_key(comparator_sha256: str, reference_sha256s: Sequence[str]) -> str:
    """One hex digest naming exactly what the cached cells were computed from."""
    payload = {"comparator": comparator_sha256, "references": list(reference_sha256s)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class CellsCacheFile:
    """The reference cells of one reference set for one comparator, at ``path``."""

    path: Path
    reference_sha256s: tuple[str, ...]

    def load(self, comparator_sha256: str, device: torch.device) -> ReferenceCells | None:
        """The stored cells when the file holds ones made for this comparator and these
        references, else None (absent, stale or damaged: the caller computes them)."""
        if stored_key(self.path) != cells_key(comparator_sha256, self.reference_sha256s):
            return None
        try:
            tensors = load_file(str(self.path), device=str(device))
            return ReferenceCells(tensors["upright"], tensors["bank"])
        except (SafetensorError, OSError, ValueError, KeyError):
            return None

    def save(self, comparator_sha256: str, cells: ReferenceCells) -> None:
        """Keep ``cells`` atomically; a read-only profile folder only costs them again at
        the next start."""
        tensors = {
            "upright": cells.upright.detach().cpu().contiguous(),
            "bank": cells.bank.detach().cpu().contiguous(),
        }
        key = cells_key(comparator_sha256, self.reference_sha256s)
        try:
            write_atomic(self.path, save(tensors, metadata={"key": key}))
        except Exception as err:  # the detector works without the file; say so and go on
            get_logger("profiles").warning(
                "profile.cache_not_written", path=str(self.path), error=str(err)
            )
