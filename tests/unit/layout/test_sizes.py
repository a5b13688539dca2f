"""Size limits (issue 37, acceptance 3): at most 4 modules over 400 lines and at most 7 functions over 80 lines
in ``camdf/`` and ``pipelines/``, so that a module keeps one job and a function reads at once.

A function's length is ``end_lineno - lineno + 1`` of its ``def`` (docstring included, decorators not); a
nested function counts on its own and inside its parent. The limits are upper bounds, not targets: a split
that does not read better is not wanted, so the few long ones left are named in the failure message.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TREES = ("camdf", "pipelines")

MODULE_LINES, MAX_LONG_MODULES = 400, 4
FUNCTION_LINES, MAX_LONG_FUNCTIONS = 80, 7


def long_modules(root: Path = ROOT, limit: int = MODULE_LINES) -> list[tuple[int, str]]:
    """(lines, path) of every module over ``limit`` lines, longest first."""
    found = [(len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(root)))
             for tree in TREES for p in sorted((root / tree).rglob("*.py"))]
    return sorted((n, p) for n, p in found if n > limit)[::-1]


def long_functions(root: Path = ROOT, limit: int = FUNCTION_LINES) -> list[tuple[int, str]]:
    """(lines, ``path:line name``) of every function over ``limit`` lines, longest first."""
    found = []
    for tree in TREES:
        for path in sorted((root / tree).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    if n > limit:
                        found.append((n, f"{path.relative_to(root)}:{node.lineno} {node.name}"))
    return sorted(found)[::-1]


def test_at_most_4_modules_over_400_lines():
    found = long_modules()
    assert len(found) <= MAX_LONG_MODULES, f"{len(found)} modules over {MODULE_LINES} lines: {found}"


def test_at_most_7_functions_over_80_lines():
    found = long_functions()
    assert len(found) <= MAX_LONG_FUNCTIONS, f"{len(found)} functions over {FUNCTION_LINES} lines: {found}"


def test_the_counts_see_what_they_measure(tmp_path):
    pkg = tmp_path / "camdf"
    pkg.mkdir()
    (tmp_path / "pipelines").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    (pkg / "long.py").write_text(f'"""x."""\n\n\ndef long():\n{body}\n\n\nasync def short():\n    return 1\n'
                                 + "\n" * 320)
    (pkg / "short.py").write_text('"""x."""\n')
    assert long_functions(tmp_path) == [(82, "camdf/long.py:4 long")]
    assert long_modules(tmp_path) == [(409, "camdf/long.py")]
    assert long_functions(tmp_path, limit=82) == [] and long_modules(tmp_path, limit=409) == []
