"""The one decision behind every harness adapter: which of a harness's tools to expose, failing open.

The adapters (:mod:`camdf.adapters`) translate a harness's tool objects into plain tool
descriptions (``{"name", "description", "parameters"}``) and its task into a query, ask a
:class:`ToolChooser`, and translate the answer back. Everything the adapters share lives here:

- the policy is loaded on first use from a URI or folder (or given as an object with ``select``);
- tools named in ``always_include`` are exposed whatever the policy says and are not shown to it;
- ``max_tools`` caps the policy's selection (its best-ranked tools first; ``always_include`` on top), and
  ``min_tools`` (default 1) floors it: a policy that exposes fewer gets its best-ranked others added, and
  :attr:`Choice.warnings` says so (as it carries the policy's own warnings), with one line on the ``camdf``
  logger;
- ``scorer`` ranks the tools with the caller's own retriever (``scorer(query, tools) -> scores``) instead of
  the built-in bm25 (whose index is built once per tool list: :mod:`camdf.runtime.bm25_index`);
- the same query over the same tools with the same lambda and dials is decided once (an LRU cache),
  so a harness that asks on every model call of a turn costs one decision per turn;
- **fail open**: when the policy cannot be loaded or raises, every tool is exposed, one
  :class:`FailOpenWarning` is issued, and the error is on the decision's trace
  (:mod:`camdf.runtime.tracing`) and in :attr:`Choice.error`;
- a policy that **defers** (a rule that knows the search fallback, :mod:`camdf.core.recovery`) preloads
  the chosen tools and leaves the others to one search tool: :attr:`Choice.deferred` names them and
  :func:`search_deferred` answers the model's search over them.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import Any, Callable, Sequence

import numpy as np

from camdf.runtime import tracing

LOG = logging.getLogger("camdf")
#: ``scorer(query, tools) -> scores``: the caller's own retriever (``tools``: plain descriptions).
Scorer = Callable[[str, list], Sequence[float]]


class FailOpenWarning(UserWarning):
    """The policy failed, so every tool was exposed."""


@dataclass(frozen=True)
class Choice:
    """The tools to expose: positions into the caller's tool list (ascending), their names, and the failure if any."""

    positions: tuple[int, ...]
    names: tuple[str, ...]
    error: str | None = None
    ranked: tuple[str, ...] = field(default=())
    #: The tools the policy left to the search tool (ranked order); empty for a policy that does not defer.
    deferred: tuple[str, ...] = field(default=())
    #: The policy defers: what it did not preload (:attr:`deferred`) is reachable through the search tool.
    defers: bool = False
    #: What the decision wants the caller to know: the policy's own warnings (a request unlike its training data),
    #: and the tools ``min_tools`` added. Each is logged once, on the ``camdf`` logger, when the decision is made.
    warnings: tuple[str, ...] = field(default=())

    @property
    def exposed(self) -> list[str]:
        """The exposed names, the policy's ranked order first (the trace's ``camdf.exposed``), then the others
        (``always_include``, or every tool when failing open) in the caller's order."""
        shown = set(self.names)
        first = [n for n in self.ranked if n in shown]
        placed = set(first)  # once: a set per name made this quadratic (170 ms at 2,000 tools)
        return first + [n for n in self.names if n not in placed]

    @property
    def failed_open(self) -> bool:
        return self.error is not None


