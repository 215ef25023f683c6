"""What a checkpoint file is, known without the model: its header strings (read without
torch) and the checksum over its tensors that the header records.

A profile on a method that does not score with PADFormer still records the checkpoint
it names, and checks that the file is one (``profiles.create``) without loading it;
``checkpoint.load_checkpoint`` reads the same header first. The comparator's checkpoint
(``methods.compare.checkpoint``) and the exported graphs' manifest use the same checksum.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import SafetensorError, safe_open

from padformer_edge.errors import UserError

if TYPE_CHECKING:
    import torch

FORMAT_TAG = "padformer-edge/1"


def read_header(path: str | Path) -> dict[str, str]:
    """The header strings of a padformer-edge checkpoint, or a UserError saying why not."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"checkpoint {path} does not exist; give the path of a .safetensors file.")
    try:
        with safe_open(str(path), framework="numpy") as fh:
            header = fh.metadata() or {}
    except (SafetensorError, OSError, ValueError) as err:
        raise UserError(
            f"checkpoint {path} is not a safetensors file ({err}); "
            "give a file written by padformer-edge."
        ) from None
    if header.get("format") != FORMAT_TAG:
        raise UserError(
            f"checkpoint {path} is a safetensors file but not a padformer-edge checkpoint "
            f"(no '{FORMAT_TAG}' format tag); use load_encoder_weights for MAE/timm weights."
        )
    return header


def tensors_sha256(tensors: dict[str, torch.Tensor]) -> str:
    """sha256 over names, dtypes, shapes and bytes, in name order (torch is imported by
    whoever holds tensors, so this costs no import)."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        digest.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        # reshape: a 0-d tensor (BatchNorm's step counter) cannot be viewed as bytes
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()
