"""Imports are plain and go one way.

Packages used to resolve their names through string-mapped PEP 562 ``__getattr__``
facades; those hid from readers, linters and type checkers which module a name comes
from, and the lazy lookups let modules import each other back unnoticed. Now every
module imports from the module that defines a name, a command imports its heavy modules
inside the function that needs them, and these tests keep it so:

- no module of the runtime package defines a module-level ``__getattr__``;
- the modules of ``padformer_edge``, ``padformer_edge_training`` and
  ``padformer_edge_migrations`` (the folders ``training/`` and ``migrations/``, under the
  import names pyproject's ``package-dir`` gives them) form no import circle, and neither
  do their packages (each subpackage and loose module of ``padformer_edge``, and the two
  other installed packages). An import inside a function counts (it ties the modules
  together just the same, only later), and so does one under ``if TYPE_CHECKING:``: it
  never runs, but a reader, a type checker and the next refactoring follow it all the same;
- no import points up the layers ``LAYERS`` lists, which docs/architecture.md#layers
  shows (a test keeps the page and the list equal): a package builds on the ones below
  it, so a change low down is never undone by one above, and each layer can be read and
  tested without those above;
- at every depth, no two parts of a package (its subpackages and loose modules) import
  each other round;
- no method's package (``padformer_edge.methods.X``) imports another's, nor the registry
  above them, beyond what docs/architecture.md#layers allows (``METHOD_IMPORTS``: none),
  and nothing outside ``methods/`` imports a method's package (the registry reaches them);
- only the ``__init__.py`` files ``INIT_WITH_CODE`` names hold more than a docstring;
- nothing but ``research/`` and ``tests/research/`` imports ``research/``, and no test
  imports ``benchmarks/``;
- the three packages themselves form no circle either: training and migrations build on
  ``padformer_edge``, so the runtime package never imports the migrations (the store
  finds Alembic's folder by location) and imports the training package only inside the
  functions of the commands that train, evaluate, render or check a recipe, never while
  a module of it loads.
"""

from __future__ import annotations

import ast
import re
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


LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("padformer_edge", "errors", "config", "anomaly", "files", "images", "devices",
              "reporting")),
    ("weights and records", ("model", "weights", "store")),
    ("scoring", ("detect",)),
    ("export", ("deploy",)),
    ("scoring methods", ("methods",)),
    ("profiles and pages", ("profiles", "web", "padformer_edge_migrations")),
    ("the line and the workstation", ("daemon", "padformer_edge_training")),
    ("checks and tools", ("tools", "demo")),
    ("commands", ("cli", "__main__")),
)  # fmt: skip
"""The layers, the lowest first, each a name and its units: a subpackage or loose module
of ``padformer_edge`` by its name there (``padformer_edge`` itself for its ``__init__``),
the other installed packages by theirs. A unit imports units of its own layer or below."""


def unit_of(module: str) -> str:
    """The unit of ``LAYERS`` a module belongs to."""
    parts = module.split(".")
    if parts[0] != "padformer_edge":
        return parts[0]
    return parts[1] if len(parts) > 1 else parts[0]


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded into units (``unit_of``)."""
    folded: dict[str, set[str]] = {}
    for module, targets in graph.items():
        unit = unit_of(module)
        folded.setdefault(unit, set()).update(unit_of(t) for t in targets)
        folded[unit].discard(unit)
    return folded


def upward_imports(
    graph: dict[str, set[str]], layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS
) -> list[str]:
    """Each ``module -> target`` whose target's unit lies in a higher layer than the
    module's own."""
    level = {unit: index for index, (_, units) in enumerate(layers) for unit in units}
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if level[unit_of(target)] > level[unit_of(module)]
    )


def test_the_project_modules_import_one_another_without_a_circle() -> None:
    graph = import_graph(type_only=True)
    assert "padformer_edge.cli.app" in graph and graph["padformer_edge.tools.config_kinds"]
    # The web package's middleware names the app's type only for its hints: counted here.
    assert "padformer_edge.web.webapp" in graph["padformer_edge.web.middleware"]
    assert import_circles(graph) == [], "move the shared piece into the lower module"


