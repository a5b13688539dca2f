"""The package's import graph, read from the source with ``ast`` (nothing is imported): no circle, no upward import.

Every import counts: at module level and inside functions (a lazy import still ties the two
modules together, it only defers when), ``import x``, ``from x import y``, relative imports and
``importlib.import_module("literal")``. Module names built at run time (a package's lazy
``__getattr__`` exports, ``f"camdf.runtime.{...}"``) cannot be read and stay inside their package.

Layers
------
:data:`LAYERS` orders the packages of ``camdf`` from the bottom up; a module may import its own
package and any package below it, never one above. The order follows the data flow of the
style brief (data -> scores -> instances -> labels -> policies -> outcomes -> statistics ->
store -> tables) and was read off the graph, each package above every package it imports:

- ``common``: helpers with no project dependency; ``tracking``: the MLflow store, which knows
  nothing of the method (only ``common``), so every layer above may record or read runs.
- ``data`` (the task format), ``costs`` (tool costs of a domain), ``core`` (the method's
  arithmetic on arrays), ``rankers`` (scores; they fold tasks with ``core``).
- ``sufficiency`` (labels by execution, generic over domains), then ``policies`` (the rules,
  on ``core``).
- ``integrations``: the outside benchmarks; they implement ``sufficiency``'s executable
  domain and measure ``costs``, so both sit below them (cost regimes receive the measuring
  function from the integrations registry instead of importing it).
- ``evaluation`` (a cell out of fold: ``core``, ``policies``, ``sufficiency``), ``runtime``
  (the shipped stopper: ``core``, ``policies``, ``rankers``), ``reporting`` (tables and figures
  from the store: ``tracking``, ``policies``); ``adapters`` (the harness adapters: ``runtime`` only).
- ``pipeline``: the stages, which run all of the above (a cell job draws its figure with
  ``reporting``, the train stage ships through ``runtime``); ``cli`` last.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3] / "camdf"

#: Packages of ``camdf`` from the bottom layer up (the module docstring gives the reasons).
LAYERS = ("common", "tracking", "data", "costs", "core", "rankers", "sufficiency", "policies", "integrations",
          "evaluation", "runtime", "adapters", "reporting", "pipeline", "cli")



def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, name: str, is_package: bool) -> list[str]:
    """The dotted names an import node (or ``importlib.import_module("...")``) asks for."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:  # relative: from the importing module's package, one level up per extra dot
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module
        return [f"{module}.{a.name}" for a in node.names] + [module]
    if (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return [node.args[0].value]
    return []


def import_edges(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """Module -> {camdf module it imports: line of the first such import}, over every import in the file.

    ``from x import y`` is an edge to ``x.y`` when that is a module, else to ``x``; ``import x.y``
    is an edge to ``x.y`` (the deepest name that is a module).
    """
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, dict[str, int]] = {}
    for name, path in paths.items():
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            targets = _imported(node, name, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):  # x.y if y is a module, else x (the last entry)
                module = targets.pop()
                targets = [t if t in paths else module for t in targets]
            for target in targets:
                while target not in paths and "." in target:  # import a.b.c: the deepest module named
                    target = target.rsplit(".", 1)[0]
                if target in paths and target != name:
                    edges[target] = min(edges.get(target, node.lineno), node.lineno)
        graph[name] = edges
    return graph


def import_graph(root: Path = ROOT, allowed: set[tuple[str, str]] = frozenset()) -> dict[str, set[str]]:
    """Module -> the camdf modules it imports, anywhere in the file, less the ``allowed`` edges."""
    return {a: {b for b in edges if (a, b) not in allowed} for a, edges in import_edges(root).items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def layer_of(module: str, layers: tuple[str, ...] = LAYERS) -> int | None:
    """Index of a module's package in ``layers`` (None for the top package ``camdf`` itself)."""
    parts = module.split(".")
    return layers.index(parts[1]) if len(parts) > 1 else None


def upward_imports(root: Path = ROOT, layers: tuple[str, ...] = LAYERS,
                   allowed: set[tuple[str, str]] = frozenset()) -> list[str]:
    """Every import from a lower layer into a higher one, as ``importer:line -> imported (low < high)``."""
    out = []
    for a, edges in sorted(import_edges(root).items()):
        for b, line in sorted(edges.items()):
            la, lb = layer_of(a, layers), layer_of(b, layers)
            if (a, b) not in allowed and la is not None and lb is not None and la < lb:
                out.append(f"{a}:{line} -> {b} ({layers[la]} < {layers[lb]})")
    return out


def test_every_package_has_a_layer():
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(LAYERS), f"place new packages in LAYERS: {sorted(packages ^ set(LAYERS))}"


def test_the_graph_reads_imports_inside_functions_and_relative_ones():
    edges = import_edges()
    assert len(edges) > 40
    assert "camdf.pipeline.provenance" in edges["camdf.pipeline.cell_job"]  # imported inside run_and_log
    assert "camdf.integrations.registry" in edges["camdf.pipeline.data_stage"]  # inside functions only


def test_camdf_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_no_import_runs_from_a_lower_layer_to_a_higher_one():
    assert upward_imports() == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "camdf"
    for rel, body in {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "", **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text('"""x."""\n' + body)
    return pkg


def test_cycle_detector_finds_an_added_cycle(tmp_path):
    pkg = _package(tmp_path, {"low/one.py": "from camdf.low.two import f\n",
                              "low/two.py": "def f():\n    from camdf.low import one\n"})
    assert find_cycle(import_graph(pkg)) == ["camdf.low.one", "camdf.low.two", "camdf.low.one"]
    relative = _package(tmp_path / "rel", {"low/one.py": "from .two import f\n",
                                            "low/two.py": "def f():\n    from . import one\n"})
    assert find_cycle(import_graph(relative)) == ["camdf.low.one", "camdf.low.two", "camdf.low.one"]
    allowed = {("camdf.low.two", "camdf.low.one")}
    assert find_cycle(import_graph(pkg, allowed)) is None


def test_layer_check_finds_an_added_upward_import(tmp_path):
    pkg = _package(tmp_path, {"high/top.py": "from camdf.low.base import x\n",
                              "low/base.py": "x = 1\n\n\ndef late():\n    from ..high import top\n    import camdf.high.top\n"})
    assert upward_imports(pkg, ("low", "high")) == ["camdf.low.base:6 -> camdf.high.top (low < high)"]
    assert upward_imports(pkg, ("high", "low")) == ["camdf.high.top:2 -> camdf.low.base (high < low)"]
    assert upward_imports(pkg, ("low", "high"), {("camdf.low.base", "camdf.high.top")}) == []


def test_top_level_holds_packages_only():
    assert sorted(p.name for p in ROOT.glob("*.py")) == ["__init__.py"]


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_opens_with_a_docstring(path):
    doc = ast.get_docstring(ast.parse(path.read_text()))
    assert doc and doc.splitlines()[0].strip(), f"{path} has no one-line docstring"
