"""The runtime's one front door: requests parsed and dials resolved the same way by the full and the lean policy.

A :class:`FrontDoor` holds what a shipped rule needs to read requests (its training tools,
their default costs, its dials) and nothing that needs scikit-learn: :class:`camdf.runtime.StopPolicy`
and the lean loader (:mod:`camdf.runtime.lean`) both decide through it, so they accept and
refuse the same requests with the same messages, and a single short request reaches the
rule's one-task path (``decide_task``) as the same :class:`~camdf.policies.plain.OneTask`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

from camdf.core.features import task_normalised_scores
from camdf.core.portable import normalise_scores
from camdf.policies.plain import OneTask
from camdf.policies.registry import dial_specs
from camdf.runtime.fit_range import range_warnings, report
from camdf.runtime.requests import SHORT_RANKING, Request, Selection, parse_all, parse_request, request_lam
from camdf.costs.units import TOKENS


@dataclass
class FrontDoor:
    """Request parsing and dial resolution for one shipped rule.

    Parameters
    ----------
    method : str
        The rule's method name (named in refusals).
    dials : tuple of str
        The rule's run-time dials.
    vocab : list of str
        The training tools (the tool-identity feature's categories).
    costs : dict
        Default cost of each tool by name (else 1).
    defers : bool
        The rule leaves what it does not expose to the harness's search (its selections name the deferred tools).
    prefix : bool
        The rule exposes a prefix of the ranking: its selections report the depth (the number of exposed positions).
    fit_range : dict or None
        What the policy was fitted on (:func:`camdf.runtime.fit_range.fit_range`): a request outside it gets
        warnings on its selection. None: only an empty selection is flagged.
    top_n : int or None
        The policy was fitted on each task's top ``top_n`` ranked tools: a longer request is decided over its
        top ``top_n`` (by score; ties keep the caller's order), so it is ranked as the fitted tasks were.
    cost_unit : str or None
        ``"tokens"`` (:data:`camdf.costs.units.TOKENS`): a request without costs is priced by each tool's
        schema tokens; otherwise by ``costs``.
    portable : bool
        The rule was fitted on portable instances (:mod:`camdf.core.portable`): each request's scores are
        min-max normalised (after the ``top_n`` cut) before it decides, as its training tasks' were.
    """

    method: str
    dials: tuple[str, ...]
    vocab: list[str]
    costs: dict[str, float] = field(default_factory=dict)
    defers: bool = False
    prefix: bool = True
    fit_range: dict | None = None
    top_n: int | None = None
    cost_unit: str | None = None
    portable: bool = False

    @cached_property
    def index(self) -> dict[str, int]:
        """Position of each training tool name in the vocabulary (-1 for the others)."""
        return {name: i for i, name in enumerate(self.vocab)}

    def check_dial(self, name: str, value: Any, where: str) -> Any:
        """``value`` checked as the dial ``name`` of this rule (None: absent); ValueError naming ``where``."""
        if value is None:
            return None
        specs = dial_specs()
        if name not in specs:
            raise ValueError(f"{where}: unknown dial (expected some of {sorted(specs)})")
        if name not in self.dials:
            from camdf.policies.registry import CARDS

            owners = " / ".join(c.name for c in CARDS.values() if c.shippable and specs[name] in c.dials) or "no"
            raise ValueError(f"{where}: only the {owners} policy has {specs[name].what}; this one is {self.method}")
        return specs[name].check(value, where)

    def call_dials(self, lam: Any, dials: dict[str, Any]) -> tuple[float | None, dict[str, Any]]:
        """The dials of a call (``select_batch(requests, lam=..., **dials)``), checked; None values dropped.
        ``task_value`` among them sets lambda (1 / task value) and is refused beside ``lam``."""
        if "task_value" in dials:
            dials = dict(dials)
            lam = request_lam(lam, dials.pop("task_value"))
        else:
            lam = request_lam(lam, None)
        return lam, {k: v for k, v in ((k, self.check_dial(k, v, k)) for k, v in dials.items()) if v is not None}

    def _parse(self, request: Any, where: str, numbers: bool = True) -> Request:
        return parse_request(request, where, self.index, self.costs, frozenset(dial_specs()), self.check_dial,
                             numbers, self.cost_unit == TOKENS)

    def parse(self, requests: Any) -> list[Request]:
        """The requests validated (:func:`camdf.runtime.requests.parse_all`), each cut to its top ``top_n``; a
        portable rule's scores then normalised over what is left, as its training lists' were."""
        parsed = parse_all(requests, self._parse)
        if self.top_n is not None:
            parsed = [self._top(r) if len(r.names) > self.top_n else r for r in parsed]
        if self.portable:
            for r in parsed:
                r.scores = normalise_scores(r.scores)
        return parsed

    def _top(self, r: Request) -> Request:
        """``r`` with only its ``top_n`` best-scored tools, in the caller's order (the rest are never exposed)."""
        scores = r.scores
        keep = sorted(sorted(range(len(scores)), key=lambda j: -scores[j])[: self.top_n])
        pick = lambda values: [values[j] for j in keep]  # noqa: E731
        return Request(pick(r.names), pick(r.ids), pick(r.scores), pick(r.costs), pick(r.tools), r.query, r.lam,
                       r.dials)

    @staticmethod
    def settings(r: Request, lam: float, dials: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """A request's lambda and dials: its own win over the call's."""
        return (lam if r.lam is None else r.lam), {**dials, **r.dials}

    @staticmethod
    def is_short(parsed: list[Request]) -> bool:
        """Whether the requests are one ranking short enough for the plain-Python one-task path."""
        return len(parsed) == 1 and len(parsed[0].names) <= SHORT_RANKING

    @staticmethod
    def one_task(r: Request, lam: float, kind: str, membership: Callable[..., list[float]] | None = None
                 ) -> tuple[list[int], OneTask]:
        """The request ranked by score (ties keep the caller's order) as a :class:`OneTask`, and that order."""
        scores = r.scores
        order = sorted(range(len(scores)), key=lambda j: -scores[j])
        s = [scores[j] for j in order]
        task = OneTask(s, [r.costs[j] for j in order], [r.ids[j] for j in order], task_normalised_scores(s), lam,
                       kind, float(len(r.query)), membership)
        return order, task

    def selection(self, r: Request, order: list[int], positions: list[int], lam: float) -> Selection:
        """The tools a rule exposes at ``positions`` (ranked positions, ascending) of the ranking ``order`` of a
        request decided at ``lam``: every rule decides a mask; a prefix rule's depth is the number of its
        positions. Its ``warnings`` (:func:`~camdf.runtime.fit_range.range_warnings`) are logged as one line."""
        ranked = [r.names[j] for j in order]
        warnings = range_warnings(self.fit_range, r.costs, r.scores, lam, len(positions))
        report(warnings)
        if self.prefix:
            return Selection([r.tools[j] for j in order[:len(positions)]], len(positions), ranked, defers=self.defers,
                             warnings=warnings)
        return Selection([r.tools[order[k]] for k in positions], None, ranked, positions, self.defers, warnings)
