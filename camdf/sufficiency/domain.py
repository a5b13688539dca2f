"""What an executable domain provides to the sufficiency check, and the registry of such domains.

The terms it exchanges with the closure (calls, arguments, preconditions, goals) are
:mod:`camdf.sufficiency.calls`. A domain is *executable* when its real tools and database are at hand, so that a
knowledge closure can call them. Adding one means subclassing
:class:`ExecutableDomain` (how values fit read-tool arguments, which write
arguments are identifier-like, which policy preconditions apply) and calling
:func:`register`; nothing else in :mod:`camdf.sufficiency` names a domain.
"""

from __future__ import annotations

import copy
import itertools
import pickle
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from camdf.sufficiency.calls import Argument, Call, Replay, Rule, Goal, make_call
from camdf.sufficiency.values import flatten, jsonable, key, surface, text_surfaces


class CopyOnRead(dict):
    """A mapping over a pristine one that deep-copies a record the first time it is read by key.

    Write tools reach the records they change by key (``db.orders[order_id]``),
    so every change lands on a copy; a scan (``values()``, ``items()``) reads
    the pristine records, or the copies where there are some.
    """

    def __init__(self, base: dict):
        super().__init__(base)
        self._copied: set = set()

    def __getitem__(self, k):
        value = super().__getitem__(k)
        if k not in self._copied:
            value = copy.deepcopy(value)
            super().__setitem__(k, value)
            self._copied.add(k)
        return value

    def get(self, k, default=None):
        return self[k] if k in self else default

    def __setitem__(self, k, value):
        super().__setitem__(k, value)
        self._copied.add(k)

    def pop(self, k, *default):
        self._copied.discard(k)
        return super().pop(k, *default)


