"""Derive G_x by execution: the sufficiency of every subset of the acquirable tools, per task.

For a task and the n acquirable tools of its domain (n = 7 for retail and
airline, so 2^n = 128 subsets), subset index ``m`` holds tool ``tools[i]`` when
bit ``i`` of ``m`` is set. Subsets are visited by size; a subset with a
sufficient immediate subset is sufficient without a closure (monotonicity);
any other subset's closure continues from the union of its immediate subsets'
closures, which lies inside it.

Labels:

- ``minimal``: the sufficient subsets none of whose immediate subsets is
  sufficient (inclusion-minimal sufficient sets).
- ``required`` (G_x): the minimal set with fewest tools; ties go to the one
  sharing most tools with the annotated set (the gold plan's own reads), then
  to catalog order. The other minimal sets are the ``alternatives`` (every
  one found, smallest first, up to :data:`MAX_ALTERNATIVES`); each is as
  sufficient as G_x, so a method exposing any of them succeeds.
- ``audit``: for each tool the derived set adds to or drops from the annotated
  set, its reason class (:func:`audit_labels`).
- A task whose gold plan names nothing the tools must supply has the empty set
  as its only minimal set, with a reason in ``needs_no_information``.
- A task that is not sufficient even with every tool exposed has no derived
  set; its missing values are listed (``missing_all``).

Results are cached on disk per task, keyed by the code of
:mod:`camdf.sufficiency`, the versions of the domain's packages, the tool order
and the task's content (text, gold actions, strings to communicate, annotated set).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from camdf.common.files import write_atomic
from camdf.common.fingerprint import code_version, defining_package, hash_json, package_versions
from camdf.common.progress import tracked
from camdf.data.model import Domain, Task
from camdf.sufficiency.arithmetic import find_expression
from camdf.sufficiency.closure import CallMemo, Explorer, State, describe
from camdf.sufficiency.calls import LookedUp, Goal
from camdf.sufficiency.domain import ExecutableDomain, TaskInfo
from camdf.sufficiency.values import is_number, jsonable, key, number_leaves, surface

CACHE_SUBDIR = "sufficiency"
MAX_TOOLS = 12  # 2^12 subsets per task; beyond that the exhaustive table is not the right tool
# Minimal sufficient sets recorded besides G_x (smallest first, then catalog order); the rest are
# counted (TaskResult.alternatives_dropped). With 7 tools at most 35 sets are pairwise incomparable.
MAX_ALTERNATIVES = 16


@dataclass
class TaskResult:
    """The derivation for one task (JSON-serialisable through :meth:`to_json`)."""

    task_id: str
    tools: list[str]
    mask: int  # bit m set <=> subset index m is sufficient
    minimal: list[list[str]]
    required: list[str] | None
    alternatives: list[list[str]]
    annotated: list[str]
    executable: bool
    error: str | None
    missing_all: list[dict[str, Any]]
    missing_annotated: list[dict[str, Any]]
    needs_no_information: str | None
    checked: dict[str, Any]
    annotated_read: bool = True  # the gold plan lists a read action
    read_errors: list[str] = field(default_factory=list)
    expressions: list[str] = field(default_factory=list)  # arithmetic recovered for numbers to communicate
    bounded: list[str] = field(default_factory=list)
    audit: dict[str, dict[str, str]] = field(default_factory=dict)  # see :func:`audit_labels`
    alternatives_dropped: int = 0  # minimal sets beyond the cap (MAX_ALTERNATIVES), not recorded

    def sufficient(self, exposed: Iterable[str]) -> bool:
        return bool(self.mask >> subset_index(self.tools, exposed) & 1)

    def row(self) -> np.ndarray:
        return mask_to_row(self.mask, len(self.tools))

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["mask"] = format(self.mask, "x")
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "TaskResult":
        raw = dict(raw)
        raw["mask"] = int(raw["mask"], 16)
        return cls(**raw)


@dataclass
class Derivation:
    """Derived G_x for every task of a domain.

    Attributes
    ----------
    domain : str
    tools : list of str
        The acquirable tools; bit i of a subset index is ``tools[i]``.
    results : list of TaskResult
        In the domain's task order.
    seconds : float
        Wall time of this call (not part of any output file).
    n_cached : int
        Tasks read from the cache.
    n_calls : int
        Distinct tool calls executed by this call.
    """

    domain: str
    tools: list[str]
    results: list[TaskResult]
    seconds: float = 0.0
    n_cached: int = 0
    n_calls: int = 0

    @property
    def by_id(self) -> dict[str, TaskResult]:
        return {r.task_id: r for r in self.results}

    def table(self) -> np.ndarray:
        """Sufficiency of every subset, bool array of shape (n_tasks, 2^n_tools)."""
        n = len(self.tools)
        if not self.results:
            return np.zeros((0, 1 << n), dtype=bool)
        return np.stack([r.row() for r in self.results])


def subset_index(tools: list[str], exposed: Iterable[str]) -> int:
    """Subset index of the exposed tools (names outside ``tools`` are ignored: always exposed)."""
    pos = {t: i for i, t in enumerate(tools)}
    m = 0
    for name in exposed:
        if name in pos:
            m |= 1 << pos[name]
    return m


def subset_tools(tools: list[str], m: int) -> list[str]:
    """The tools of subset index ``m``, in ``tools`` order."""
    return [t for i, t in enumerate(tools) if m >> i & 1]


def mask_to_row(mask: int, n_tools: int) -> np.ndarray:
    """Bool vector of length 2^n_tools: entry m is bit m of ``mask``."""
    n = 1 << n_tools
    raw = np.frombuffer(mask.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n].astype(bool)


def task_info(exe: ExecutableDomain, task: Task) -> TaskInfo:
    """Seed, goals, preconditions and gold arithmetic of a converted task.

    Besides the domain's policy preconditions, one condition is domain-free: a
    task whose gold plan neither writes nor has anything to communicate ends in
    a decision (most often a refusal), and what the decision rests on is the
    records its gold plan reads; each successful gold read with an identifier
    argument must then be made (``confirm_facts``).
    """
    meta = task.meta
    actions = meta.get("gold_actions")
    if actions is None:
        raise ValueError(f"task `{task.id}`: meta.gold_actions is missing (expected the tau2 converter's meta)")
    replay = exe.replay(actions)
    kinds = exe.tool_kinds()
    seed = frozenset(exe.seed(task.text))
    user_keys = frozenset(s.casefold() for s in seed)
    goals: list[Goal] = []
    for i, a in enumerate(actions):
        if kinds.get(a["name"]) != "write":
            continue
        before = replay.write_outputs[i - 1] if i > 0 else frozenset()
        for path, value in exe.identifier_values(a.get("arguments") or {}):
            goals.append(Goal(key(value), f"`{path}` of gold action {i} `{a['name']}`", "identifier", before,
                                  shown=value))
        for path, value in exe.fact_values(a.get("arguments") or {}):
            goals.append(Goal(key(value), f"`{path}` of gold action {i} `{a['name']}`", "fact", before,
                                  shown=value))
    after = replay.write_outputs[-1] if replay.write_outputs else frozenset()
    communicate = list(meta.get("communicate_info") or [])
    for text in communicate:
        goals.append(Goal(key(text), "communicate_info", "communicate", after, shown=str(text)))
    rules = exe.rules(meta, replay)
    if not communicate and not any(kinds.get(a["name"]) == "write" for a in actions):
        for i, (a, out) in enumerate(zip(actions, replay.outputs)):
            if kinds.get(a["name"]) != "read" or out is None:
                continue
            for _, value in exe.identifier_values(a.get("arguments") or {}):
                rules.append(LookedUp(
                    a["name"], key(value),
                    f"decision task: the gold plan neither writes nor communicates, so its outcome rests on "
                    f"gold action {i} `{a['name']}`",
                    name="confirm_facts", shown=value,
                ))
    return TaskInfo(
        task_id=task.id,
        text=task.text,
        seed=seed,
        user_keys=user_keys,
        goals=list(dict.fromkeys(goals)),
        rules=list(dict.fromkeys(rules)),
        expressions=exe.gold_expressions(meta),
        replay=replay,
        write_known=after | {
            key(n) for a in actions if kinds.get(a["name"]) == "write" for n in number_leaves(a.get("arguments") or {})
        },
    )


def _gold_numbers(exe: ExecutableDomain, actions: list[dict], outputs: list[Any]) -> list[list[str]]:
    """Number groups of the gold plan: each call's output, and each write's own arguments (amounts it pays)."""
    kinds = exe.tool_kinds()
    groups = []
    for a, raw in zip(actions, outputs):
        nums: list[str] = []
        if raw is not None:
            nums += number_leaves(jsonable(raw))
            if a["name"] == exe.calculator:
                nums.append(surface(raw))
        if kinds.get(a["name"]) == "write":
            nums += number_leaves(a.get("arguments") or {})
        if nums:
            groups.append(sorted(nums))
    return groups


def _entity_numbers(exe: ExecutableDomain, ex: Explorer, full: State, actions: list[dict], hops: int = 2):
    """Number groups of calls, in the closure of every tool, on the records the gold plan names.

    Records are followed ``hops`` steps from the identifiers of the gold actions
    (an order names its user, whose profile lists the other orders).
    """
    entities = {key(v) for a in actions for _, v in exe.identifier_values(a.get("arguments") or {})}
    for _ in range(hops):
        grown = set(entities)
        for call in full.calls.values():
            if {key(v) for _, v in call.args if not isinstance(v, tuple)} & entities:
                grown |= {s.casefold() for s in ex.memo.get(call).surfaces
                          if set(exe.kinds_of(s)) & set(exe.record_kinds)}
        entities = grown
    return ex.numbers_of(full, entities)


def recover_arithmetic(exe: ExecutableDomain, ex: Explorer, full: State, actions: list[dict]) -> list[str]:
    """Expressions for the numbers to communicate that the closure of every tool lacks.

    Operands are searched (:func:`camdf.sufficiency.arithmetic.find_expression`)
    first among the numbers of the gold plan (what its calls returned and what
    its writes pay, one group per action), then among the numbers returned, in
    the closure of every tool, by calls on the records the gold plan names and
    the records those list (two steps: the user's other orders or reservations).
    """
    info = ex.info
    out: list[str] = []
    gold = _gold_numbers(exe, actions, info.replay.outputs)
    entity = None
    for t in info.goals:
        if t.kind != "communicate" or not is_number(t.key) or t.key in full.keys or t.key in t.also_known:
            continue
        expr = find_expression(t.key, gold)
        if expr is None:
            entity = _entity_numbers(exe, ex, full, actions) if entity is None else entity
            expr = find_expression(t.key, entity)
        if expr is not None and expr not in info.expressions and expr not in out:
            out.append(expr)
    return out


AUDIT_DROPPED = {
    "gold_read_failed": "every gold call of the tool raised, so it makes nothing known (a mistyped email)",
    "alternative": "the tool belongs to another minimal sufficient set (a defensible variant)",
    "not_needed": "the derived set is sufficient without it (the value is in the text or another tool returns it)",
}


def audit_labels(ex: Explorer, tools: list[str], states: dict[int, State], chosen: int, annotated: int,
                 alternatives: list[int], outputs: dict[str, list[Any]]) -> dict[str, dict[str, str]]:
    """Why the derived set adds or drops each tool relative to the annotated one (its reason class).

    ``added``: tool -> what goes missing without it, as the ``need`` names of
    :meth:`Explorer.missing` on the derived set minus the tool (``fact``,
    ``identifier``, ``communicate`` or a policy precondition such as
    ``authenticate``), joined by ``+``. ``dropped``: tool -> one of
    :data:`AUDIT_DROPPED`, tested in that order.
    """
    added, dropped = {}, {}
    for i, tool in enumerate(tools):
        bit = 1 << i
        if chosen & bit and not annotated & bit:
            needs = dict.fromkeys(m["need"] for m in ex.missing(states[chosen & ~bit]))
            added[tool] = "+".join(needs) or "none"
        elif annotated & bit and not chosen & bit:
            calls = outputs.get(tool, [])
            if calls and all(out is None for out in calls):
                dropped[tool] = "gold_read_failed"
            elif any(alt & bit for alt in alternatives):
                dropped[tool] = "alternative"
            else:
                dropped[tool] = "not_needed"
    return {"added": added, "dropped": dropped} if added or dropped else {}


def _choose(minimal: list[int], annotated: int) -> int:
    """The minimal set with fewest tools, then most shared with the annotated set, then earliest in catalog order."""

    def rank(m: int) -> tuple:
        return m.bit_count(), -(m & annotated).bit_count(), [i for i in range(m.bit_length()) if m >> i & 1]

    return min(minimal, key=rank)


def _no_information_reason(info: TaskInfo) -> str:
    d = describe(info)
    if not info.replay.outputs and info.replay.executable:
        what = "the gold plan has no action and nothing to communicate"
    elif not d["identifiers"] and not d["facts"] and not d["communicate"]:
        what = "no gold write takes an identifier and nothing is to be communicated"
    else:
        what = (f"the {d['identifiers']} identifier(s) and {d['facts']} fact(s) of the gold writes and the "
                f"{d['communicate']} string(s) to communicate are all in the task text")
    rules = "every policy precondition holds without a tool" if d["rules"] else "no policy precondition applies"
    return f"{what}; {rules}"


def derive_task(exe: ExecutableDomain, task: Task, tools: list[str], memo: CallMemo) -> TaskResult:
    """Sufficiency of every subset of ``tools`` for one task (see the module docstring)."""
    info = task_info(exe, task)
    ex = Explorer(exe, info, memo)
    n = len(tools)
    full = (1 << n) - 1
    full_state = ex.closure(tools)
    recovered = recover_arithmetic(exe, ex, full_state, task.meta["gold_actions"])
    if recovered:
        info.expressions.extend(recovered)
        full_state = ex.closure(tools, full_state)
    sufficient = [False] * (1 << n)
    states: dict[int, State] = {full: full_state}
    for m in sorted(range(1 << n), key=lambda m: (m.bit_count(), m)):
        subs = [m & ~(1 << i) for i in range(n) if m >> i & 1]
        if any(sufficient[s] for s in subs):
            sufficient[m] = True
            continue
        if m != full:
            start = None
            for s in subs:
                if start is None:
                    start = states[s].copy()
                else:
                    start.merge(states[s])
            states[m] = ex.closure(subset_tools(tools, m), start)
        sufficient[m] = not ex.missing(states[m])
    minimal = [m for m in range(1 << n) if sufficient[m]
               and not any(sufficient[m & ~(1 << i)] for i in range(n) if m >> i & 1)]
    annotated = subset_index(tools, task.required)
    chosen = _choose(minimal, annotated) if minimal else None
    order = sorted(minimal, key=lambda m: (m != chosen, m.bit_count(), subset_tools(tools, m)))
    n_minimal = len(order)
    order = order[:1 + MAX_ALTERNATIVES]
    outputs: dict[str, list[Any]] = {}
    for a, out in zip(task.meta["gold_actions"], info.replay.outputs):
        outputs.setdefault(a["name"], []).append(out)

    def explain(missing: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [x if "sources" in x else {**x, "sources": ex.sources(full_state, x["key"])} for x in missing]

    if annotated not in states and not sufficient[annotated]:  # pragma: no cover - visited above
        states[annotated] = ex.closure(subset_tools(tools, annotated))
    mask = sum(1 << m for m in range(1 << n) if sufficient[m])
    return TaskResult(
        task_id=task.id,
        tools=list(tools),
        mask=mask,
        minimal=[subset_tools(tools, m) for m in order],
        required=subset_tools(tools, chosen) if chosen is not None else None,
        alternatives=[subset_tools(tools, m) for m in order[1:]],
        annotated=subset_tools(tools, annotated),
        executable=info.replay.executable,
        error=info.replay.error,
        read_errors=list(info.replay.read_errors),
        missing_all=explain(ex.missing(full_state)),
        missing_annotated=explain(ex.missing(states[annotated])) if not sufficient[annotated] else [],
        needs_no_information=_no_information_reason(info) if sufficient[0] else None,
        checked=describe(info),
        annotated_read=any(exe.tool_kinds().get(a["name"]) == "read" for a in task.meta["gold_actions"]),
        expressions=recovered,
        bounded=sorted(set().union(*(st.bounded for st in states.values()))),
        audit=audit_labels(ex, tools, states, chosen, annotated, order[1:], outputs) if chosen is not None else {},
        alternatives_dropped=n_minimal - len(order),
    )


def _task_hash(task: Task, tools: list[str]) -> str:
    return hash_json({
        "id": task.id,
        "text": task.text,
        "required": list(task.required),
        "gold_actions": task.meta.get("gold_actions"),
        "communicate_info": task.meta.get("communicate_info"),
        "tools": tools,
    })


def cache_path(cache_dir: str | os.PathLike, exe: ExecutableDomain) -> Path:
    """The domain's cache file: one per code version and package versions.

    The code is :mod:`camdf.sufficiency` and every module of the package that defines the
    executable domain's class (its tools, its derivation rules, its converter:
    :func:`~camdf.common.fingerprint.defining_package`), so editing a rule rederives.
    """
    version = hash_json({
        "code": code_version("camdf.sufficiency", defining_package(exe)),
        "packages": package_versions(exe.packages),
        "domain": exe.name,
    })[:16]
    return Path(cache_dir) / CACHE_SUBDIR / f"{exe.name}-{version}.json"


def derive(domain: Domain, executable: ExecutableDomain, cache_dir: str | os.PathLike | None = None) -> Derivation:
    """Derive G_x for every task of a converted executable domain.

    Parameters
    ----------
    domain : Domain
        As converted (tasks carry ``meta.gold_actions`` and ``meta.communicate_info``);
        ``required`` is taken as the annotated set.
    executable : ExecutableDomain
        The domain whose real tools run the check (see
        :mod:`camdf.integrations.registry`; a fresh instance starts without loaded
        database or memoised calls).
    cache_dir : path, optional
        Results are cached under ``<cache_dir>/sufficiency/``; None disables the cache.

    Returns
    -------
    Derivation
    """
    t0 = time.perf_counter()
    exe = executable
    tools = list(domain.acquirable)
    if len(tools) > MAX_TOOLS:
        raise ValueError(f"domain `{domain.name}`: {len(tools)} acquirable tools, the exhaustive table allows {MAX_TOOLS}")
    path = cache_path(cache_dir, exe) if cache_dir is not None else None
    cached: dict[str, Any] = {}
    if path is not None and path.is_file():
        cached = json.loads(path.read_text(encoding="utf-8"))
    memo = CallMemo(exe)
    results, fresh, n_cached = [], {}, 0
    for task in tracked(domain.tasks, len(domain.tasks), f"{domain.name}: G_x by execution"):
        h = _task_hash(task, tools)
        if h in cached:
            results.append(TaskResult.from_json(cached[h]))
            n_cached += 1
        else:
            result = derive_task(exe, task, tools, memo)
            results.append(result)
            fresh[h] = result.to_json()
    if fresh:
        if not exe.db_unchanged():
            raise RuntimeError(f"domain `{exe.name}`: a read tool changed the shared database; results are void")
        if path is not None:
            write_atomic(path, json.dumps({**cached, **fresh}, sort_keys=True))
    return Derivation(exe.name, tools, results, time.perf_counter() - t0, n_cached, memo.n_calls)