def test_the_packages_import_one_another_without_a_circle() -> None:
    units = unit_graph(import_graph(type_only=True))
    assert {"detect", "deploy", "profiles"} <= units["cli"]
    assert import_circles(units) == [], "give the shared piece one home in the lower package"


def test_every_package_and_loose_module_has_one_layer() -> None:
    placed = [unit for _, units in LAYERS for unit in units]
    assert len(placed) == len(set(placed)), "a unit is in two layers"
    assert sorted(placed) == sorted(unit_graph(import_graph())), "name each new one's layer"


def test_no_import_points_up_the_layers() -> None:
    assert upward_imports(import_graph(type_only=True)) == [], (
        "move the shared piece down, or hand it in from above (a Protocol, a callable)"
    )


def test_the_layer_check_finds_an_import_pointing_up() -> None:
    layers = (("low", ("errors", "detect")), ("high", ("deploy",)))
    graph = {
        "padformer_edge.detect.service": {"padformer_edge.deploy.graphs"},
        "padformer_edge.deploy.graphs": {"padformer_edge.detect.masks", "padformer_edge.errors"},
        "padformer_edge.detect.masks": {"padformer_edge.errors"},
        "padformer_edge.errors": set(),
    }
    assert upward_imports(graph, layers) == [
        "padformer_edge.detect.service -> padformer_edge.deploy.graphs"
    ]
    assert import_circles(unit_graph(graph)) == [["deploy", "detect"]]


def part_graphs(graph: dict[str, set[str]], packages: set[str]) -> dict[str, dict[str, set[str]]]:
    """For each package, the module graph folded into its parts (each subpackage and
    loose module directly inside it), with the imports between two of its parts only."""
    folded: dict[str, dict[str, set[str]]] = {}
    for package in packages:
        prefix = package + "."

        def part(module: str, prefix: str = prefix) -> str | None:
            if not module.startswith(prefix):
                return None
            return prefix + module[len(prefix) :].split(".")[0]

        parts: dict[str, set[str]] = {}
        for module, targets in graph.items():
            own = part(module)
            if own is None:
                continue
            parts.setdefault(own, set()).update(
                other for other in map(part, targets) if other and other != own
            )
        folded[package] = parts
    return folded


def test_no_two_parts_of_any_package_import_each_other_round() -> None:
    """Not only the top-level packages: at every depth (``methods.compare`` and
    ``methods.padformer``, ``daemon.alerts`` and the daemon's modules, the training
    package's subpackages) no two parts of one package import each other round."""
    files = module_files()
    packages = {module for module, path in files.items() if path.name == "__init__.py"}
    assert {"padformer_edge.methods", "padformer_edge.daemon"} <= packages
    circles = {
        package: found
        for package, parts in part_graphs(import_graph(type_only=True), packages).items()
        if (found := import_circles(parts))
    }
    assert circles == {}, "give the shared piece one home in the lower part"


def test_the_part_check_finds_two_subpackages_importing_each_other() -> None:
    graph = {
        "p.a.x": {"p.b.y"},
        "p.b.y": {"p.a.z"},
        "p.a.z": set(),
        "p.c": {"p.a.x"},
    }
    parts = part_graphs(graph, {"p", "p.a"})
    assert import_circles(parts["p"]) == [["p.a", "p.b"]]
    assert import_circles(parts["p.a"]) == []


def method_users(graph: dict[str, set[str]]) -> set[str]:
    """The runtime package's modules outside ``padformer_edge.methods`` that import a
    module of a method's package."""
    return {
        module
        for module, targets in graph.items()
        if module.startswith("padformer_edge.")
        and not module.startswith("padformer_edge.methods")
        and any(method_package(target) for target in targets)
    }


def test_outside_methods_no_module_imports_a_method() -> None:
    """docs/architecture.md#layers: everything outside ``methods/`` reaches a method
    through the registry (the CLI hands ``--scoring``'s items to the fused settings
    unread, and that section reads them)."""
    found = method_users(import_graph(type_only=True))
    assert found == set(), "reach the method through methods.registry"


