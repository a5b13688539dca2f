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
from typing import Sequence

from camdf.runtime.toolset import ToolChooser


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
