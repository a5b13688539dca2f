"""The knowledge closure of a set of exposed tools, and the sufficiency check on it.

Closure of a tool set A for one task: start from the surfaces of the task text
(:meth:`ExecutableDomain.seed`); then, until nothing new appears, call every
tool of A on every combination of known values that fits its arguments (value
kinds, :attr:`ExecutableDomain.read_args`) and add every surface it returns
(:func:`camdf.sufficiency.values.flatten`). A call that raises adds nothing.

Sufficiency of A (:meth:`Explorer.missing` returns what is lacking):

(a) goals: every identifier-like argument value of every gold write (the
    domain's ``id_arguments``: order, item, product, user and payment-method
    ids in retail; reservation, user, flight-number and payment ids in airline)
    is a key of the closure (or was returned by an earlier gold write, which the
    agent sees); so is every fact of a gold write (the domain's
    ``fact_arguments``: an address's street, city and zip code in retail) and
    every string to communicate (``communicate_info``), or, if it is not a
    number, it appears as whole words in the task text or in a returned string
    ("camera" in "Action Camera"; "Suite 641" in the text);
(b) the domain's policy preconditions hold (:mod:`camdf.integrations.tau2.executable`), and
    for a decision task the gold plan's reads are made (``confirm_facts``,
    :func:`camdf.sufficiency.derive.task_info`).

Not checked, by rule: free text the agent composes (``reason``, ``summary``);
other details of a write (an address's state and country, which follow from its
zip code; names, dates of birth, cabin classes, counts and amounts), which the
user gives, the tool schema enumerates or the agent computes, and which do not
match exactly ("NY" for "New York").

The closure is monotone: the closure of A is contained in the closure of any
superset of A, since every call made for A can be made for the superset. The
sufficiency check is monotone too (its conditions only ask for values or calls
to be present), so a superset of a sufficient set is sufficient.

Calls are memoised per domain (:class:`CallMemo`): read tools do not change the
database, so a call returns the same thing for every task and every tool set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from camdf.sufficiency.calls import Authenticated, Call, CallKey, LookedUp, UserProvided
from camdf.sufficiency.domain import ExecutableDomain, TaskInfo
from camdf.sufficiency.values import flatten, is_number, jsonable, key, number_leaves, surface, word_pattern


@dataclass(frozen=True)
class Output:
    """What one call returned: its surfaces and their keys, its JSON number leaves, its text for
    phrase search, what it feeds into argument pools, and the (tool, argument key) pairs it looked up."""

    surfaces: frozenset[str]
    keys: frozenset[str]
    numbers: frozenset[str]
    text: str
    feeds: tuple[tuple[str, str], ...]
    lookups: frozenset[tuple[str, str]]
    raw: Any = None
    error: str | None = None


class CallMemo:
    """Results of read calls on one domain's pristine database, shared by every task."""

    def __init__(self, exe: ExecutableDomain):
        self.exe = exe
        self._out: dict[CallKey, Output] = {}
        self.n_calls = 0

    def get(self, call: Call) -> Output:
        out = self._out.get(call.key)
        if out is None:
            self.n_calls += 1
            lookups = frozenset((call.tool, k) for k in _arg_keys(call))
            try:
                raw = jsonable(self.exe.call(call))
            except Exception as err:  # noqa: BLE001  (a tool that raises makes nothing known)
                out = Output(frozenset(), frozenset(), frozenset(), "", (), lookups, None,
                             f"{type(err).__name__}: {err}")
            else:
                surfaces = frozenset(flatten(raw))
                keys = frozenset(s.casefold() for s in surfaces)
                numbers = set(number_leaves(raw))
                if call.tool == self.exe.calculator and isinstance(raw, str):
                    numbers.add(surface(raw))
                text = "\n".join(sorted(k for k in keys if not is_number(k)))
                feeds = tuple(dict.fromkeys(self.exe.feeds(call.tool, surfaces, raw)))
                out = Output(surfaces, keys, frozenset(numbers), text, feeds, lookups, raw)
            self._out[call.key] = out
        return out


@dataclass
class State:
    """One closure: the known surfaces and keys, the argument pools, the calls made and what they established."""

    surfaces: set[str]
    keys: set[str]
    pools: dict[str, set[str]] = field(default_factory=dict)
    calls: dict[CallKey, Call] = field(default_factory=dict)
    covered: set[int] = field(default_factory=set)  # communicate goals found as phrases
    lookups: set[tuple[str, str]] = field(default_factory=set)  # (tool, argument key) of calls made
    authenticated: set[str] = field(default_factory=set)  # users returned by user-built auth calls; "*": any
    bounded: set[str] = field(default_factory=set)  # tools whose candidates hit the bound
    tried: set[tuple] = field(default_factory=set)  # (tool, filling) already tried

    def copy(self) -> "State":
        return State(set(self.surfaces), set(self.keys), {k: set(v) for k, v in self.pools.items()},
                     dict(self.calls), set(self.covered), set(self.lookups), set(self.authenticated),
                     set(self.bounded), set(self.tried))

    def merge(self, other: "State") -> None:
        self.surfaces |= other.surfaces
        self.keys |= other.keys
        for k, v in other.pools.items():
            self.pools.setdefault(k, set()).update(v)
        self.calls.update(other.calls)
        self.covered |= other.covered
        self.lookups |= other.lookups
        self.authenticated |= other.authenticated
        self.bounded |= other.bounded
        self.tried |= other.tried


def _arg_keys(call: Call) -> set[str]:
    out = set()
    for _, v in call.args:
        for item in v if isinstance(v, tuple) else (v,):
            out.add(key(item))
    return out


