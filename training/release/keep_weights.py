"""Keep a GPU run's weights in the repository: a float16 copy, and what the rounding cost.

A lent GPU machine is bare each time and a workstation can be replaced, so the weights a
docs table was measured on are kept in the repository (``benchmarks/models/``; the first
edge model was lost because it was not). Float16 halves the file; ``keep`` checks that the
copy loads with the same config and metadata and says how far the rounding moved the
weights (the largest change of any tensor relative to that tensor's largest value).
``benchmarks/keep_weights.py`` runs it and writes the docs table.
"""

from __future__ import annotations

from pathlib import Path

from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint


def largest_relative_change(before: dict, after: dict) -> tuple[float, str]:
    """(largest |after - before| / max |before| over floating tensors, its tensor's name)."""
    worst, name = 0.0, ""
    for key, tensor in before.items():
        if not tensor.is_floating_point() or not tensor.numel():
            continue
        scale = float(tensor.abs().max())
        change = float((after[key].float() - tensor.float()).abs().max())
        relative = change / scale if scale > 0 else change
        if relative > worst:
            worst, name = relative, key
    return worst, name


def keep(source: Path, out_dir: Path) -> dict:
    """Write the float16 copy of ``source`` into ``out_dir`` and check it."""
    target = out_dir / source.name
    if target.resolve() == source.resolve():
        raise UserError(f"{source} is already in {out_dir}; give the GPU's original file.")
    model, metadata = load_checkpoint(source)
    save_checkpoint(target, model, metadata, half=True)
    copy, copy_metadata = load_checkpoint(target)
    if copy.config != model.config or copy_metadata != metadata:
        raise UserError(f"{target} does not read back with {source}'s config and metadata.")
    change, tensor = largest_relative_change(model.state_dict(), copy.state_dict())
    return {
        "file": str(target),
        "step": metadata.get("global_step"),
        "bytes_before": source.stat().st_size,
        "bytes_after": target.stat().st_size,
        "largest_relative_change": change,
        "tensor": tensor,
    }
