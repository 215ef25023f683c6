"""Imports are plain and go one way.

Packages used to resolve their names through string-mapped PEP 562 ``__getattr__``
facades; those hid from readers, linters and type checkers which module a name comes
from, and the lazy lookups let modules import each other back unnoticed. Now every
module imports from the module that defines a name, a command imports its heavy modules
inside the function that needs them, and these tests keep it so:

- no module of the runtime package defines a module-level ``__getattr__``;
- the modules of ``padformer_edge``, ``padformer_edge_training`` and
  ``padformer_edge_migrations`` (the folders ``training/`` and ``migrations/``, under the
  import names pyproject's ``package-dir`` gives them) form no import circle. An import
  inside a function counts (it ties the modules together just the same, only later); one
  under ``if TYPE_CHECKING:`` does not, since it never runs;
- the three packages themselves form no circle either: training and migrations build on
  ``padformer_edge``, so the runtime package never imports the migrations (the store
  finds Alembic's folder by location) and imports the training package only inside the
  functions of the commands that train, evaluate, render or check a recipe, never while
  a module of it loads.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def package_folders() -> dict[str, Path]:
    """Top-level import name -> its folder in this checkout: ``padformer_edge`` as is, the
    others where pyproject's ``package-dir`` maps them."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    mapped = pyproject["tool"]["setuptools"]["package-dir"]
    return {"padformer_edge": REPO / "padformer_edge"} | {
        name: REPO / folder for name, folder in mapped.items()
    }


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the installed packages."""
    found: dict[str, Path] = {}
    for package, folder in package_folders().items():
        for path in sorted(folder.rglob("*.py")):
            parts = (package, *path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


FUNCTION = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _executed_imports(
    node: ast.AST, at_load: bool = False, type_only: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, skipping ``if TYPE_CHECKING:`` bodies unless
    ``type_only`` asks for them too; with ``at_load``, only those that run while the
    module itself is imported (not inside a function or lambda)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test) and not type_only:
            for other in child.orelse:
                yield from _executed_imports(other, at_load, type_only)
            continue
        if at_load and isinstance(child, FUNCTION):
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _executed_imports(child, at_load, type_only)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(at_load: bool = False, type_only: bool = False) -> dict[str, set[str]]:
    """Module -> the project modules it names in its imports (``from a import b`` counts
    as ``a.b`` where that is a module, else as ``a``); with ``at_load``, only the imports
    that run while the module loads; with ``type_only``, the imports under
    ``if TYPE_CHECKING:`` as well. The parent packages that Python runs first are left
    out: a package re-exporting its submodules while they import one another is no
    circle, since the package is already being imported."""
    files = module_files()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _executed_imports(tree, at_load, type_only):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                base = _absolute(module, node, is_package)
                names = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base
                    for alias in node.names
                ]
            targets |= set(names) & files.keys()
        graph[module] = targets - {module}
    return graph


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded into its top-level packages."""
    folded: dict[str, set[str]] = {}
    for module, targets in graph.items():
        top = module.split(".")[0]
        folded.setdefault(top, set()).update(t.split(".")[0] for t in targets)
        folded[top].discard(top)
    return folded


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm),
    each sorted: every one is a set of modules that import one another round."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for child in sorted(graph.get(node, ())):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def test_no_module_defines_a_getattr_facade() -> None:
    facades = []
    for module, path in module_files().items():
        if not module.startswith("padformer_edge"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            defined = (
                [node.name]
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                else [
                    t.id
                    for t in getattr(node, "targets", [getattr(node, "target", None)])
                    if isinstance(t, ast.Name)
                ]
            )
            if "__getattr__" in defined:
                facades.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert facades == [], "import names from the module that defines them instead"


def test_the_project_modules_import_one_another_without_a_circle() -> None:
    graph = import_graph()
    assert "padformer_edge.cli.app" in graph and graph["padformer_edge.config_kinds"]
    assert import_circles(graph) == []


def test_the_runtime_package_has_no_circle_even_through_type_only_imports() -> None:
    graph = import_graph(type_only=True)
    runtime = {m: {t for t in ts if t.startswith("padformer_edge.")}
               for m, ts in graph.items() if m.startswith("padformer_edge.")}  # fmt: skip
    # The web package's middleware names the app's type only for its hints: counted here.
    assert "padformer_edge.web.webapp" in runtime["padformer_edge.web.middleware"]
    assert import_circles(runtime) == [], "move the shared type into a module of its own"


def test_the_packages_are_the_three_installed_names() -> None:
    assert sorted(package_graph(import_graph())) == [
        "padformer_edge",
        "padformer_edge_migrations",
        "padformer_edge_training",
    ]
    assert "padformer_edge_training.evaluation.protocol" in module_files()


def test_the_runtime_package_never_imports_migrations() -> None:
    assert "padformer_edge_migrations" not in package_graph(import_graph())["padformer_edge"]
    assert package_graph(import_graph())["padformer_edge_migrations"] == {"padformer_edge"}


def test_the_runtime_package_loads_without_the_training_package() -> None:
    at_load = package_graph(import_graph(at_load=True))
    assert at_load["padformer_edge"] == set(), "import the training package inside a function"
    assert at_load["padformer_edge_training"] == {"padformer_edge"}
    assert import_circles(at_load) == []


def test_an_import_inside_a_function_is_not_one_at_load() -> None:
    tree = ast.parse(
        "import a\nif TYPE_CHECKING:\n    import b\ndef f():\n    import c\n"
        "class K:\n    import d\n    def g(self):\n        import e\n"
    )
    names = [n.names[0].name for n in _executed_imports(tree)]
    assert names == ["a", "c", "d", "e"]
    assert [n.names[0].name for n in _executed_imports(tree, type_only=True)] == [
        "a", "b", "c", "d", "e"]  # fmt: skip
    assert [n.names[0].name for n in _executed_imports(tree, at_load=True)] == ["a", "d"]


def test_the_circle_finder_reports_a_round_trip_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


IMPORTERS = ("import_module", "__import__")


def _is_benchmarks(name: str | None) -> bool:
    return bool(name) and (name == "benchmarks" or str(name).startswith("benchmarks."))


def _imported_names(node: ast.AST) -> list[str | None]:
    """The absolute module names an import statement or an importer call names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [] if node.level else [node.module]
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        called = getattr(node.func, "attr", getattr(node.func, "id", ""))
        value = node.args[0].value
        return [value] if called in IMPORTERS and isinstance(value, str) else []
    return []


def benchmark_imports(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that import ``benchmarks`` or one of its modules, by statement or
    by name (``importlib.import_module("benchmarks...")``, ``__import__``)."""
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if any(_is_benchmarks(name) for name in _imported_names(node))
    )


def test_no_test_imports_benchmarks() -> None:
    """A test reaches a benchmark as the docs do, as a command (tests/benchmark_process.py);
    logic a test needs lives in the package or in training/, where its job belongs."""
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / "tests").rglob("*.py"))
        for line in benchmark_imports(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == [], "run the benchmark as a subprocess or move the logic it needs"


def test_the_benchmark_import_finder_sees_every_form() -> None:
    tree = ast.parse(
        "import benchmarks.common\nfrom benchmarks import quality\n"
        "from benchmarks.quality import x\nimportlib.import_module('benchmarks.a')\n"
        "__import__('benchmarks')\nimport benchmarking\nfrom .benchmarks import y\n"
        "from tests.benchmark_process import run_benchmark\nrun('benchmarks/quality.py')\n"
    )
    assert benchmark_imports(tree) == [1, 2, 3, 4, 5]
