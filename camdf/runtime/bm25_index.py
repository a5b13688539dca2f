"""The runtime's built-in ranker: bm25 of a query against each tool's text, its index built once per tool list.

A harness decides over the same tools turn after turn, so tokenising and indexing every tool's document
on every decision (most of an adapter's time: tens of milliseconds at a few hundred tools, hundreds at
thousands) is done once: the built index is kept in a small LRU cache keyed by the tools' content (each
tool's name, description and parameter names, all its document is made of: :func:`camdf.runtime.tooltext
.ranker_key`), not by the list's identity, so a rebuilt list of the same tools hits and a changed tool
misses (the cache is keyed by the names and checks the rest, so a tool whose description changed gets a new
index). A hit tokenises the query and scores it against the kept index (numpy over the index's sparse
arrays); the scores are the ones a fresh index gives, bit for bit (tests compare them on random catalogs).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from camdf.runtime.tooltext import ranker_fields

#: Tool lists whose index is kept (a harness has one or a few: its catalog, a search's deferred tools).
CACHE_SIZE = 8
_WORDS = "two or more letters, not English stop words"


@dataclass(frozen=True)
class ToolIndex:
    """A bm25 index over the documents of one tool list (:func:`camdf.rankers.lexical.bm25_scores`'s settings).

    Attributes
    ----------
    retriever : bm25s.BM25 or None
        The built index (read only once built: scoring it from several threads is safe); None without words.
    has_words : bool
        Whether any document has a word bm25 can use.
    descriptions, parameters : list
        The tools' descriptions and parameter names (with their names, the key: all their documents are made of).
    """

    retriever: Any
    has_words: bool
    descriptions: list[str]
    parameters: list[tuple[str, ...]]

    @classmethod
    def build(cls, names: list[str], descriptions: list[str], parameters: list[tuple[str, ...]]) -> "ToolIndex":
        """Tokenise and index the tools' documents (:func:`~camdf.runtime.tooltext.ranker_fields`)."""
        from camdf.rankers.lexical import _bm25s, tokenize
        from camdf.rankers.text import document

        tokens = tokenize(list(map(document, names, descriptions, parameters)))
        if not any(map(any, tokens)):  # nothing to index (bm25s cannot): kept, so that the refusal is quick too
            return cls(None, False, descriptions, parameters)
        retriever = _bm25s().BM25(k1=1.5, b=0.75)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, True, descriptions, parameters)

    def holds(self, descriptions: list[str], parameters: list[tuple[str, ...]]) -> bool:
        """Whether this index is of these tools (its names are its key in :data:`INDEXES`)."""
        return self.descriptions == descriptions and self.parameters == parameters

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        """bm25 of one tokenised query against every document, shape (A,), float64."""
        return self.retriever.get_scores(query_tokens).astype(np.float64)


class LRU:
    """A small thread-safe LRU map; a missing value is built outside the lock (two threads may build the same
    one at once: both are equal, one is kept), so a long build does not hold up hits on other keys.

    Attributes
    ----------
    hits, misses : int
    """

    def __init__(self, size: int):
        self.size = size
        self.hits = self.misses = 0
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], Any], valid: Callable[[Any], bool] | None = None) -> Any:
        """The value of ``key``, built by ``build()`` and kept on a miss (or when ``valid(value)`` is false)."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None and (valid is None or valid(value)):
                self._entries.move_to_end(key)
                self.hits += 1
                return value
            self.misses += 1
        value = build()
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


#: The kept indexes, by tool content.
INDEXES = LRU(CACHE_SIZE)


def bm25_tool_scores(query: str, tools: Sequence[Any]) -> np.ndarray:
    """Built-in ranker for callers without scores: bm25 of the query against each tool's document.

    Parameters
    ----------
    query : str
    tools : sequence, length A
        Tools of any harness (:func:`camdf.runtime.tooltext.describe_tool`), each with a name.

    Returns
    -------
    ndarray of float64, shape (A,)
        The scores of :func:`camdf.rankers.lexical.bm25_scores` (k1 1.5, b 0.75) for ``[query]`` against the
        tools' documents, from the kept index of these tools when there is one.

    Raises
    ------
    ValueError
        Naming ``query`` when it has no word bm25 can use, ``tools`` when no tool has one, ``tools[i]`` when a
        tool has no name.
    """
    from camdf.rankers.lexical import tokenize

    names, descs, params = same_tools(FIELDS, tools, ranker_fields)
    # bm25 needs words on both sides (two or more letters, not stop words); refused here, with the field.
    query_tokens = tokenize([query])[0]
    if not any(query_tokens):
        raise ValueError(f"query: no word the built-in bm25 ranker can use ({_WORDS}); give `scores` instead")
    # Keyed by the names (a tuple's hash: the strings keep theirs), then checked against the descriptions and
    # parameter names, all that the documents are made of: list comparisons, no hashing of the whole catalog.
    index = INDEXES.get(tuple(names), lambda: ToolIndex.build(names, descs, params),
                        lambda kept: kept.holds(descs, params))
    if not index.has_words:
        raise ValueError(f"tools: no tool name, description or parameter has a word the built-in bm25 ranker "
                         f"can use ({_WORDS}); give `scores` instead")
    return index.scores(query_tokens)


#: The fields (:func:`~camdf.runtime.tooltext.ranker_fields`) and schema-token costs of the tool lists last seen,
#: by the identity of their tools.
FIELDS = LRU(CACHE_SIZE)
TOKEN_COSTS = LRU(CACHE_SIZE)


def same_tools(cache: LRU, tools: Sequence[Any], read: Callable[[Sequence[Any]], Any]) -> Any:
    """``read(tools)``, kept in ``cache`` while a list holds the very same tool objects.

    A harness passes the same tool objects turn after turn (in a new list, often): reading thousands of them
    costs milliseconds per decision, comparing their identities microseconds. The key is the tools' ids, and
    the entry keeps the tools alive, so an id cannot be reused by another object while it is kept. A tool
    changed in place is not read again: give the harness a new tool object when a tool changes (the ranker's
    index and the costs are then rebuilt for that list).
    """
    kept = cache.get(tuple(map(id, tools)), lambda: (list(tools), read(tools)))
    return kept[1]


def tool_token_costs(tools: Sequence[Any], views: Callable[[], list[dict]]) -> list[float]:
    """:func:`camdf.costs.units.schema_tokens` of a tool list, counted once per list of tool objects
    (:func:`same_tools`); ``views()`` gives the tools' plain views (``name``, ``description``, ``parameters``).
    Counting 2,000 definitions takes a tenth of a second; finding them counted, microseconds."""
    from camdf.costs.units import schema_tokens

    return list(same_tools(TOKEN_COSTS, tools, lambda _: schema_tokens(views()).tolist()))
