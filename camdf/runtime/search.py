"""camdf as a harness's tool search: the model's query in, a cost-aware set of the searchable tools out.

Every harness of 2026 defers tools behind a search (Anthropic ``tool_reference`` with ``defer_loading``, OpenAI's
client-executed ``tool_search``, LangChain's tool search, an MCP server's search meta-tool); each lets the search
be the caller's. :func:`search_tools` is that search, shared by every adapter:

- the searchable tools are the catalog minus what is preloaded (``preload``: loaded up front, never returned);
- the answer is the policy's decision for the model's query over them (:class:`~camdf.runtime.toolset.ToolChooser`:
  a cost-aware set, ranked order first, not a fixed k), capped at ``max_results``;
- **fail open**: when the policy fails, every searchable tool is returned, with the chooser's one
  :class:`~camdf.runtime.toolset.FailOpenWarning` and :attr:`SearchAnswer.error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from camdf.runtime.toolset import Scorer, ToolChooser


@dataclass(frozen=True)
class SearchAnswer:
    """The tools one search returns: their names (ranked order first) and why, when it failed open."""

    names: tuple[str, ...]
    #: The searchable tools it chose among.
    searched: int
    error: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def failed_open(self) -> bool:
        return self.error is not None


def check_max_results(value: object, field: str = "max_results") -> int | None:
    """``max_results`` checked: None or an integer >= 1 (ValueError naming ``field``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field}: expected an integer >= 1 or None, got {value!r}")
    return value


def check_names(value: Any, field: str) -> tuple[str, ...]:
    """A list of tool names, checked (ValueError naming ``field``), duplicates dropped."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not all(
            isinstance(n, str) and n for n in value):
        raise ValueError(f"{field}: expected a list of tool names, got {value!r}")
    return tuple(dict.fromkeys(value))


class SearchBackend:
    """What every harness's search backend holds: the policy (a :class:`ToolChooser`), the preload and the cap.

    Parameters
    ----------
    policy, lam, task_value, dials, always_include, max_tools, min_tools, scorer
        As :class:`~camdf.runtime.toolset.ToolChooser` (``policy=None``: the package's default policy;
        ``min_tools`` default 1; ``scorer(query, tools)``: your own retriever, given plain descriptions).
    preload : sequence of str
        Tool names loaded up front: not deferred, never returned by a search (as ``always_include``).
    max_results : int, optional
        At most this many tools in one search's answer (None: the policy's whole set).
    """

    def __init__(self, policy: Any = None, *, lam: float | None = None, task_value: float | None = None,
                 dials: dict | None = None, always_include: Sequence[str] = (), preload: Sequence[str] = (),
                 max_tools: int | None = None, min_tools: int = 1, scorer: Scorer | None = None,
                 max_results: int | None = None):
        self.chooser = ToolChooser(policy, lam=lam, task_value=task_value, dials=dials, always_include=always_include,
                                   max_tools=max_tools, min_tools=min_tools, scorer=scorer)
        self.preload = check_names(preload, "preload")
        self.max_results = check_max_results(max_results)

    @property
    def up_front(self) -> frozenset[str]:
        """The tools loaded up front: ``preload`` and ``always_include``."""
        return frozenset(self.preload) | frozenset(self.chooser.always_include)

    def search(self, tools: Sequence[dict], query: str) -> SearchAnswer:
        """:func:`search_tools` over ``tools`` (plain descriptions) minus what is loaded up front."""
        return search_tools(self.chooser, tools, query, tuple(self.up_front), self.max_results)


def search_tools(chooser: ToolChooser, tools: Sequence[dict], query: str, preload: Sequence[str] = (),
                 max_results: int | None = None) -> SearchAnswer:
    """The searchable tools (``tools`` minus ``preload``; plain descriptions) the policy chooses for ``query``.

    Ranked order first (the policy's ranking), then ``always_include`` in the catalog's order; at most
    ``max_results`` (None: no cap; a failed-open answer is capped too). Never raises for a policy failure."""
    max_results = check_max_results(max_results)
    skip = set(preload)
    pool = [t for t in tools if t.get("name") not in skip] if skip else list(tools)
    if not isinstance(query, str) or not query.strip() or not pool:
        return SearchAnswer((), len(pool))
    choice = chooser.choose(pool, query)
    names = tuple(choice.exposed)
    if max_results is not None:
        names = names[:max_results]
    return SearchAnswer(names, len(pool), choice.error, choice.warnings)
