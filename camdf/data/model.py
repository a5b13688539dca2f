"""The domain model: tools, tasks and a domain, as described in ``docs/task-format.md``.

Every built-in converter (tau2, BFCL) produces a :class:`Domain`, and a user's own
folder is read into the same shape, so everything downstream sees one type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TOOL_KINDS = ("read", "write", "generic")
DEFAULT_ACQUIRABLE_KINDS = ("read", "generic")
#: Where a cell reads each task's required set (its ``label_source``; :func:`camdf.pipeline.assembly.required_sets`).
CELL_LABEL_SOURCES = ("data", "annotated", "partial")


@dataclass(frozen=True)
class Tool:
    """One tool of a catalog.

    Attributes
    ----------
    name : str
        Unique within the catalog.
    description : str
        Text a ranker may read.
    parameters : dict or None
        JSON schema of the arguments, as the source package gives it.
    kind : {"read", "write", "generic"}
    cost : float or None
        Base cost (> 0, finite); None lets the cost model fill it.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    kind: str = "generic"
    cost: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.parameters is not None:
            out["parameters"] = self.parameters
        out["kind"] = self.kind
        if self.cost is not None:
            out["cost"] = self.cost
        return out


@dataclass(frozen=True)
class Task:
    """One task: the query text and its minimal required set G_x.

    ``candidates`` is None when the task may be offered every acquirable tool;
    ``alternatives`` lists other sufficient sets besides ``required``; tasks sharing
    a ``group`` (one template: the same user, task family or generating path) are
    never split across folds under ``folds.protocol: group``, and a task with no
    group is a group of its own.
    """

    id: str
    text: str
    required: tuple[str, ...]
    candidates: tuple[str, ...] | None = None
    alternatives: tuple[tuple[str, ...], ...] = ()
    split: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    group: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "text": self.text, "required": list(self.required)}
        if self.candidates is not None:
            out["candidates"] = list(self.candidates)
        if self.alternatives:
            out["alternatives"] = [list(a) for a in self.alternatives]
        if self.split is not None:
            out["split"] = self.split
        if self.group is not None:
            out["group"] = self.group
        if self.meta:
            out["meta"] = self.meta
        return out


@dataclass
class Domain:
    """A catalog of tools and a list of tasks, with the domain's acquisition settings.

    Attributes
    ----------
    name : str
    source : str
        Where the tools came from (package and version, or a URL).
    tools : list of Tool
    tasks : list of Task
    acquirable_kinds : tuple of str
        Tool kinds that are ranked, priced and exposed or withheld.
    never_acquirable : tuple of str
        Tool names excluded from acquisition whatever their kind.
    dropped_required : dict of str to int
        Required names that were not acquirable and were dropped, with counts.
    """

    name: str
    source: str
    tools: list[Tool]
    tasks: list[Task]
    acquirable_kinds: tuple[str, ...] = DEFAULT_ACQUIRABLE_KINDS
    never_acquirable: tuple[str, ...] = ()
    dropped_required: dict[str, int] = field(default_factory=dict)

    @property
    def tool_by_name(self) -> dict[str, Tool]:
        return {t.name: t for t in self.tools}

    def is_acquirable(self, tool: Tool) -> bool:
        return tool.kind in self.acquirable_kinds and tool.name not in self.never_acquirable

    # The acquirable names, cached with what they were computed from: the tools list itself
    # (held, so its identity cannot be reused), its length and the two settings. Tools are
    # frozen, so the set changes only with a new list, an append or removal, or new settings.
    _acquirable_cache: tuple[list[Tool], int, tuple, tuple, list[str], dict[str, int]] | None = field(
        default=None, init=False, repr=False, compare=False)

    def _acquirable(self) -> tuple[list[str], dict[str, int]]:
        """The acquirable names in catalog order and each one's position among them."""
        c = self._acquirable_cache
        kinds, never = tuple(self.acquirable_kinds), tuple(self.never_acquirable)
        if c is None or c[0] is not self.tools or c[1] != len(self.tools) or c[2] != kinds or c[3] != never:
            names = [t.name for t in self.tools if self.is_acquirable(t)]
            c = self._acquirable_cache = (self.tools, len(self.tools), kinds, never, names,
                                          {n: i for i, n in enumerate(names)})
        return c[4], c[5]

    @property
    def acquirable(self) -> list[str]:
        """Names of the acquirable tools, in catalog order (a new list; computed once per catalog)."""
        return list(self._acquirable()[0])

    def candidates_of(self, task: Task) -> list[str]:
        """The acquirable tools task may be offered, in catalog order.

        O(|acquirable|) for a task without ``candidates`` (a copy of the cached list) and
        O(|candidates| log |candidates|) for one with them, never a rebuild of the acquirable list.
        """
        names, position = self._acquirable()
        if task.candidates is None:
            return list(names)
        return sorted(position.keys() & task.candidates, key=position.__getitem__)

    def n_candidates(self, task: Task) -> int:
        """``len(self.candidates_of(task))`` without building the list."""
        names, position = self._acquirable()
        if task.candidates is None:
            return len(names)
        return len(position.keys() & task.candidates)

    def catalog_json(self) -> dict[str, Any]:
        return {"domain": self.name, "source": self.source, "tools": [t.to_json() for t in self.tools]}