class ExecutableDomain:
    """Base class: a domain whose tools the sufficiency check can run.

    Subclasses set the class attributes and implement :meth:`convert`,
    :meth:`pristine_db`, :meth:`toolkit`, :meth:`_tool_kinds` and :meth:`rules`;
    they may extend :meth:`seed`, :meth:`seed_feeds`, :meth:`feeds` and
    :meth:`combos` (which values fill which slots).

    Attributes
    ----------
    name : str
        Registry name (the converted domain's name).
    packages : tuple of str
        Distribution packages whose versions enter the cache key.
    kinds : dict of str to regex
        Value kinds, each matched against a surface (case kept).
    read_args : dict of str to tuple of Argument
        For each read or generic tool the closure may call, its slots. A tool
        absent here is never called (``transfer_to_human_agents`` acquires nothing).
    id_arguments : frozenset of str
        Argument names (at any depth of a write action's arguments) whose values
        are identifier-like and must be in the closure.
    fact_arguments : frozenset of str
        Argument names (at any depth of a write action's arguments) whose values
        are facts the agent must know exactly, from the task text or a read (an
        address's street, city and zip code): a value the text does not state is
        a goal, so the reads that reveal it are required (``fact`` goals).
        Details the agent completes itself (the state of a zip code) stay out.
    free_text_arguments : frozenset of str
        Argument names whose values are composed by the agent (reasons,
        summaries) and are exempt.
    record_kinds : tuple of str
        Value kinds that name records (a user, an order); arithmetic operands
        are searched among the numbers of records linked to the gold plan's.
    calculator : str or None
        The tool that evaluates an ``expression`` argument (``calculate``), if any.
    max_calls_per_tool : int
        Bound on the calls of one tool in one closure (candidates are taken in
        sorted order; a closure that hits it is flagged ``bounded``).
    """

    name: str = ""
    packages: tuple[str, ...] = ()
    kinds: dict[str, re.Pattern] = {}
    read_args: dict[str, tuple[Argument, ...]] = {}
    id_arguments: frozenset[str] = frozenset()
    fact_arguments: frozenset[str] = frozenset()
    free_text_arguments: frozenset[str] = frozenset({"reason", "summary"})
    calculator: str | None = "calculate"
    record_kinds: tuple[str, ...] = ()
    max_calls_per_tool: int = 50_000

    def __init__(self) -> None:
        self._db_bytes: bytes | None = None
        self._tools = None
        self._kinds_of: dict[str, tuple[str, ...]] = {}
        self._built: dict[tuple, Call | None] = {}
        self._kinds: dict[str, str] | None = None

    # --- environment -----------------------------------------------------------
    def convert(self):
        """The domain converted to the task format (a :class:`camdf.data.model.Domain`)."""
        raise NotImplementedError

    def pristine_db(self) -> Any:
        """A freshly loaded database (the package's own file)."""
        raise NotImplementedError

    def toolkit(self, db: Any) -> Any:
        """The domain's real tool kit over ``db``."""
        raise NotImplementedError

    def read_toolkit(self):
        """One tool kit over a pristine database, shared by every closure.

        Read tools do not change the database, so every call on it equals the
        same call in a fresh copy; :meth:`db_unchanged` checks this afterwards.
        """
        if self._tools is None:
            db = self.pristine_db()
            self._db_bytes = pickle.dumps(db, protocol=pickle.HIGHEST_PROTOCOL)
            self._tools = self.toolkit(db)
        return self._tools

    def fresh_toolkit(self):
        """A tool kit over a fresh copy of the pristine database (for replaying writes).

        The copy is made record by record as the tools look records up
        (:class:`CopyOnRead`), which is what makes replaying every task cheap;
        :meth:`db_unchanged` checks afterwards that the pristine records were
        left alone.
        """
        db = self.read_toolkit().db
        fresh = db.model_copy()
        for name in type(db).model_fields:
            value = getattr(db, name)
            if isinstance(value, dict):
                object.__setattr__(fresh, name, CopyOnRead(value))
        return self.toolkit(fresh)

    def db_unchanged(self) -> bool:
        """Whether the shared read database still equals the pristine one."""
        if self._tools is None:
            return True
        return pickle.dumps(self._tools.db, protocol=pickle.HIGHEST_PROTOCOL) == self._db_bytes

    def call(self, call: Call) -> Any:
        """Run a read call on the shared pristine tool kit."""
        return self.read_toolkit().use_tool(call.tool, **call.kwargs())

    # --- values -----------------------------------------------------------------
    def seed(self, text: str) -> set[str]:
        """Surfaces the task text makes known (its tokens; subclasses add names, dates, ...)."""
        return text_surfaces(text)

    def kinds_of(self, s: str) -> tuple[str, ...]:
        """The value kinds a surface fits (memoised)."""
        out = self._kinds_of.get(s)
        if out is None:
            out = tuple(k for k, pattern in self.kinds.items() if pattern.match(s))
            self._kinds_of[s] = out
        return out

    def seed_feeds(self, seed: Iterable[str]) -> Iterator[tuple[str, str]]:
        """(kind, surface) pairs the task text adds to the argument pools."""
        for s in seed:
            for kind in self.kinds_of(s):
                yield kind, s

    def feeds(self, tool: str, surfaces: Iterable[str], raw: Any) -> Iterator[tuple[str, str]]:
        """(kind, surface) pairs a call of ``tool`` adds to the argument pools.

        By default every returned surface fills the pools of its kinds; a domain
        narrows this where feeding a tool's output back into calls would make
        the closure explode without adding what a task needs. It depends on the
        call only (not on the task), so it is computed once per call.
        """
        for s in surfaces:
            for kind in self.kinds_of(s):
                yield kind, s

    def combos(self, tool: str, pools: dict[str, list[str]], info: "TaskInfo", keys: set[str]) -> Iterator[tuple]:
        """Every filling of ``tool``'s slots from the (sorted) pools of their kinds, as a tuple of surfaces.

        The calculator's fillings are the task's expressions whose operands are
        all in ``keys`` (:func:`calculate_combos`).
        """
        if tool == self.calculator:
            return calculate_combos(info.expressions, keys)
        slots = self.read_args[tool]
        return itertools.product(*(pools.get(a.kind, ()) for a in slots))

    def build(self, tool: str, combo: tuple) -> Call | None:
        """The call a filling stands for (memoised), or None when :meth:`accept` drops it."""
        ck = (tool, combo)
        if ck in self._built:
            return self._built[ck]
        if tool == self.calculator:
            call = make_call(tool, {"expression": combo[0]}, combo[1:])
        else:
            kwargs: dict[str, Any] = {}
            for a, s in zip(self.read_args[tool], combo):
                kwargs.update(a.build(s))
            call = make_call(tool, kwargs, combo) if self.accept(tool, kwargs) else None
        self._built[ck] = call
        return call

    def accept(self, tool: str, kwargs: dict[str, Any]) -> bool:
        """Drop candidate calls that cannot be meant (e.g. a flight from an airport to itself)."""
        return True

    def tool_kinds(self) -> dict[str, str]:
        """Tool name -> ``read`` / ``write`` / ``generic`` (memoised :meth:`_tool_kinds`)."""
        if self._kinds is None:
            self._kinds = self._tool_kinds()
        return self._kinds

    def _tool_kinds(self) -> dict[str, str]:
        raise NotImplementedError

    # --- goals and policy ---------------------------------------------------
    def identifier_values(self, arguments: dict[str, Any]) -> Iterator[tuple[str, str]]:
        """(argument path, value) for every identifier-like value of a write action's arguments."""
        yield from _argument_values(arguments, self.id_arguments - self.free_text_arguments)

    def fact_values(self, arguments: dict[str, Any]) -> Iterator[tuple[str, str]]:
        """(argument path, value) for every non-empty fact value of a write action's arguments
        (:attr:`fact_arguments`)."""
        for path, value in _argument_values(arguments, self.fact_arguments - self.free_text_arguments):
            if surface(value):
                yield path, value

    def replay(self, actions: list[dict[str, Any]]) -> Replay:
        """Run the gold actions in order in a fresh environment (the shared one if they only read).

        Actions that are not reads (writes, and generic tools such as a transfer)
        count as writes: the plan is executable when none of them raises.
        """
        kinds = self.tool_kinds()
        writes = any(kinds.get(a["name"]) != "read" for a in actions)
        tools = self.fresh_toolkit() if writes else self.read_toolkit()
        seen: set[str] = set()
        known: list[frozenset[str]] = []
        outputs: list[Any] = []
        errors: dict[str, list[str]] = {"write": [], "read": []}
        for i, action in enumerate(actions):
            kind = "read" if kinds.get(action["name"]) == "read" else "write"
            try:
                out = tools.use_tool(action["name"], **(action.get("arguments") or {}))
            except Exception as err:  # noqa: BLE001  (a failing gold call is reported, not fatal)
                errors[kind].append(f"action {i} `{action['name']}` raised {type(err).__name__}: {err}")
                out = None
            outputs.append(out)
            # What a write returns is seen by the agent; a generic tool's result (calculate) is not
            # given for free: the closure has to compute it with the tool.
            if kinds.get(action["name"]) == "write" and out is not None:
                seen |= {key(s) for s in flatten(jsonable(out))}
            known.append(frozenset(seen))
        return Replay(not errors["write"], errors["write"], errors["read"], known, outputs)

    def rules(self, task_meta: dict[str, Any], replay: Replay) -> list[Rule]:
        """The policy preconditions that apply to a task (its meta holds the gold actions)."""
        raise NotImplementedError

    def gold_expressions(self, task_meta: dict[str, Any]) -> list[str]:
        """Expressions of the gold plan's calculator calls (the task's own arithmetic)."""
        return [
            str(a["arguments"]["expression"])
            for a in task_meta.get("gold_actions", [])
            if a["name"] == self.calculator and "expression" in (a.get("arguments") or {})
        ]


