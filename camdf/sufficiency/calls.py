"""The terms an executable domain and the closure exchange: calls, argument slots, policy preconditions,
goals and the replay of a gold plan (plain data; :mod:`camdf.sufficiency.domain` runs them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

# A call as the closure makes it: tool name, sorted (argument, value) pairs with
# lists frozen to tuples, and the surfaces the arguments were built from.
CallKey = tuple[str, tuple[tuple[str, Any], ...]]


@dataclass(frozen=True)
class Call:
    """One tool call of a closure; equal calls have equal ``tool`` and ``args``."""

    tool: str
    args: tuple[tuple[str, Any], ...]
    inputs: tuple[str, ...] = field(default=(), compare=False, hash=False)

    @property
    def key(self) -> CallKey:
        return (self.tool, self.args)

    def kwargs(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.args}


def make_call(tool: str, kwargs: dict[str, Any], inputs: Iterable[str] = ()) -> Call:
    args = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))
    return Call(tool, args, tuple(inputs))


@dataclass(frozen=True)
class Argument:
    """How known values fill one slot of a read tool.

    ``kind`` names the value kind (see :attr:`ExecutableDomain.kinds`); ``build``
    turns a surface of that kind into keyword arguments (one slot may fill
    several arguments, as a full name fills ``first_name`` and ``last_name``).
    """

    kind: str
    build: Callable[[str], dict[str, Any]]


def arg(name: str, kind: str, to_value: Callable[[str], Any] = lambda s: s) -> Argument:
    """A slot filling the single argument ``name`` with ``to_value(surface)``."""
    return Argument(kind, lambda s: {name: to_value(s)})


# Policy preconditions: each is plain data, checked against a closure state by
# :mod:`camdf.sufficiency.closure`. ``why`` quotes or paraphrases the policy.


@dataclass(frozen=True)
class Authenticated:
    """Some call of ``tools`` built only from values the user gave returned ``user`` (any user if None)."""

    tools: tuple[str, ...]
    user: str | None
    why: str
    name: str = "authenticate"


@dataclass(frozen=True)
class LookedUp:
    """``tool`` was called with ``value`` (a key; ``shown`` as written) as one of its arguments."""

    tool: str
    value: str
    why: str
    name: str = "look_up"
    shown: str = ""


@dataclass(frozen=True)
class UserProvided:
    """``value`` (a key; ``shown`` as written) is given by the user in the task text, whatever the tools."""

    value: str
    why: str
    name: str = "user_provided"
    shown: str = ""


Rule = Authenticated | LookedUp | UserProvided


@dataclass(frozen=True)
class Goal:
    """A value the closure must contain: an identifier or a fact of a gold write, or a string to communicate.

    ``also_known`` holds keys made known by earlier gold writes (their return
    values), which the agent sees before it makes this call.
    """

    key: str
    what: str
    kind: str  # "identifier", "fact" or "communicate"
    also_known: frozenset[str] = frozenset()
    shown: str = ""  # the value as written


@dataclass
class Replay:
    """The gold plan replayed in a fresh environment.

    The replay goes on past a failing call, as a tau2 conversation does (the
    error is the tool's message); the plan is *executable* when every write
    succeeds. Reads that fail (a first guess at an email, an item id tried as a
    product id) are recorded in ``read_errors``.
    """

    executable: bool
    write_errors: list[str]
    read_errors: list[str]
    write_outputs: list[frozenset[str]]  # keys returned by the gold writes up to and including action i
    outputs: list[Any]  # raw return values, None where the call raised

    @property
    def error(self) -> str | None:
        return "; ".join(self.write_errors) or None
