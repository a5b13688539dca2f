"""The runtime's built-in ranker: crosscat, fitted on every built-in catalog, shipped as text in the package.

A request without scores is ranked by :mod:`camdf.rankers.crosscat` (lexical, character n-gram, per-sentence and
neighbour features of any tool list, a monotone LightGBM model fused with the lexical first stage), fitted on
every catalog in the box by the default-policy stage (``make default-policy``, run by ``make reproduce``:
:func:`camdf.pipeline.default_policy.fit_ranker`) and copied into ``camdf/runtime/ranker_model/``
(``crosscat.txt``: the booster's text form, no pickle, evaluated with numpy (:mod:`camdf.policies.trees`);
``manifest.json``: its provenance, each catalog's fingerprint). Its index is built once per tool list and kept by content (:data:`INDEXES`, as bm25's is:
:mod:`camdf.runtime.bm25_index`). Without the shipped model (an install that removed it), the built-in ranker is
bm25 (:func:`camdf.runtime.bm25_index.bm25_tool_scores`), as it was before; :func:`builtin_ranker` says which.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from camdf.runtime.bm25_index import CACHE_SIZE, FIELDS, LRU, _WORDS, ToolIndex, bm25_tool_scores, same_tools
from camdf.runtime.tooltext import ranker_fields

#: The shipped model's folder inside :mod:`camdf.runtime`.
FOLDER = "ranker_model"
MODEL, MANIFEST = "crosscat.txt", "manifest.json"
#: The crosscat indexes kept, by tool content.
INDEXES = LRU(CACHE_SIZE)


def model_dir() -> Path:
    """The packaged ranker's folder."""
    return Path(__file__).resolve().parent / FOLDER


@functools.lru_cache(maxsize=1)
def _booster():
    """The shipped model's raw-score function (its trees evaluated with numpy, to LightGBM's last bit: no
    LightGBM or scikit-learn import), or None when this install has no model file."""
    path = model_dir() / MODEL
    if not path.is_file():
        return None
    from camdf.policies.trees import read_forest
    from camdf.rankers.crosscat import FEATURES

    return read_forest(path.read_text(encoding="utf-8"), str(path), n_features=len(FEATURES)).raw_score


def builtin_ranker() -> str:
    """``"crosscat"`` when the shipped model is present, else ``"bm25"``."""
    return "crosscat" if _booster() is not None else "bm25"


@dataclass(frozen=True)
class _Kept:
    """One tool list's crosscat index with the fields it was built from (its key in :data:`INDEXES` is the
    names); :meth:`holds` is bm25's check of the same fields."""

    index: Any
    descriptions: list[str]
    parameters: list[tuple[str, ...]]
    holds = ToolIndex.holds

    @classmethod
    def build(cls, names: list[str], descriptions: list[str], parameters: list[tuple[str, ...]]) -> "_Kept":
        from camdf.rankers.crosscat import CatalogIndex

        return cls(CatalogIndex.build(names, descriptions, parameters), descriptions, parameters)


def tool_scores(query: str, tools: Sequence[Any],
                raw_score: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """The built-in ranker's scores of ``tools`` for ``query``, shape (A,), float64 (higher = better).

    crosscat (module docstring) when the shipped model is present, from the kept index of these tools; bm25
    otherwise. ``raw_score`` (features -> raw scores) replaces the shipped model, e.g. one fitted without the
    catalog being searched (``benchmarks/bench_search.py``); the index is the same. Raises ValueError naming
    ``query`` when it has no word the rankers can use (crosscat's first stage is bm25: the same refusal),
    ``tools`` when no tool has one, ``tools[i]`` when a tool has no name.
    """
    booster = raw_score or _booster()
    if booster is None or len(tools) < 2:  # one tool: nothing to order (bm25 still refuses a wordless request)
        return bm25_tool_scores(query, tools)
    from camdf.rankers.crosscat import rank_query
    from camdf.rankers.lexical import tokenize

    names, descs, params = same_tools(FIELDS, tools, ranker_fields)
    if not tokenize([query])[0]:
        raise ValueError(f"query: no word the built-in ranker can use ({_WORDS}); give `scores` instead")
    kept = INDEXES.get(tuple(names), lambda: _Kept.build(names, descs, params), lambda k: k.holds(descs, params))
    if kept.index.full.retriever is None:
        raise ValueError(f"tools: no tool name, description or parameter has a word the built-in ranker can use "
                         f"({_WORDS}); give `scores` instead")
    return rank_query(kept.index, booster, query)
