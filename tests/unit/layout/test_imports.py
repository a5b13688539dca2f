"""The package's import graph, read from the source with ``ast`` (nothing is imported): no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3] / "camdf"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the camdf modules it imports at module level (function-level imports are lazy by design)."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


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


def test_camdf_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 40
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_cycle_detector_finds_an_added_cycle(tmp_path):
    pkg = tmp_path / "camdf"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""x."""\n')
    (pkg / "a" / "__init__.py").write_text('"""x."""\n')
    (pkg / "a" / "one.py").write_text('"""x."""\nfrom camdf.a.two import f\n')
    (pkg / "a" / "two.py").write_text('"""x."""\nfrom camdf.a import one\n')
    assert find_cycle(import_graph(pkg)) == ["camdf.a.one", "camdf.a.two", "camdf.a.one"]


def test_top_level_holds_packages_only():
    assert sorted(p.name for p in ROOT.glob("*.py")) == ["__init__.py"]


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_opens_with_a_docstring(path):
    doc = ast.get_docstring(ast.parse(path.read_text()))
    assert doc and doc.splitlines()[0].strip(), f"{path} has no one-line docstring"
