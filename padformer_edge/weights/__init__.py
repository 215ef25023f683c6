"""The weights that ship inside the package, found and vouched for by their cards: the
one place shipped weights are located (the generic PADFormer and the comparators; torch
modules live in ``model`` and ``methods``, so the two names no longer read alike).

A new product should need only reference photos, so ``profile create``, ``detect`` and
``train --init generic`` fall back to one checkpoint trained on many objects:
``padformer_edge/weights/generic.safetensors``. Beside it, ``generic.json`` (the model
card) records what it was trained on and its sha256; the locator refuses a file whose
bytes differ from the card, because a half-copied or swapped model would score every part
on another scale without saying so.

Installs without the file (a source checkout before the model is trained, a slimmed
wheel) get one sentence telling the user to pass ``--model``. Tests and experiments point
``PADFORMER_EDGE_GENERIC_MODEL`` at another checkpoint (its card is the ``.json`` beside
it) instead of touching the installed package.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from padformer_edge.errors import UserError

ENV_VAR = "PADFORMER_EDGE_GENERIC_MODEL"
CHECKPOINT_NAME = "generic.safetensors"
CARD_NAME = "generic.json"
GENERIC = "generic"  # the name ``train --init`` accepts for the shipped model
COMPARATOR_ENV_VAR = "PADFORMER_EDGE_COMPARATOR"
COMPARATOR_NAME = "comparator-320.safetensors"  # the ``compare`` metric's default weights
EARLIER_COMPARATORS = ("comparator.safetensors",)
"""Comparators shipped before the default, kept so that a profile made with one keeps its
scores (it records the sha256 of the weights it reads); the first is what a ``compare``
profile that recorded none was made with."""
CARD_FIELDS = ("data", "steps", "wall_time", "machine", "sha256", "quality")

_verified: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) -> sha256 checked


def package_folder() -> Path:
    """This package's folder: where the wheel puts the checkpoint and its card."""
    return Path(__file__).resolve().parent


def generic_checkpoint_path() -> Path:
    """Where the generic checkpoint should be: $PADFORMER_EDGE_GENERIC_MODEL or the package."""
    override = os.environ.get(ENV_VAR)
    return Path(override) if override else package_folder() / CHECKPOINT_NAME


def card_path(checkpoint: Path) -> Path:
    """The model card that belongs to a checkpoint: same name, ``.json``."""
    return checkpoint.with_suffix(".json")


def read_card(checkpoint: Path) -> dict[str, Any]:
    """The card of ``checkpoint`` with every required field, or a UserError naming the gap."""
    card = card_path(checkpoint)
    try:
        fields = json.loads(card.read_text())
    except FileNotFoundError:
        raise UserError(
            f"the generic model {checkpoint} has no model card {card.name} beside it; "
            "reinstall padformer-edge or pass --model."
        ) from None
    except (OSError, ValueError) as err:
        raise UserError(
            f"model card {card} cannot be read ({err}); reinstall padformer-edge or pass --model."
        ) from None
    missing = [f for f in CARD_FIELDS if not isinstance(fields, dict) or f not in fields]
    if missing:
        raise UserError(
            f"model card {card} lacks {', '.join(missing)}; reinstall padformer-edge "
            "or pass --model."
        )
    return fields


def locate_generic_model() -> Path:
    """The shipped generic checkpoint, after checking its sha256 against its card."""
    return locate_shipped(
        generic_checkpoint_path(),
        ENV_VAR,
        "generic model",
        "pass --model PATH (a checkpoint written by padformer-edge train)",
    )


def comparator_path() -> Path:
    """Where the default comparator should be: $PADFORMER_EDGE_COMPARATOR or the package."""
    override = os.environ.get(COMPARATOR_ENV_VAR)
    return Path(override) if override else package_folder() / COMPARATOR_NAME