def test_the_method_user_check_finds_an_import_from_outside() -> None:
    graph = {
        "padformer_edge.cli.detection_options": {"padformer_edge.methods.padformer.fused_scoring"},
        "padformer_edge.cli.app": {"padformer_edge.methods.registry"},
        "padformer_edge.methods.registry": {"padformer_edge.methods.compare.method"},
    }
    assert method_users(graph) == {"padformer_edge.cli.detection_options"}


INIT_WITH_CODE = frozenset({
    "padformer_edge", "padformer_edge.weights", "padformer_edge.methods",
    "padformer_edge_training", "padformer_edge_training.synth", "padformer_edge_migrations",
})  # fmt: skip
"""The packages whose ``__init__.py`` holds more than its docstring, which
docs/architecture.md names: the version, the shipped weights' locator, the methods'
registration, the renderer's public names and the two name guards."""


def test_only_the_named_init_files_hold_code() -> None:
    found = set()
    for module, path in module_files().items():
        if path.name != "__init__.py":
            continue
        body = ast.parse(path.read_text(encoding="utf-8")).body
        if any(not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) for n in body):
            found.add(module)
    assert found == INIT_WITH_CODE, "keep __init__.py to its docstring, or name it here and there"


METHOD_IMPORTS: frozenset[tuple[str, str]] = frozenset()
"""The imports between method packages (``padformer_edge.methods.X``) that
docs/architecture.md#layers allows, as (importer, imported) pairs: none. A method package
imports its own modules, ``methods.interface`` and the layers below; only the registry
(and ``detect_files`` through it) names a method, so a method can be read, changed or
removed without another's code moving."""


def method_package(module: str) -> str | None:
    """The method package a module belongs to (``compare`` for
    ``padformer_edge.methods.compare.scorer``), None outside one."""
    parts = module.split(".")
    if parts[:2] != ["padformer_edge", "methods"] or len(parts) < 3:
        return None
    return parts[2] if (REPO / "padformer_edge" / "methods" / parts[2]).is_dir() else None


def imports_between_methods(
    graph: dict[str, set[str]], allowed: frozenset[tuple[str, str]] = METHOD_IMPORTS
) -> list[str]:
    """Each ``module -> target`` from one method package into another method package or
    into the ``methods`` modules above them (the registry, ``detect_files``), unless
    ``allowed`` holds the pair of packages."""
    found = []
    for module, targets in graph.items():
        own = method_package(module)
        if own is None:
            continue
        for target in targets:
            other = method_package(target)
            if other == own or target == "padformer_edge.methods.interface":
                continue
            in_methods = target == "padformer_edge.methods" or target.startswith(
                "padformer_edge.methods."
            )
            if in_methods and (own, other or target) not in allowed:
                found.append(f"{module} -> {target}")
    return sorted(found)


def test_no_method_package_imports_another() -> None:
    graph = import_graph(type_only=True)
    assert "padformer_edge.methods.compare.scorer" in graph  # the packages are seen
    assert imports_between_methods(graph) == [], (
        "move the shared piece into the lower layers, or merge the two methods' packages"
    )


def test_the_method_check_finds_an_import_between_methods() -> None:
    graph = {
        "padformer_edge.methods.compare.scorer": {
            "padformer_edge.methods.compare.model",
            "padformer_edge.methods.interface",
            "padformer_edge.detect.readout",
        },
        "padformer_edge.methods.padformer.fused_metric": {
            "padformer_edge.methods.compare.scorer",
            "padformer_edge.methods.registry",
        },
        "padformer_edge.methods.registry": {"padformer_edge.methods.compare.method"},
    }
    assert imports_between_methods(graph) == [
        "padformer_edge.methods.padformer.fused_metric -> padformer_edge.methods.compare.scorer",
        "padformer_edge.methods.padformer.fused_metric -> padformer_edge.methods.registry",
    ]
    assert imports_between_methods(graph, frozenset({("padformer", "compare")})) == [
        "padformer_edge.methods.padformer.fused_metric -> padformer_edge.methods.registry"
    ]


METHOD_LINE = re.compile(r"^Imports between method packages: (.+?)\.$", re.MULTILINE)


