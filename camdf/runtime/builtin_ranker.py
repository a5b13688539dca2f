"""The runtime's built-in ranker: crosscat, fitted on every built-in catalog, shipped as text in the package.

A request without scores is ranked by :mod:`camdf.rankers.crosscat` (lexical, character n-gram, per-sentence and
neighbour features of any tool list, a monotone LightGBM model fused with the lexical first stage), fitted by the
ranker stage on every catalog in the box (``make ranker``: ``pipelines/ranker.py``) and copied into
``camdf/runtime/ranker_model/`` (``crosscat.txt``: the booster's text form, no pickle, evaluated with numpy
(:mod:`camdf.policies.trees`); ``manifest.json``: its
provenance). Its index is built once per tool list and kept by content (:data:`INDEXES`, as bm25's is:
:mod:`camdf.runtime.bm25_index`). Without the shipped model (an install that removed it), the built-in ranker is
bm25 (:func:`camdf.runtime.bm25_index.bm25_tool_scores`), as it was before; :func:`builtin_ranker` says which.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from camdf.runtime.bm25_index import CACHE_SIZE, FIELDS, LRU, _WORDS, bm25_tool_scores, same_tools
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


def manifest() -> dict:
    """The shipped model's provenance (``{}`` without one)."""
    path = model_dir() / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


class _Kept:
    """One tool list's crosscat index with the fields it was built from (its key is the names)."""

    def __init__(self, names: list[str], descriptions: list[str], parameters: list[tuple[str, ...]]):
        from camdf.rankers.crosscat import CatalogIndex

        self.descriptions, self.parameters = descriptions, parameters
        self.index = CatalogIndex.build(names, descriptions, parameters)

    def holds(self, descriptions: list[str], parameters: list[tuple[str, ...]]) -> bool:
        return self.descriptions == descriptions and self.parameters == parameters


def tool_scores(query: str, tools: Sequence[Any]) -> np.ndarray:
    """The built-in ranker's scores of ``tools`` for ``query``, shape (A,), float64 (higher = better).

    crosscat (module docstring) when the shipped model is present, from the kept index of these tools; bm25
    otherwise. Raises ValueError naming ``query`` when it has no word the rankers can use (crosscat's first stage
    is bm25: the same refusal), ``tools`` when no tool has one, ``tools[i]`` when a tool has no name.
    """
    booster = _booster()
    if booster is None or len(tools) < 2:  # one tool: nothing to order (bm25 still refuses a wordless request)
        return bm25_tool_scores(query, tools)
    from camdf.rankers.crosscat import rank_query
    from camdf.rankers.lexical import tokenize

    names, descs, params = same_tools(FIELDS, tools, ranker_fields)
    if not tokenize([query])[0]:
        raise ValueError(f"query: no word the built-in ranker can use ({_WORDS}); give `scores` instead")
    kept = INDEXES.get(tuple(names), lambda: _Kept(names, descs, params), lambda k: k.holds(descs, params))
    if kept.index.full.retriever is None:
        raise ValueError(f"tools: no tool name, description or parameter has a word the built-in ranker can use "
                         f"({_WORDS}); give `scores` instead")
    return rank_query(kept.index, booster, query)