def shipped_comparators() -> list[Path]:
    """Every comparator this install can score with, the default first: the one
    $PADFORMER_EDGE_COMPARATOR names, else the package's default and earlier ones."""
    if os.environ.get(COMPARATOR_ENV_VAR):
        return [comparator_path()]
    return [package_folder() / name for name in (COMPARATOR_NAME, *EARLIER_COMPARATORS)]


def comparator_sha256(path: Path) -> str | None:
    """The sha256 a comparator's card records, None when the card cannot be read."""
    try:
        return str(read_card(path)["sha256"])
    except UserError:
        return None


def earliest_comparator_sha256() -> str | None:
    """The sha256 of the comparator a ``compare`` profile that recorded none was made
    with (the first earlier one shipped), None in an install without it."""
    if os.environ.get(COMPARATOR_ENV_VAR) or not EARLIER_COMPARATORS:
        return None
    return comparator_sha256(package_folder() / EARLIER_COMPARATORS[0])


def locate_comparator(sha256: str | None = None) -> Path:
    """The comparator whose card records ``sha256`` (None: the default), checked against
    its card. A profile names its comparator by sha256, so an upgrade that ships a new
    default leaves the profile's scores, and its threshold, as they were."""
    instead = "choose --metric fused or distance (or reinstall padformer-edge)"
    if sha256 is not None:
        matches = [p for p in shipped_comparators() if comparator_sha256(p) == sha256]
        if not matches:
            raise UserError(
                f"the comparator with sha256 {sha256[:12]} is not in this install; move the "
                "profile to the shipped one with `padformer-edge profile set-model NAME "
                "--metric compare`, then calibrate it again."
            )
        return locate_shipped(matches[0], COMPARATOR_ENV_VAR, "comparator", instead)
    return locate_shipped(comparator_path(), COMPARATOR_ENV_VAR, "comparator", instead)


def comparator_label(sha256: str | None) -> str:
    """A person's name for the comparator of ``sha256``: its card's name and input size."""
    for path in shipped_comparators():
        try:
            card = read_card(path)
        except UserError:
            continue
        if sha256 is None or card["sha256"] == sha256:
            size = card.get("config", {}).get("input_size")
            return f"{card.get('name', path.stem)}" + (f" ({size} px)" if size else "")
    return f"comparator {sha256[:12]}" if sha256 else "comparator"


def locate_shipped(path: Path, env_var: str, what: str, instead: str) -> Path:
    """``path`` after checking its bytes against the sha256 of its card (cached per size and
    mtime, so a line that builds many detectors hashes the file once)."""
    from padformer_edge.files.digest import file_sha256  # hashlib only: doctor stays torch-free

    if not path.is_file():
        if os.environ.get(env_var):
            raise UserError(
                f"{env_var} points at {path}, which does not exist; fix or unset the variable."
            )
        raise UserError(f"no {what} is shipped in this install; {instead}.")
    card = read_card(path)
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if _verified.get(key) != card["sha256"]:
        actual = file_sha256(path)
        if actual != card["sha256"]:
            raise UserError(
                f"the {what} {path} does not match the sha256 in its card "
                f"{card_path(path).name}; reinstall padformer-edge or {instead.split(' (')[0]}."
            )
        _verified[key] = actual
    return path


def checked_sha256(path: Path) -> str | None:
    """The sha256 this process already checked ``path`` against its card (a shipped file,
    unchanged since), so a caller that records it does not hash it again; None when it
    has not."""
    stat = path.stat()
    return _verified.get((str(path), stat.st_size, stat.st_mtime_ns))


def resolve_model(model: Path | None) -> Path:
    """The checkpoint a command should use: the one given, else the shipped generic one."""
    return model if model is not None else locate_generic_model()


def resolve_init(init: str | None) -> Path | None:
    """``train --init``: ``generic`` means the shipped model, anything else is a path."""
    if init is None:
        return None
    if init == GENERIC:
        return locate_generic_model()
    path = Path(init)
    if not path.is_file():
        raise UserError(
            f"--init {init}: no such checkpoint; give 'generic' or the path of a "
            ".safetensors file written by padformer-edge train."
        )
    return path
