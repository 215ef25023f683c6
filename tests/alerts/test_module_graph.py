"""The alerts package's modules import one another without a cycle.

Before the contract had its own module, ``sinks`` imported ``mqtt`` (its factory) and
``mqtt`` imported ``sinks`` (for ``DeliveryFailed``); imports inside functions count
here too, because they tie the modules together just the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

import padformer_edge.daemon.alerts as alerts

PACKAGE = "padformer_edge.daemon.alerts"


def imports_within_package() -> dict[str, set[str]]:
    folder = Path(alerts.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        if path.stem == "__init__":
            continue
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE + "."):
                found.add(node.module.removeprefix(PACKAGE + "."))
        graph[path.stem] = found
    return graph


def test_no_module_of_the_alerts_package_imports_itself_back() -> None:
    graph = imports_within_package()
    assert {"contract", "sinks", "mqtt", "factory"} <= set(graph)

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for child in graph.get(start, ()):
            if child == target or (child not in seen and reaches(child, target, seen | {child})):
                return True
        return False

    cyclic = sorted(name for name in graph if reaches(name, name, {name}))
    assert cyclic == []
    assert graph["contract"] == set()  # the contract depends on nothing of the package
