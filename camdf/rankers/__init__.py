"""Frozen ranking sources: score every candidate tool of every task, and judge the ranking.

Scorers, found by folder: each module that scores declares ``SCORER_FUNCTIONS`` (name -> its function there):
``bm25`` (:mod:`.lexical`), ``dense`` (:mod:`.dense`), ``supervised`` and ``prior`` (:mod:`.supervised`,
cross-fitted), ``hybrid`` (:mod:`.fusion`), ``pairwise`` (:mod:`.pairwise`) and the control ``noisy_oracle``
(:mod:`.oracle`). A new ranker is one module here and its ``conf/scorer/<name>.yaml`` (docs/layout.md).

The names below are imported on first use (PEP 562), so that importing one scorer's module
(the run-time stopper's bm25) does not load every scorer and pandas.
"""

from __future__ import annotations

import importlib
from pathlib import Path

def declared_scorers(folder: Path | None = None) -> dict[str, str]:
    """Scorer name -> ``"module:function"``: the ``SCORER_FUNCTIONS`` each module of the folder (default this
    package's) declares, a module-level dict literal of scorer names to function names in that module, read from the
    source with :mod:`ast` (nothing imported: a config check reads the names in milliseconds, without numpy or
    scikit-learn). A module without it is a helper. ValueError naming the file when the declaration is
    not such a literal, or two modules declare one name."""
    import ast

    found: dict[str, str] = {}
    for path in sorted((folder or Path(__file__).parent).glob("*.py")):
        if path.name.startswith("_"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if not (isinstance(target, ast.Name) and target.id == "SCORER_FUNCTIONS"):
                continue
            try:
                declared = ast.literal_eval(node.value)
            except ValueError:
                declared = None
            if not isinstance(declared, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in declared.items()):
                raise ValueError(f"{path}:{node.lineno}: SCORER_FUNCTIONS: expected a dict literal of scorer names to "
                                 "function names in this module")
            for name, function in declared.items():
                if name in found:
                    raise ValueError(f"{path}:{node.lineno}: scorer {name!r} is declared twice (also as "
                                     f"{found[name]})")
                found[name] = f"{path.stem}:{function}"
    return found


#: Scorer name -> ``"module:function"`` in this package, found by folder (:func:`declared_scorers`);
#: :data:`camdf.rankers.scoring.SCORERS` imports them.
SCORER_FUNCTIONS = declared_scorers()
_EXPORTS = {
    "SCORERS": "scoring", "score_domain": "scoring", "scorer_params": "scoring",
    "METRICS": "quality", "per_task_quality": "quality", "quality_table": "quality", "ranking_quality": "quality",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"camdf.rankers.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'camdf.rankers' has no attribute {name!r}")
