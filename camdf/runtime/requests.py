"""A run-time request checked and parsed, and the selection returned: no scikit-learn, no pandas.

Shared by :class:`camdf.runtime.StopPolicy` and the lean loader of the shipped policy
(:mod:`camdf.runtime.lean`), so both accept and refuse the same requests with the same
messages. Tools are OpenAI function tools, MCP or Anthropic tool descriptions (read by
:func:`camdf.runtime.tooltext.describe_tool`); without scores, the built-in bm25 ranker
(:mod:`camdf.runtime.bm25_index`, its index kept per tool list) scores them against the request's ``query``.
"""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any, Callable

import numpy as np

from camdf.runtime.bm25_index import bm25_tool_scores  # noqa: F401  (the built-in ranker; its name here too)
from camdf.runtime.tooltext import describe_tool

# Values quoted in a refusal are clipped: a request may hold a megabyte where a name belongs.
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxdict = 4
shown = _REPR.repr

#: The fields every request may carry; a request may also set the run-time dials of the registered rules.
BASE_FIELDS = frozenset({"query", "tools", "scores", "costs", "lam", "task_value"})
# Single requests with at most this many tools take the plain-Python path (numpy pays off beyond).
SHORT_RANKING = 64


def _spec(tool: Any, i: int) -> dict:
    if not isinstance(tool, dict):
        raise ValueError(f"tools[{i}]: expected an object (OpenAI function tool or MCP tool), got {type(tool).__name__}")
    # A Chat Completions tool nests its spec under `function`; the Responses API's is flat.
    spec = tool["function"] if "function" in tool else tool
    if not isinstance(spec, dict):
        raise ValueError(f"tools[{i}].function: expected an object")
    return spec


def tool_name(tool: Any, i: int) -> str:
    """The name of one tool given as an OpenAI function tool or an MCP tool description.

    Raises ValueError naming ``tools[i]`` when it is neither, or when its name or
    description is not a (non-empty) string.
    """
    # Fast path for plain dicts with a string name and description (the common case).
    if type(tool) is dict:
        spec = tool["function"] if "function" in tool else tool
        if type(spec) is dict:
            name, desc = spec.get("name"), spec.get("description")
            if type(name) is str and name.strip() and (desc is None or type(desc) is str):
                return name
    spec = _spec(tool, i)
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tools[{i}].name: must be a non-empty string, got {shown(name)}")
    if not isinstance(spec.get("description") or "", str):
        raise ValueError(f"tools[{i}].description: must be a string")
    return name


def _plain_names(tools: list) -> list[str] | None:
    """The names :func:`tool_name` gives when every tool passes its fast path, checked a field at a time over the
    whole list with C-level ``map`` (a catalog of thousands is parsed on every decision); None when any does not."""
    if set(map(type, tools)) != {dict}:
        return None
    specs = tools
    if any(map(dict.__contains__, tools, repeat("function"))):
        specs = [t["function"] if "function" in t else t for t in tools]
        if set(map(type, specs)) != {dict}:
            return None
    names = list(map(dict.get, specs, repeat("name")))
    if set(map(type, names)) != {str} or not all(map(str.strip, names)):
        return None
    if not set(map(type, map(dict.get, specs, repeat("description")))) <= {str, type(None)}:
        return None
    return names


def tool_view(tool: dict) -> dict:
    """A plain ``{name, description, parameters}`` view of a tool :func:`tool_name` accepted (read as every
    adapter reads tools: :func:`camdf.runtime.tooltext.describe_tool`)."""
    return describe_tool(tool)


_PLAIN_NUMBERS = frozenset({int, float, np.float64, np.float32, np.int64, np.int32})


