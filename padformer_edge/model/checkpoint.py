"""Checkpoints as single safetensors files, and encoder import from MAE / timm weights.

A padformer-edge checkpoint is one ``.safetensors`` file: the tensors, plus header
strings holding a format tag, the preset name, the full ``ModelConfig`` as JSON, the
fused score's settings validated for this model (``scoring``, JSON), a sha256 of the
tensors and the caller's metadata. Checkpoints written before the scoring had its own
entry kept those settings as ``fused_*`` fields of the config; loading moves them to
``scoring`` (``split_legacy_scoring``), so every earlier file scores as it did. Loading
never unpickles anything, so a checkpoint from an untrusted source cannot run code on the
line PC.

A checkpoint may store its float32 tensors as float16 (``storage: float16`` in the
header) to halve the file, e.g. for the generic model shipped inside the package; loading
upcasts them to float32, so the model computes exactly as one loaded from float32 values
that happen to be float16-representable.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from padformer_edge.errors import UserError
from padformer_edge.files.atomic import atomic_path

# Re-exported: the model checksum stored with every result is a plain file digest.
from padformer_edge.files.digest import file_sha256 as file_sha256
from padformer_edge.model.config import ModelConfig
from padformer_edge.model.header import FORMAT_TAG, read_header, tensors_sha256
from padformer_edge.model.padformer import PADFormer

# Keys an MAE or timm file may hold that the encoder deliberately does not take: MAE's own
# decoder and mask token, a classification head, and the position table (ours is fixed
# sin-cos, rebuilt from the config). ``_check_position_table`` refuses a table of our grid
# size that differs from ours (a learned one); a table of another grid size cannot be
# compared and is dropped unchecked, like the fixed table of another resolution.
_IGNORED_PREFIXES = ("decoder_", "mask_token", "head.", "fc_norm.", "pos_embed")


def save_checkpoint(
    path: str | Path, model: PADFormer, metadata: dict | None = None, half: bool = False
) -> None:
    """Write ``model`` and JSON-serialisable ``metadata`` to one safetensors file;
    ``half`` stores float32 tensors as float16 (about half the size).

    Atomically: a run stopped mid-write, or a power cut, leaves the previous file whole.
    """
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    if half:
        tensors = {k: v.half() if v.dtype == torch.float32 else v for k, v in tensors.items()}
    try:
        user = json.dumps(metadata or {}, sort_keys=True)
    except TypeError as err:
        raise ValueError(f"checkpoint metadata must be JSON-serialisable: {err}") from None
    header = {
        "format": FORMAT_TAG,
        "preset": model.preset_name,
        "config": json.dumps(model.config.to_dict(), sort_keys=True),
        "scoring": json.dumps(model.scoring, sort_keys=True),
        "weights_sha256": tensors_sha256(tensors),
        "metadata": user,
        "storage": "float16" if half else "float32",
    }
    with atomic_path(path, fix="choose a writable output folder") as tmp:
        save_file(tensors, str(tmp), metadata=header)


def load_checkpoint(path: str | Path, device: str = "cpu") -> tuple[PADFormer, dict]:
    """(model in eval mode on ``device``, the caller's metadata) from a checkpoint file."""
    header = read_header(path)
    try:
        fields, scoring = split_legacy_scoring(
            json.loads(header["config"]), json.loads(header.get("scoring", "{}"))
        )
        config = ModelConfig.from_dict(fields)
        metadata = json.loads(header.get("metadata", "{}"))
    except (KeyError, ValueError, TypeError, AttributeError) as err:
        raise UserError(f"checkpoint {path} has a broken header ({err}); re-export it.") from None
    tensors = load_file(str(path))
    if tensors_sha256(tensors) != header.get("weights_sha256"):
        raise UserError(f"checkpoint {path} is corrupt (weights checksum differs); copy it again.")
    if header.get("storage") == "float16":
        tensors = {k: v.float() if v.dtype == torch.float16 else v for k, v in tensors.items()}
    model = PADFormer(config, preset_name=header.get("preset", "custom"))
    model.scoring = scoring
    result = model.load_state_dict(tensors, strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise UserError(
            f"checkpoint {path} does not match its own config "
            f"({_key_summary(result.missing_keys, result.unexpected_keys)}); re-export it."
        )
    return model.to(device).eval(), metadata


LEGACY_SCORING_FIELDS = {
    "fused_lab_weight": ("map", "lab_weight"),
    "fused_map_reference_weight": ("map", "reference_weight"),
    "fused_map_reference_zoom": ("map", "reference_zoom"),
    "fused_map_reference_turns": ("map", "reference_turns"),
    "fused_map_filter": ("map", "consistency_filter"),
    "fused_map_sigma": ("map", "sigma"),
    "fused_score_lab_weight": ("score", "lab_weight"),
    "fused_score_reference_weight": ("score", "reference_weight"),
    "fused_score_reference_zoom": ("score", "reference_zoom"),
    "fused_score_reference_turns": ("score", "reference_turns"),
    "fused_score_filter": ("score", "consistency_filter"),
    "fused_score_sigma": ("score", "sigma"),
}
"""``ModelConfig`` fields of earlier checkpoints -> (job, key) of the scoring entry that
holds them now (``methods.padformer.fused_scoring.ScoringConfig``); None meant the product's value,
which an absent key means now."""


def split_legacy_scoring(config: dict, scoring: dict) -> tuple[dict, dict]:
    """(the config without the earlier ``fused_*`` fields, the scoring entry with their set
    values added): a header of either form loads as the current one. A value the scoring
    entry also sets is kept from the entry."""
    fields = {k: v for k, v in config.items() if k not in LEGACY_SCORING_FIELDS}
    merged: dict = {}
    for name, (job, key) in LEGACY_SCORING_FIELDS.items():
        if config.get(name) is not None:
            merged.setdefault(job, {})[key] = config[name]
    for job, values in scoring.items():
        merged[job] = {**merged.get(job, {}), **values}
    return fields, merged


def _key_summary(missing: list[str], unexpected: list[str], shown: int = 5) -> str:
    parts = []
    for label, keys in (("missing", missing), ("unexpected", unexpected)):
        if keys:
            head = ", ".join(keys[:shown]) + (", ..." if len(keys) > shown else "")
            parts.append(f"{len(keys)} {label} keys: {head}")
    return "; ".join(parts)


def _read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        try:
            return load_file(str(path))
        except (SafetensorError, OSError, ValueError) as err:
            raise UserError(
                f"weights file {path} is not a readable safetensors file ({err})."
            ) from None
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for non-checkpoint bytes
        raise UserError(
            f"weights file {path} is not a torch checkpoint that loads without pickle ({err})."
        ) from None
    if isinstance(obj, dict) and isinstance(obj.get("model"), dict):
        obj = obj["model"]
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise UserError(
            f"weights file {path} holds no state dict; expected MAE's {{'model': state_dict}}."
        )
    return obj


def load_encoder_weights(model: PADFormer, path: str | Path) -> list[str]:
    """Copy an MAE (``{"model": ...}``) or timm safetensors encoder into ``model.encoder``.

    Returns the checkpoint keys that were deliberately skipped (MAE decoder, heads, the
    position table). Any missing, unexpected or wrongly shaped key is a UserError listing
    them, because a half-loaded backbone would silently train from a worse start.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"weights file {path} does not exist; give an MAE .pth or timm file.")
    state = {k.removeprefix("module."): v for k, v in _read_state_dict(path).items()}
    ignored = sorted(k for k in state if k.startswith(_IGNORED_PREFIXES))
    wanted = {k: v for k, v in state.items() if k not in set(ignored)}
    own = model.encoder.state_dict()
    missing = sorted(set(own) - set(wanted))
    unexpected = sorted(set(wanted) - set(own))
    shapes = sorted(
        f"{k} {list(wanted[k].shape)} vs {list(own[k].shape)}"
        for k in set(own) & set(wanted)
        if wanted[k].shape != own[k].shape
    )
    if missing or unexpected or shapes:
        detail = _key_summary(missing, unexpected)
        if shapes:
            detail += ("; " if detail else "") + f"{len(shapes)} shape mismatches: "
            detail += ", ".join(shapes[:3])
        raise UserError(
            f"weights file {path} does not fit the encoder of preset "
            f"'{model.preset_name}' ({detail}); use a checkpoint of the same ViT size."
        )
    _check_position_table(model, state.get("pos_embed"), path)
    model.encoder.load_state_dict(wanted, strict=True)
    return ignored


def _check_position_table(model: PADFormer, table: torch.Tensor | None, path: Path) -> None:
    """Refuse learned position embeddings: the encoder would run without them."""
    ours = model.encoder.pos_embed
    if table is None or table.shape != ours.shape:
        return  # another resolution: the fixed table is rebuilt for ours
    if not torch.allclose(table.float(), ours, atol=1e-4):
        raise UserError(
            f"weights file {path} has learned position embeddings, but padformer-edge uses "
            "fixed sin-cos ones; use an MAE pre-trained encoder (e.g. mae_pretrain_vit_base.pth)."
        )
