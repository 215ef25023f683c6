"""No function of the product is longer than ``MAX_LINES`` lines.

A newcomer changes a function they can read whole; past a screen or two, one that parses,
checks, runs and prints at once hides which part a change touches. The length of a
function (or method) is counted from its ``def`` line to its last line, so its signature
(a command's option declarations too) and any function defined inside it count; a nested
function is also held to the limit on its own. Only ``padformer_edge/`` is held: tests,
benchmarks and training scripts are not the product.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = REPO / "padformer_edge"
MAX_LINES = 80


def function_lengths(source: str) -> list[tuple[str, int, int]]:
    """``(name, first line, length in lines)`` of every function in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            found.append((node.name, node.lineno, length))
    return found


def test_the_count_includes_the_signature_and_nested_functions() -> None:
    source = (
        "def outer(\n    a,\n    b,\n):\n    def inner():\n        return 1\n\n    return inner\n"
    )
    assert function_lengths(source) == [("outer", 1, 8), ("inner", 5, 2)]


def test_no_product_function_is_longer_than_the_limit() -> None:
    files = sorted(PRODUCT.rglob("*.py"))
    assert len(files) > 100, "the product's modules were not found"
    long = [
        f"{path.relative_to(REPO)}:{line} {name} ({length} lines)"
        for path in files
        for name, line, length in function_lengths(path.read_text(encoding="utf-8"))
        if length > MAX_LINES
    ]
    assert not long, (
        f"functions over {MAX_LINES} lines (split each into well-named helpers): " + "; ".join(long)
    )