class Explorer:
    """Closures and sufficiency checks of one task over any tool sets.

    Parameters
    ----------
    exe : ExecutableDomain
    info : TaskInfo
        The task's seed, goals, preconditions and arithmetic.
    memo : CallMemo
        The domain's shared call results.
    """

    def __init__(self, exe: ExecutableDomain, info: TaskInfo, memo: CallMemo):
        self.exe = exe
        self.info = info
        self.memo = memo
        self._auth_tools = {t for r in info.rules if isinstance(r, Authenticated) for t in r.tools}
        self._phrases = [
            (i, word_pattern(t.key)) for i, t in enumerate(info.goals)
            if t.kind in ("communicate", "fact") and not is_number(t.key)
        ]
        self._cover: dict[CallKey, frozenset[int]] = {}

    def seed_state(self) -> State:
        st = State(set(self.info.seed), {s.casefold() for s in self.info.seed})
        for kind, s in self.exe.seed_feeds(self.info.seed):
            st.pools.setdefault(kind, set()).add(s)
        text = self.info.text_key
        st.covered |= {i for i, p in self._phrases if p.search(text)}
        return st

    def _add(self, st: State, call: Call) -> bool:
        st.calls[call.key] = call
        out = self.memo.get(call)
        st.lookups |= out.lookups
        if out.error is not None:
            return False
        if call.tool in self._auth_tools and all(key(i) in self.info.user_keys for i in call.inputs):
            st.authenticated |= out.keys | {"*"}
        if self._phrases:
            cover = self._cover.get(call.key)
            if cover is None:
                cover = self._cover[call.key] = frozenset(i for i, p in self._phrases if p.search(out.text))
            st.covered |= cover
        st.surfaces |= out.surfaces
        st.keys |= out.keys
        grew = False
        for kind, s in out.feeds:
            pool = st.pools.get(kind)
            if pool is None:
                pool = st.pools[kind] = set()
            if s not in pool:
                pool.add(s)
                grew = True
        return grew

    def closure(self, tools: Iterable[str], start: State | None = None) -> State:
        """The closure of ``tools``, continued from ``start`` (a state within it) if given."""
        st = start.copy() if start is not None else self.seed_state()
        callable_tools = sorted(t for t in set(tools) if t in self.exe.read_args)
        cap = self.exe.max_calls_per_tool
        while True:
            pools = {k: sorted(v) for k, v in st.pools.items()}
            n_keys = len(st.keys)
            grew = False
            for tool in callable_tools:
                known = st.keys | self.info.write_known if tool == self.exe.calculator else st.keys
                for n, combo in enumerate(self.exe.combos(tool, pools, self.info, known)):
                    if n >= cap:
                        st.bounded.add(tool)
                        break
                    ck = (tool, combo)
                    if ck in st.tried:
                        continue
                    st.tried.add(ck)
                    call = self.exe.build(tool, combo)
                    if call is not None and call.key not in st.calls:
                        grew |= self._add(st, call)
            # New keys matter to the calculator's operands even when no pool grew.
            if not grew and (self.exe.calculator not in callable_tools or len(st.keys) == n_keys):
                return st

    # --- the check ------------------------------------------------------------
    def missing(self, st: State) -> list[dict[str, str]]:
        """What keeps ``st`` from being sufficient (empty list: sufficient).

        Each entry has ``need`` (``identifier``, ``communicate`` or a
        precondition's name), ``value`` (as written), ``key`` and ``what``
        (where the value is used, or the policy sentence); a precondition's
        entry also names the tools that would satisfy it (``sources``).
        """
        out: list[dict[str, str]] = []
        for i, t in enumerate(self.info.goals):
            if t.key in st.keys or t.key in t.also_known or i in st.covered:
                continue
            out.append({"need": t.kind, "value": t.shown or t.key, "key": t.key, "what": t.what})
        for r in self.info.rules:
            if isinstance(r, Authenticated):
                ok = (r.user or "*") in st.authenticated
                value, shown, tools = r.user or "*", r.user or "(the user)", list(r.tools)
            elif isinstance(r, LookedUp):
                ok = (r.tool, r.value) in st.lookups
                value, shown, tools = r.value, r.shown or r.value, [r.tool]
            elif isinstance(r, UserProvided):
                ok = r.value in self.info.user_keys
                value, shown, tools = r.value, r.shown or r.value, []
            else:  # pragma: no cover - the Rule union is closed
                raise TypeError(f"unknown precondition {r!r}")
            if not ok:
                out.append({"need": r.name, "value": shown, "key": value, "what": r.why, "sources": tools})
        return out

    def sources(self, st: State, value_key: str) -> list[str]:
        """Tools whose calls in ``st`` returned ``value_key`` (or the phrase), sorted."""
        pattern = None if is_number(value_key) else word_pattern(value_key)
        tools = set()
        for call in st.calls.values():
            out = self.memo.get(call)
            if value_key in out.keys or (pattern is not None and pattern.search(out.text)):
                tools.add(call.tool)
        return sorted(tools)

    def numbers_of(self, st: State, entity_keys: set[str]) -> list[list[str]]:
        """Number leaves of the outputs of calls in ``st`` made on one of ``entity_keys``, one group per call."""
        groups = []
        for ck in sorted(st.calls, key=repr):
            call = st.calls[ck]
            if _arg_keys(call) & entity_keys:
                nums = self.memo.get(call).numbers
                if nums:
                    groups.append(sorted(nums))
        return groups


def describe(info: TaskInfo) -> dict[str, Any]:
    """Counts of what a task is checked on (for the report)."""
    return {
        "identifiers": sum(t.kind == "identifier" for t in info.goals),
        "facts": sum(t.kind == "fact" for t in info.goals),
        "communicate": sum(t.kind == "communicate" for t in info.goals),
        "rules": [r.name for r in info.rules],
    }