def _numbers(values: Any, where: str, name: str, n: int, positive: bool) -> list[float]:
    """``values`` as floats after checking them; errors name ``<where><name>[i]``."""
    field = where + name
    if not isinstance(values, (list, tuple, np.ndarray)):
        raise ValueError(f"{field}: expected a list of {n} numbers, got {type(values).__name__}")
    if len(values) != n:
        raise ValueError(f"{field}: length {len(values)} does not match the {n} tools")
    # Fast path: every value a plain number, finite (and > 0 for costs); numpy checks long lists.
    try:
        if isinstance(values, np.ndarray) or (n > SHORT_RANKING and set(map(type, values)) <= _PLAIN_NUMBERS):
            arr = np.asarray(values)
            if arr.dtype.kind in "iuf" and np.isfinite(arr).all() and (not positive or (arr > 0).all()):
                return arr.astype(float).tolist()
        elif (set(map(type, values)) <= _PLAIN_NUMBERS and all(map(math.isfinite, values))
              and (not positive or min(values) > 0)):
            return list(map(float, values))
    except OverflowError:  # an int beyond float range: named below
        pass
    # Slow path: any other numeric types (numpy's small ints and floats); name the first bad value.
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{field}[{i}]: expected a number, got {shown(v)}")
        try:
            x = float(v)
        except OverflowError:
            x = math.inf
        if not math.isfinite(x):
            raise ValueError(f"{field}[{i}]: must be finite, got {shown(v)}")
        if positive and x <= 0:
            raise ValueError(f"{field}[{i}]: must be > 0, got {shown(v)}")
        out.append(x)
    return out


def _values_ok(parsed: list["Request"]) -> bool:
    """Whether every score and cost of a batch is a finite plain number (costs > 0), and every
    request's score range is finite: the checks of :func:`_numbers`, over the whole batch at once."""
    flat = [list(chain.from_iterable([r.scores for r in parsed])), list(chain.from_iterable([r.costs for r in parsed]))]
    if not all(set(map(type, values)) <= _PLAIN_NUMBERS for values in flat):
        return False
    try:
        scores, costs = np.array(flat[0], dtype=float), np.array(flat[1], dtype=float)
    except OverflowError:
        return False
    if not (np.isfinite(scores).all() and np.isfinite(costs).all() and (costs > 0).all()):
        return False
    start = np.cumsum([0] + [len(r.scores) for r in parsed[:-1]])
    return bool(np.isfinite(np.maximum.reduceat(scores, start) - np.minimum.reduceat(scores, start)).all())


@dataclass(slots=True)
class Request:
    """One validated request: tool names, their vocabulary ids, scores and costs in the caller's order."""

    names: list[str]
    ids: list[int]
    scores: list[float]
    costs: list[float]
    tools: list
    query: str
    lam: float | None
    dials: dict = field(default_factory=dict)


@dataclass(slots=True)
class Selection:
    """What to expose: the tools (in the caller's format, ranked order), the depth and the ranking.

    A prefix rule's selection is the first ``depth`` ranked tools; a set rule's is any subset of
    the ranking (``depth`` None, ``positions`` the exposed ranked positions, ascending). A rule that
    defers (its card's ``defers``) preloads the exposed tools and leaves the others to the harness's
    search tool: ``deferred`` names them. ``warnings`` says, one line
    each, how the request lies outside what the policy was fitted on and whether nothing is exposed
    (:mod:`camdf.runtime.fit_range`); empty when neither.
    """

    tools: list
    depth: int | None
    ranked: list[str]
    positions: list[int] | None = None
    defers: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def deferred(self) -> list[str] | None:
        """The ranked tools left to the search (ranked order) when the rule defers, else None."""
        if not self.defers:
            return None
        shown = set(self.positions) if self.depth is None else set(range(self.depth))
        return [name for j, name in enumerate(self.ranked) if j not in shown]

    @property
    def exposed(self) -> list[str]:
        """The exposed tools' names, in ranked order."""
        if self.depth is not None:
            return self.ranked[: self.depth]
        return [self.ranked[j] for j in self.positions]

    def to_json(self) -> dict:
        """``tools``, ``depth`` (null for a set rule), ``ranked``, ``warnings`` and ``exposed`` (names, ranked order),
        and ``deferred`` (names, ranked order) when the rule defers."""
        out = {"tools": self.tools, "depth": self.depth, "ranked": self.ranked, "warnings": list(self.warnings),
               "exposed": self.exposed}
        if self.defers:
            out["deferred"] = self.deferred
        return out


