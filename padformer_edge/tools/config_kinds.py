"""Every top-level config kind, for ``config check`` and the configuration reference.

Each schema registers itself where it is defined (``register_config_kind`` in
``padformer_edge.config``), so a kind is only known once its owner has been imported.
This module imports all of the owners, so that looking a kind up never depends on what
happened to be imported before: the runtime's own at the top, the training recipe's
(``padformer_edge_training.config``) inside ``config_kinds``, because the runtime package
never imports the training package while it loads (that one imports ``padformer_edge``;
the other way round at module level would make the two packages a circle). It lives apart from
``padformer_edge.config`` because the owners import that module. None of the owners
imports torch, so ``config check`` stays instant on a line PC.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from padformer_edge.config import CONFIG_KINDS, StrictModel, load_config, read_yaml
from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.errors import UserError
from padformer_edge.profiles.schema import ProfileConfig

OWNED_KINDS: tuple[type[StrictModel], ...] = (DaemonConfig, ProfileConfig)
"""The runtime's own kinds; importing them above is what registered them."""


def config_kinds() -> dict[str, type[StrictModel]]:
    """Every registered top-level schema by kind name, the training recipe's included."""
    # importing them is what registers "train" and "comparator"
    import padformer_edge_training.comparator.recipe
    import padformer_edge_training.config  # noqa: F401

    return CONFIG_KINDS


def _kind_allows(cls: type[StrictModel], value: object) -> bool:
    """Whether a file's top-level ``kind`` value (None: the file has none) fits ``cls``:
    the training recipes share their section names and tell themselves apart by it."""
    field = cls.model_fields.get("kind")
    if field is None:
        return value is None
    if value is None:
        return not field.is_required()
    return value in get_args(field.annotation)


def detect_config_kind(path: str | Path) -> str:
    """Guess which registered schema a file follows from its top-level keys."""
    path = Path(path)
    data, _ = read_yaml(path)
    keys = set(data)
    kinds = config_kinds()
    matches = [
        name
        for name, cls in kinds.items()
        if keys <= set(cls.model_fields) and _kind_allows(cls, data.get("kind"))
    ]
    complete = [  # a regions file's one key is also a profile's: the kind it completes
        name
        for name in matches
        if {key for key, field in kinds[name].model_fields.items() if field.is_required()} <= keys
    ]
    if len(matches) > 1 and len(complete) == 1:
        return complete[0]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(sorted(kinds)) or "none registered"
    if not matches:
        raise UserError(
            f"{path}: its top-level keys {sorted(keys)} match no known config kind ({known}); "
            "pass --kind to say which it is."
        )
    raise UserError(f"{path}: could be any of {sorted(matches)}; pass --kind to choose.")


def check_config(path: str | Path, kind: str | None = None) -> tuple[str, StrictModel]:
    """Validate a config file of a given (or detected) kind; returns the kind and model."""
    kinds = config_kinds()
    if kind is None:
        kind = detect_config_kind(path)
    if kind not in kinds:
        known = ", ".join(sorted(kinds))
        raise UserError(f"unknown config kind '{kind}'; choose one of: {known}.")
    return kind, load_config(path, kinds[kind])
