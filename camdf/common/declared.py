"""Parts found by folder: each module of a package declares what it adds, read from the source.

A ranker module declares ``SCORER_FUNCTIONS`` (:mod:`camdf.rankers`), a cost-regime module
``COST_REGIMES`` (:mod:`camdf.costs`): a module-level dict literal of names to function names in
that module. :func:`declared` reads every such declaration of a folder with :mod:`ast`, importing
nothing, so a config check knows the names in milliseconds, without numpy or pandas. A module
without the declaration is a helper; a module whose name starts with ``_`` is never read.
"""

from __future__ import annotations

import ast
from pathlib import Path


def declared(folder: Path, variable: str, what: str) -> dict[str, str]:
    """Name -> ``"module:function"`` over the modules of ``folder`` declaring ``variable``.

    ``what`` names one declared thing in the errors (``scorer``, ``cost regime``). ValueError with the
    file and line when a declaration is not a dict literal of strings to strings, or when two
    declarations give one name.
    """
    found: dict[str, str] = {}
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if not (isinstance(target, ast.Name) and target.id == variable):
                continue
            try:
                names = ast.literal_eval(node.value)
            except ValueError:
                names = None
            if not isinstance(names, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                      for k, v in names.items()):
                raise ValueError(f"{path}:{node.lineno}: {variable}: expected a dict literal of {what} names to "
                                 "function names in this module")
            for name, function in names.items():
                if name in found:
                    raise ValueError(f"{path}:{node.lineno}: {what} {name!r} is declared twice (also as "
                                     f"{found[name]})")
                found[name] = f"{path.stem}:{function}"
    return found


def keyword_only(folder: Path, ref: str) -> tuple[str, ...]:
    """The keyword-only arguments of the function ``ref`` (``"module:function"`` in ``folder``), read from the
    source (nothing imported); ValueError when the module defines no such function."""
    module, function = ref.split(":")
    path = folder / f"{module}.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            return tuple(a.arg for a in node.args.kwonlyargs)
    raise ValueError(f"{path}: declares {function!r} but defines no function of that name")