def parse_request(request: Any, where: str, index: dict[str, int], default_costs: dict[str, float],
                  dial_names: frozenset[str], dial_check: Callable[[str, Any, str], Any],
                  numbers: bool = True, token_costs: bool = False) -> Request:
    """One request, validated; errors name ``<where><field>``.

    ``index`` maps the policy's training tools to their vocabulary ids (others get -1),
    ``default_costs`` gives a tool's cost when the request has none (else 1; with ``token_costs``, a policy
    whose costs are in tokens, its :func:`~camdf.costs.units.schema_tokens` instead),
    ``dial_names`` are the dials a request may name (every registered rule's), and
    ``dial_check(name, value, field)`` checks a request's dial for the policy's rule
    (None: absent).
    ``numbers=False``: a plain list of scores or costs of the right length is taken as it
    is, for :func:`_values_ok` to check with the rest of the batch.
    """
    if not isinstance(request, dict):
        raise ValueError(f"{where.rstrip('.') or 'request'}: expected a JSON object with `tools`")
    fields = BASE_FIELDS | dial_names
    if not request.keys() <= fields:
        unknown = sorted(set(request) - fields)[0]
        raise ValueError(f"{where}{unknown}: unknown field (expected some of {sorted(fields)})")
    tools = request.get("tools")
    if not isinstance(tools, list) or not tools:
        raise ValueError(f"{where}tools: expected a non-empty list of tools")
    names = _plain_names(tools)
    if names is None:  # some tool is not a plain one with a good name: the first problem, named
        try:
            names = [tool_name(tool, i) for i, tool in enumerate(tools)]
        except ValueError as err:
            raise ValueError(f"{where}{err}") from None
    if len(set(names)) < len(names):
        seen = set()
        for i, name in enumerate(names):
            if name in seen:
                raise ValueError(f"{where}tools[{i}].name: duplicate tool name {shown(name)}")
            seen.add(name)
    query = request.get("query")
    if query is not None and not isinstance(query, str):
        raise ValueError(f"{where}query: must be a string")
    if request.get("scores") is not None:
        scores = request["scores"]
        if numbers or type(scores) is not list or len(scores) != len(names):
            scores = _numbers(scores, where, "scores", len(names), positive=False)
            if not math.isfinite(max(scores) - min(scores)):
                raise ValueError(f"{where}scores: max - min overflows a float; rescale the scores")
    elif query:
        from camdf.runtime.builtin_ranker import tool_scores

        scores = tool_scores(query, tools).tolist()
    else:
        raise ValueError(f"{where}scores: missing; give scores or a `query` for the built-in ranker")
    if request.get("costs") is not None:
        costs = request["costs"]
        if numbers or type(costs) is not list or len(costs) != len(names):
            costs = _numbers(costs, where, "costs", len(names), positive=True)
    elif token_costs:  # counted once per tool list (kept by content, like the ranker's index)
        from camdf.runtime.bm25_index import tool_token_costs

        costs = tool_token_costs(tools, lambda: [tool_view(tool) for tool in tools])
    else:
        costs = list(map(float, map(default_costs.get, names, repeat(1.0))))
    lam = request_lam(request.get("lam"), request.get("task_value"), where)
    dials = {}
    for name in sorted(dial_names & request.keys()):
        value = dial_check(name, request[name], f"{where}{name}")
        if value is not None:
            dials[name] = value
    return Request(names, list(map(index.get, names, repeat(-1))), scores, costs, tools, query or "", lam, dials)


def parse_all(requests: Any, parse: Callable[..., Request]) -> list[Request]:
    """A request list validated by ``parse(request, where, numbers=...)`` (:func:`parse_request` with the
    policy's settings); errors name ``requests[k].<field>`` in a batch, ``<field>`` alone for one request."""
    if not isinstance(requests, (list, tuple)) or not requests:
        raise ValueError("requests: expected a non-empty list of requests")
    if len(requests) == 1:
        return [parse(requests[0], "")]
    # A batch checks its scores and costs all at once; when anything is wrong, the requests
    # are checked again one by one, so that the error names the first problem in order.
    try:
        parsed = [parse(r, f"requests[{k}].", numbers=False) for k, r in enumerate(requests)]
        if _values_ok(parsed):
            return parsed
    except ValueError:
        pass
    return [parse(r, f"requests[{k}].") for k, r in enumerate(requests)]


def request_lam(lam: Any, task_value: Any, where: str = "") -> float | None:
    """The lambda of ``lam`` or of ``task_value`` (lambda = 1 / task value,
    :func:`~camdf.costs.units.lam_from_task_value`), None when neither is given; ValueError naming
    ``<where>task_value`` when both are."""
    if task_value is None:
        return None if lam is None else check_lam(lam, f"{where}lam")
    if lam is not None:
        raise ValueError(f"{where}task_value: give lam or task_value, not both (lam = 1 / task_value)")
    from camdf.costs.units import lam_from_task_value

    return lam_from_task_value(task_value, f"{where}task_value")


def check_lam(value: Any, field: str = "lam") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{field}: must be a finite number >= 0, got {shown(value)}")
    return float(value)
