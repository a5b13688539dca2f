"""Nothing outside the registry asks a rule what class it is or compares a method's name, and the runtime has
no import circle when every import (inside functions too) is counted."""

import ast
from pathlib import Path

import pytest

from camdf.policies import CARDS, make_policy

ROOT = Path(__file__).resolve().parents[3] / "camdf"
#: Every package but the registry's own (``policies``), found by folder: a new package is checked as it lands.
GREPPED = tuple(sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "policies"))


def _rule_classes() -> set[str]:
    """Every class a registered rule is an instance of, up to (and with) StoppingRule."""
    from camdf.policies.base import StoppingRule

    names = {"StoppingRule"}
    for name in CARDS:
        names |= {c.__name__ for c in type(make_policy(name)).__mro__ if issubclass(c, StoppingRule)}
    return names


def _strings(node: ast.AST) -> list[str]:
    """String constants of ``node`` itself or of a tuple, list or set literal."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


def _offences(path: Path, rules: set[str], names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    where = lambda node, what: f"{path.relative_to(ROOT.parent)}:{node.lineno}: {what}"  # noqa: E731
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance",
                                                                                              "issubclass"):
            for arg in node.args[1:]:
                for n in ast.walk(arg):
                    cls = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
                    if cls in rules:
                        out.append(where(node, f"{node.func.id}(..., {cls})"))
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                hit = [s for s in _strings(operand) if s in names]
                if hit:
                    out.append(where(node, f"compares with the method name {hit[0]!r}"))
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        subject = all(isinstance(t, ast.Name) and t.id.startswith("SUBJECT") for t in targets)  # a claim's subject
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and not subject:
            hit = [s for s in _strings(node.value) if s in names]
            if hit:
                out.append(where(node, f"assigns the method name {hit[0]!r}"))
        if isinstance(node, ast.MatchValue):
            hit = [s for s in _strings(node.value) if s in names]
            if hit:
                out.append(where(node, f"matches the method name {hit[0]!r}"))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("startswith", "endswith") and node.args):
            hit = [s for s in _strings(node.args[0]) if any(m.startswith(s) or m.endswith(s) for m in names)]
            if hit:
                out.append(where(node, f"{node.func.attr}({hit[0]!r}) on what may be a method name"))
    return out


#: Strings that spell a method's name but mean something else, by file: (file, what the check prints) -> why.
HOMONYMS = {
    ("camdf/common/process.py", "compares with the method name 'camdf'"): "the console script's name",
    ("camdf/core/features.py", "assigns the method name 'score_per_cost'"): "a state feature of that name",
    ("camdf/rankers/text.py", "endswith('s') on what may be a method name"): "a plural's s, stemming a word",
    ("camdf/integrations/apibench/convert.py", "assigns the method name 'none'"): "a placeholder in the source's "
                                                                                  "argument lists",
}


def test_no_isinstance_on_a_rule_class_or_branch_on_a_method_name_outside_the_registry():
    rules, names = _rule_classes(), set(CARDS)
    assert {"runtime", "evaluation", "pipeline", "reporting", "cli", "core", "rankers", "adapters"} <= set(GREPPED)
    offences = [o for pkg in GREPPED for path in sorted((ROOT / pkg).rglob("*.py")) for o in _offences(path, rules, names)]
    homonym = [o for o in offences if (o.split(":")[0], o.split(": ", 1)[1]) in HOMONYMS]
    assert [o for o in offences if o not in homonym] == []
    assert {(o.split(":")[0], o.split(": ", 1)[1]) for o in homonym} == set(HOMONYMS)  # each homonym still there


def test_the_check_sees_what_it_forbids(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(rule, method, m):\n"
                   "    if isinstance(rule, CamDFRisk):\n        pass\n"
                   "    if method == 'camdf_risk' or m in ('full', 'x'):\n        pass\n"
                   "    NAMES = ('camdf_lite', 'x')\n"
                   "    return method.startswith('camdf')\n", encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = _offences(bad, _rule_classes(), set(CARDS))
    finally:
        ROOT = saved
    assert len(found) == 5, found


def _imports(path: Path, package: str) -> set[str]:
    """The modules of ``package`` that ``path`` imports anywhere (module level or inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in out if m.startswith(package + ".")}


@pytest.mark.parametrize("package", ["camdf.runtime", "camdf.policies"])
def test_no_import_circle_counting_imports_inside_functions(package):
    folder = ROOT.parent / Path(*package.split("."))
    modules = {f"{package}.{p.stem}": p for p in folder.glob("*.py") if p.stem != "__init__"}
    graph = {m: _imports(p, package) & set(modules) for m, p in modules.items()}
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            assert state.get(n) != 1, f"import circle: {' -> '.join([*stack, m, n])}"
            if n not in state:
                visit(n, [*stack, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