def page_method_imports(text: str) -> frozenset[tuple[str, str]]:
    """The imports between method packages the architecture page's ``## Layers`` section
    allows: a line ``Imports between method packages: none.`` or one naming each pair as
    ```a` -> `b```."""
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    found = METHOD_LINE.findall(section)
    assert len(found) == 1, "the Layers section names the allowed imports between methods once"
    if found[0] == "none":
        return frozenset()
    return frozenset(re.findall(r"`([a-z_]+)` -> `([a-z_]+)`", found[0]))


def test_the_architecture_page_allows_these_imports_between_methods() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert page_method_imports(text) == METHOD_IMPORTS, "write the same pairs on the page"
    other = "x\n## Layers\nImports between method packages: `fused` -> `padformer`.\n## Next\n"
    assert page_method_imports(other) == {("fused", "padformer")}


LAYER_LINE = re.compile(r"^(\d+)\. \*\*([^*]+)\*\*: (.+?)(?: -- |$)")


def page_layers(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The layers the architecture page's ``## Layers`` section lists, lowest first: lines
    ``N. **name**: `unit`, `unit` -- what the layer is for``."""
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    found = [LAYER_LINE.match(line) for line in section.splitlines()]
    rows = [(int(m[1]), m[2], tuple(re.findall(r"`([^`]+)`", m[3]))) for m in found if m]
    assert [number for number, _, _ in rows] == list(range(1, len(rows) + 1))
    return tuple((name, units) for _, name, units in rows)


def test_the_architecture_page_lists_these_layers() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert page_layers(text) == LAYERS, "write the same layers in docs/architecture.md"


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


def _is_under(top: str, name: str | None) -> bool:
    return bool(name) and (name == top or str(name).startswith(f"{top}."))


def _is_benchmarks(name: str | None) -> bool:
    return _is_under("benchmarks", name)


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


def benchmark_imports(tree: ast.AST, top: str = "benchmarks") -> list[int]:
    """Lines of ``tree`` that import ``top`` (``benchmarks`` unless told) or one of its
    modules, by statement or by name (``importlib.import_module("benchmarks...")``,
    ``__import__``)."""
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if any(_is_under(top, name) for name in _imported_names(node))
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
    assert benchmark_imports(ast.parse("import research.cell_distance\n"), "research") == [1]
    calls = ast.parse("run_research('a.py')\nrun_benchmark('a.py', folder='research')\n"
                      "run_benchmark('quality.py')\n")  # fmt: skip
    ran = [_runs_research(n) for n in ast.walk(calls) if isinstance(n, ast.Call)]
    assert ran == [True, True, False]


def _files_importing(top: str, folders: list[Path], skip: Path | None = None) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{line}"
        for folder in folders
        for path in sorted(folder.rglob("*.py"))
        if skip is None or not path.is_relative_to(skip)
        for line in benchmark_imports(ast.parse(path.read_text(encoding="utf-8")), top)
    ]


def _runs_research(call: ast.Call) -> bool:
    """Whether ``call`` runs a research script (``run_research``, or ``run_benchmark``
    with ``folder="research"``)."""
    name = getattr(call.func, "id", getattr(call.func, "attr", ""))
    folder = [k.value for k in call.keywords if k.arg == "folder"]
    return name == "run_research" or (
        name == "run_benchmark" and any(getattr(f, "value", None) == "research" for f in folder)
    )


def test_nothing_but_research_and_its_tests_imports_research() -> None:
    """``research/`` holds what only the research tables use (docs/research.md): the
    product, its benchmarks and its tests never import it or run its scripts, so no
    command, product benchmark or product test depends on it."""
    product = [*package_folders().values(), REPO / "benchmarks", REPO / "tests"]
    found = _files_importing("research", product, skip=REPO / "tests" / "research")
    assert found == [], "research code the product needs belongs in the package or training/"
    reached = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in sorted((REPO / "tests").rglob("*.py"))
        if not path.is_relative_to(REPO / "tests" / "research")
        and path.name != "benchmark_process.py"  # where run_research is defined
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and _runs_research(node)
    ]
    assert reached == [], "a test of a research script belongs in tests/research/"