def _argument_values(arguments: dict[str, Any], names: frozenset[str]) -> Iterator[tuple[str, str]]:
    """(path, value as text) of every leaf of ``arguments`` under an argument named in ``names``."""

    def walk(node: Any, path: str, name: str) -> Iterator[tuple[str, str]]:
        if isinstance(node, dict):
            for k, v in node.items():
                yield from walk(v, f"{path}.{k}" if path else k, k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, f"{path}[{i}]", name)
        elif name in names and node is not None:
            yield path, str(node)

    yield from walk(arguments, "", "")


@dataclass
class TaskInfo:
    """What the closure of one task needs: its seed, goals, rules and gold arithmetic."""

    task_id: str
    text: str
    seed: frozenset[str]  # surfaces the text makes known
    user_keys: frozenset[str]  # keys the user provides (the seed's keys)
    goals: list[Goal]
    rules: list[Rule]
    expressions: list[str]
    replay: Replay
    write_known: frozenset[str] = frozenset()  # keys the gold writes return or pay (amounts)

    @property
    def text_key(self) -> str:
        return self.text.casefold()


def calculate_combos(expressions: Iterable[str], keys: set[str]) -> Iterator[tuple[str, ...]]:
    """(expression, operand, ...) for each of the task's expressions whose operands are all known.

    The closure cannot enumerate every expression over known numbers (and a sum
    of enough prices hits any target), so the calculator is called on the
    task's own arithmetic (:attr:`TaskInfo.expressions`: the gold plan's
    ``calculate`` expressions and those recovered by
    :mod:`camdf.sufficiency.arithmetic`), once every operand other than a small
    count (an integer up to 10, such as a number of passengers) is known.
    """
    for expr in expressions:
        operands = [surface(x) for x in re.findall(r"\d+(?:\.\d+)?", expr)]
        needed = tuple(o for o in operands if not (o.isdigit() and int(o) <= 10))
        if all(o in keys for o in needed):
            yield (expr, *needed)
