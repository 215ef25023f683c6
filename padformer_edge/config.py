"""The strict YAML loader every config file goes through, and the registry of kinds.

Every schema derives from ``StrictModel``: unknown keys are errors, because a misspelt
key silently falling back to a default is the most common way a line PC ends up running
with settings nobody chose. YAML is read with ``yaml.safe_load`` semantics; the node tree
is composed as well so that a validation error can point at the line the user must edit.

The schemas live beside their owners and register themselves with
``register_config_kind``; this module imports none of them, so every one of them can
import it without a circle. ``padformer_edge.tools.config_kinds`` imports the owners, which is
where every kind must be known (``config check``, the configuration reference).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from padformer_edge.errors import UserError

Model = TypeVar("Model", bound="StrictModel")

CONFIG_KINDS: dict[str, type[StrictModel]] = {}
"""Filled by ``register_config_kind``; read it through ``config_kinds.config_kinds()``."""


class StrictModel(BaseModel):
    """Base for every config section: unknown keys are rejected, not ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def register_config_kind(name: str) -> Callable[[type[Model]], type[Model]]:
    """Class decorator that makes a top-level schema known to ``config check``."""

    def decorate(cls: type[Model]) -> type[Model]:
        CONFIG_KINDS[name] = cls
        return cls

    return decorate


KeyPath = tuple[str | int, ...]


def _record_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    """Map every key path of the composed YAML tree to its 1-based line number."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*path, str(key_node.value))
            lines[child] = key_node.start_mark.line + 1
            _record_lines(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines[child] = item.start_mark.line + 1
            _record_lines(item, child, lines)


def read_yaml(path: Path) -> tuple[dict[str, Any], dict[KeyPath, int]]:
    """Read a YAML mapping and the line of each key; raise ``UserError`` on bad syntax."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise UserError(f"config file {path} does not exist; check the path.") from err
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"config file {path} cannot be read ({err}); fix the file.") from err
    try:
        data = yaml.safe_load(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise UserError(
            f"{path}{where}: not valid YAML ({err.problem}); fix the syntax there."
        ) from err
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not valid YAML ({err}); fix the syntax.") from err
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"{path}, line 1: the top level must be a mapping of keys to values.")
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _record_lines(node, (), lines)
    return data, lines


def _line_for(loc: KeyPath, lines: dict[KeyPath, int]) -> int:
    """The line of the deepest key of ``loc`` that exists in the file (1 if none does)."""
    for depth in range(len(loc), 0, -1):
        prefix = tuple(str(p) if isinstance(p, str) else p for p in loc[:depth])
        if prefix in lines:
            return lines[prefix]
    return 1


def _describe(error: dict[str, Any], model: type[BaseModel]) -> str:
    """Turn one pydantic error into the 'what is expected' half of a sentence."""
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key; remove it or check its spelling"
    if kind == "missing":
        return "required key is missing; add it"
    message = str(error["msg"])
    message = message.removeprefix("Value error, ")
    if message.startswith("Input should be"):
        message = "expected " + message.removeprefix("Input should be ").rstrip(".")
    return message[0].lower() + message[1:] if message else kind


def format_validation_error(
    path: Path, err: ValidationError, lines: dict[KeyPath, int], model: type[BaseModel]
) -> str:
    """One sentence per problem: file, line, key path and what is expected."""
    sentences = []
    for error in err.errors():
        loc = tuple(error["loc"])
        key = ".".join(str(p) for p in loc) or "(top level)"
        line = _line_for(loc, lines)
        sentences.append(f"{path}, line {line}, key '{key}': {_describe(error, model)}.")
    return "\n".join(sentences)


def load_config(path: str | Path, model: type[Model]) -> Model:
    """Read ``path`` and validate it against ``model``; every failure is a ``UserError``."""
    path = Path(path)
    data, lines = read_yaml(path)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise UserError(format_validation_error(path, err, lines, model)) from err