def _plain(tool: dict, i: int) -> dict:
    name = tool.get("name") if isinstance(tool, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError(f"tools[{i}]: expected a tool description with a name")
    return tool


class ToolChooser:
    """Which tools to expose for a task, from a fitted policy; every tool when the policy fails.

    Parameters
    ----------
    policy : str, path, object or None
        A model URI (``models:/...``, ``runs:/...``), a model or exported folder, or a loaded policy
        (anything with ``select(tools, scores=, query=, lam=, **dials)``); None (the default): the package's
        default policy (:func:`camdf.runtime.defaults.default_policy_dir`). Loaded on first use.
    lam : float, optional
        Lambda (default: the policy's own).
    task_value : float, optional
        For a policy whose costs are schema tokens (the default policy, ``camdf fit``): the tokens of tool
        definitions one solved task is worth; lambda = 1 / task_value (give it or ``lam``, not both).
    dials : dict, optional
        The rule's run-time dials by name (a risk rule's target miss rate, say).
    always_include : sequence of str
        Tool names always exposed; the policy decides over the others.
    max_tools : int, optional
        At most this many tools from the policy (``always_include`` not counted).
    min_tools : int
        At least this many tools from the policy (default 1; ``always_include`` not counted): when it exposes
        fewer, its best-ranked others are added and :attr:`Choice.warnings` says so. 0: no floor.
    scorer : callable, optional
        ``scorer(query, tools) -> scores``: the caller's own retriever, one finite number per tool (higher is
        more relevant), given the query and the candidate tools as plain descriptions (``name``,
        ``description``, ``parameters``; ``always_include`` left out). Default: the built-in bm25. A scorer
        that raises or returns anything else fails open, like the policy.
    cache_size : int
        Decisions kept (query, tools, lambda, dials).

    Attributes
    ----------
    decisions : int
        How many times the policy was asked (cache misses).
    """

    def __init__(self, policy: Any = None, lam: float | None = None, dials: dict | None = None,
                 always_include: Sequence[str] = (), max_tools: int | None = None, cache_size: int = 256,
                 min_tools: int = 1, scorer: Scorer | None = None, task_value: float | None = None):
        if task_value is not None:  # the harness builder's dial: lambda = 1 / the tokens a solved task is worth
            from camdf.costs.units import lam_from_task_value

            if lam is not None:
                raise ValueError("task_value: give lam or task_value, not both (lambda = 1 / task_value)")
            lam = lam_from_task_value(task_value)
        if isinstance(always_include, str):
            raise ValueError("always_include: expected a list of tool names, got a string")
        for name, value in (("max_tools", max_tools), ("min_tools", min_tools)):
            if (value is not None or name == "min_tools") and (
                    not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"{name}: expected a non-negative integer{' or None' * (name == 'max_tools')}, "
                                 f"got {value!r}")
        if max_tools is not None and min_tools > max_tools:
            raise ValueError(f"min_tools: {min_tools} is more than max_tools ({max_tools})")
        if scorer is not None and not callable(scorer):
            raise ValueError(f"scorer: expected a callable (query, tools) -> scores, got {type(scorer).__name__}")
        self.policy = policy
        self.lam = lam
        self.dials = dict(dials or {})
        self.always_include = tuple(always_include)
        self.max_tools = max_tools
        self.min_tools = min_tools
        self.scorer = scorer
        self.cache_size = cache_size
        self.decisions = 0
        self._loaded: Any = None
        self._cache: OrderedDict[tuple, Choice] = OrderedDict()
        self._lock = threading.Lock()  # the async adapters decide in worker threads

    def loaded(self) -> Any:
        """The policy object (loaded from its URI or folder on first use; a load error is raised)."""
        if self._loaded is None:
            p = self.policy
            if p is None or isinstance(p, (str, os.PathLike)):  # None: the package's default policy
                from camdf.runtime.loading import load_policy

                p = load_policy(None if p is None else os.fspath(p))
            elif not (callable(getattr(p, "select", None)) or callable(getattr(p, "select_batch", None))):
                raise ValueError(f"policy: expected a model URI, a folder or a policy with select(), "
                                 f"got {type(p).__name__}")
            self._loaded = p
        return self._loaded

    def choose(self, tools: Sequence[dict], query: str, lam: float | None = None,
               dials: dict | None = None) -> Choice:
        """The tools of ``tools`` (plain descriptions: ``name``, ``description``, ``parameters``) to expose for
        ``query``; ``lam`` and ``dials`` override the chooser's for this call. Never raises for a policy
        failure (fail open); the tools themselves must have names."""
        tools = list(tools)
        # A field at a time with C-level map: a catalog of thousands is read on every decision.
        names = list(map(dict.get, tools, repeat("name"))) if set(map(type, tools)) <= {dict} else []
        if len(names) != len(tools) or not set(map(type, names)) <= {str} or not all(names):
            names = [_plain(t, i)["name"] for i, t in enumerate(tools)]  # names the first tool without one
        lam = self.lam if lam is None else lam
        dials = {**self.dials, **(dials or {})}
        key = (query, tuple(names), lam, tuple(sorted(dials.items())))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        keep = set(self.always_include)
        candidates = [i for i, n in enumerate(names) if n not in keep] if keep else list(range(len(names)))
        decide = lambda: self._decide(tools, names, candidates, query, lam, dials)  # noqa: E731
        if tracing.ON and not tracing.inside():
            try:
                policy = self.loaded()
            except Exception:  # noqa: BLE001  recorded by the decision itself (fail open)
                policy = self.policy
            choice = tracing.traced(policy, decide, query=query, candidates=names, lam=lam,
                                    dials=dials, fail_open=lambda c: c.failed_open)
        else:
            choice = decide()
        for note in choice.warnings:  # once per decision: a cached choice is not logged again
            LOG.warning("camdf: %s", note)
        with self._lock:
            self._cache[key] = choice
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return choice

    def _decide(self, tools, names, candidates, query, lam, dials) -> Choice:
        chosen: list[str] = []
        ranked: tuple[str, ...] = ()
        deferred: tuple[str, ...] = ()
        notes: list[str] = []
        defers = False
        error = None
        if candidates:
            self.decisions += 1
            try:
                pool = tools if len(candidates) == len(tools) else [tools[i] for i in candidates]
                sel = self._select(self.loaded(), pool, query, lam, dials)
                chosen, ranked = list(sel.exposed), tuple(sel.ranked)
                notes = [str(w) for w in (getattr(sel, "warnings", None) or [])]
                left = getattr(sel, "deferred", None)
                if self.max_tools is not None:
                    chosen = chosen[: self.max_tools]
                if len(chosen) < self.min_tools:
                    chosen, note = self._floor(chosen, ranked, len(candidates))
                    notes.append(note)
                if left is not None:  # a deferring policy: what it (or max_tools) did not preload is searched
                    shown = set(chosen)
                    defers, deferred = True, tuple(n for n in ranked if n not in shown)
            except Exception as err:  # noqa: BLE001  fail open: any failure of the policy exposes every tool
                error = f"{type(err).__name__}: {err}"
                warnings.warn(f"camdf: the policy failed ({error}); exposing all {len(names)} tools",
                              FailOpenWarning, stacklevel=4)
                notes = []
        if error is not None:
            positions = tuple(range(len(names)))
        else:
            show = set(chosen) | set(self.always_include)
            positions = tuple(compress(range(len(names)), map(show.__contains__, names)))
        return Choice(positions, tuple(names[i] for i in positions), error, ranked, deferred, defers, tuple(notes))

    def _floor(self, chosen: list[str], ranked: tuple[str, ...], n: int) -> tuple[list[str], str]:
        """``chosen`` topped up to ``min_tools`` with the best-ranked others, and the note that says so."""
        have = set(chosen)
        extra = [name for name in ranked if name not in have][: self.min_tools - len(chosen)]
        return chosen + extra, (f"the policy exposed {len(chosen)} of {n} tools; added the top {len(extra)} "
                                f"(min_tools={self.min_tools})")

    def _select(self, policy, tools: list[dict], query: str, lam, dials):
        given = {} if self.scorer is None else {"scores": self._scores(tools, query)}
        if callable(getattr(policy, "select", None)):
            return policy.select(tools, query=query, lam=lam, **given, **dials)
        return policy.select_batch([{"tools": tools, "query": query, **given}], lam=lam, **dials)[0]

    def _scores(self, tools: list[dict], query: str) -> np.ndarray:
        """The caller's scorer's scores, checked: one finite number per tool (ValueError naming ``scorer``)."""
        try:
            raw = self.scorer(query, tools)
        except Exception as err:  # noqa: BLE001  named here, failed open by the caller
            raise ValueError(f"scorer: raised {type(err).__name__}: {err}") from err
        try:
            scores = np.asarray(raw)
        except Exception:  # noqa: BLE001  a ragged or odd object: not scores
            scores = np.asarray(None)
        if scores.dtype.kind not in "iuf" or scores.shape != (len(tools),) or not np.isfinite(scores).all():
            got = (f"dtype {scores.dtype}" if scores.dtype.kind not in "iuf" else f"shape {scores.shape}"
                   if scores.shape != (len(tools),) else "a value that is not finite")
            raise ValueError(f"scorer: expected {len(tools)} finite numbers (one per tool), got {got}")
        return scores.astype(np.float64)


def search_deferred(query: str, tools: Sequence[dict], deferred: Sequence[str], k: int) -> list[str]:
    """The harness's search tool over the deferred tools: the top ``k`` of ``deferred`` for the model's ``query``.

    Ranked by the built-in ranker (the query against each tool's name, description and parameters,
    :func:`camdf.runtime.builtin_ranker.tool_scores`); ties, and a query without a word it can use, keep the
    policy's ranked order of ``deferred``. ``tools`` are plain descriptions (``name``, ``description``,
    ``parameters``); names not among them are skipped.
    """
    from camdf.runtime.builtin_ranker import tool_scores

    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"search_k: expected an integer >= 1, got {k!r}")
    by_name = {t["name"]: t for t in (_plain(t, i) for i, t in enumerate(tools))}
    names = [n for n in deferred if n in by_name]
    if not names:
        return []
    try:
        scores = tool_scores(query, [by_name[n] for n in names]).tolist()
    except ValueError:  # no usable word in the query or the tools: the policy's order
        scores = [0.0] * len(names)
    order = sorted(range(len(names)), key=lambda j: -scores[j])
    return [names[j] for j in order[:k]]
