"""The method registry: one card per method (its facts and its factory), the only place rules are built.

A card states what the rest of the code needs to know about a method: its family, its
place in tables and its colour and marker in figures, whether the train stage may ship it,
its run-time dials, its lambda-conditioned form, and the factory that builds a fresh rule.
Nothing outside this module tests a rule's class or compares a method's name: callers ask
for a card (:func:`card`) or for a rule's capabilities. The module imports no scikit-learn,
so the lean run-time loader reads cards too; the factories import their rule on first use.

A new rule is one module (its class), one card (:func:`register`, or a line in
:data:`CARDS`) and one config line (``conf/method/*.yaml`` or ``policy.candidates``).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterator, Mapping

from camdf.common.dials import Dial
from camdf.core.conformal import ALPHA
from camdf.core.recovery import SEARCH_COST, SEARCH_K

#: The families a card may name: the CAM-DF rules, their ablations, baselines, oracles, and peers' methods.
FAMILIES = ("camdf", "ablation", "baseline", "oracle", "peer")


@dataclass(frozen=True)
class Card:
    """Everything about one method outside its rule's code.

    Parameters
    ----------
    name : str
        The method's name in configs, tables and the tracking store.
    factory : callable
        ``factory(random_state) -> StoppingRule``: a fresh, unfitted rule.
    family : {"camdf", "ablation", "baseline", "oracle", "peer"}
    ours : bool
        One of this project's own rules beyond the paper's (the paper's claims do not count it as a rival).
    order : int
        Display order in tables (ascending; ties keep registration order).
    colour, marker : str or None
        Matplotlib colour and marker in figures (None: a spare one chosen by name).
    shippable : bool
        The train stage may fit and ship it as the run-time stopper.
    dials : tuple of Dial
        The rule's run-time dials: its class's ``dials`` (name, range, default; a test holds them equal), here
        so that the lean loader and the registry's queries need not import the rule.
    across_lambdas : str or None
        The card of this rule's lambda-conditioned form (``policy.lam_grid``), if it has one.
    anchor : bool
        Shown beside the candidates when the train stage compares them out of fold.
    portable : callable or None
        ``portable()`` returns the class whose ``from_numbers`` rebuilds the fitted rule from its
        ``to_numbers()`` without scikit-learn (the lean loader of ``camdf select``).
    picks_prefix : bool
        The rule exposes a prefix of the ranking (a depth); False for a set rule, which exposes
        any subset of it (the rule class's ``picks_prefix``; tables and figures tell the kinds apart by it).
    defers : bool
        What the rule does not preload stays reachable through the harness's search tool (the rule's
        ``defers``; a selection then names the deferred tools, :mod:`camdf.core.recovery`).
    """

    name: str
    factory: Callable[[int], Any] = field(repr=False)
    family: str = "baseline"
    ours: bool = False
    order: int = 1000
    colour: str | None = None
    marker: str | None = None
    shippable: bool = False
    dials: tuple[Dial, ...] = ()
    across_lambdas: str | None = None
    anchor: bool = False
    portable: Callable[[], type] | None = field(default=None, repr=False)
    picks_prefix: bool = True
    defers: bool = False

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"card {self.name!r}: family must be one of {', '.join(FAMILIES)}, got {self.family!r}")


# -- factories: each imports its rule on first use (scikit-learn and LightGBM stay unloaded until then) --------

def _camdf(rs: int, **params) -> Any:
    from camdf.policies import camdf

    for key in ("features",):  # feature groups are named in the card, resolved here
        if isinstance(params.get(key), str):
            params[key] = getattr(camdf, params[key])
    return camdf.CamDF(random_state=rs, **params)


def _camdf_lambda(rs: int) -> Any:
    from camdf.core.features import FEATURES
    from camdf.policies.camdf import DEFAULT_GRID, CamDF

    # One grid candidate: the evaluator's lambda-conditioned model since it was added (the cell's results).
    return CamDF(features=list(FEATURES), grid=DEFAULT_GRID[:1], random_state=rs)


def _camdf_transfer(rs: int) -> Any:
    from camdf.core.features import FEATURES
    from camdf.policies.camdf import TRANSFER_GRID, CamDF

    return CamDF(features=list(FEATURES), grid=TRANSFER_GRID, random_state=rs)


def _argmax(rs: int, grid: slice | None = None, **params) -> Any:
    from camdf.policies.camdf_argmax import ARGMAX_GRID, CamDFArgmax

    if grid is not None:
        params["grid"] = ARGMAX_GRID[grid]
    return CamDFArgmax(random_state=rs, **params)


def _lite(rs: int) -> Any:
    from camdf.policies.camdf_lite import CamDFLite

    return CamDFLite()


def _risk(rs: int, **params) -> Any:
    from camdf.policies.risk import CamDFRisk

    return CamDFRisk(random_state=rs, **params)


def _baseline(rs: int, name: str) -> Any:
    from camdf.policies import baselines

    return getattr(baselines, name)()


def _portable_risk() -> type:
    from camdf.policies.plain import PortableRisk

    return PortableRisk


def _portable_camdf() -> type:
    from camdf.policies.camdf_portable import PortableCamDF

    return PortableCamDF


def _set_rule(rs: int, cls: str, **params) -> Any:
    from camdf.policies import sets

    return getattr(sets, cls)(random_state=rs, **params)


def _cv_set(rs: int, **params) -> Any:
    from camdf.policies.cv_set import CVSet

    return CVSet(random_state=rs, **params)


def _class_set(rs: int) -> Any:
    from camdf.policies.class_set import ClassSet

    return ClassSet(random_state=rs)


def _fallback_set(rs: int) -> Any:
    from camdf.policies.fallback import FallbackSet

    return FallbackSet(random_state=rs)


def _peer(rs: int, cls: str, **params) -> Any:
    from camdf.policies import peers

    return getattr(peers, cls)(**params)


def _portable(cls: str) -> type:
    from camdf.policies import plain

    return getattr(plain, cls)


def _base(name: str, cls: str, order: int, colour: str | None = None, marker: str | None = None, **kw) -> Card:
    return Card(name, partial(_baseline, name=cls), order=order, colour=colour, marker=marker, **kw)


def _builtin_cards() -> list[Card]:
    """The methods of the paper and of this project, in display order."""
    ablation = dict(family="ablation")
    return [
        Card("camdf", _camdf, family="camdf", order=10, colour="#d62728", marker="*", shippable=True,
             across_lambdas="camdf_lambda", portable=_portable_camdf),
        Card("camdf_lite", _lite, family="camdf", order=20, colour="#ff7f0e", marker="P", shippable=True),
        Card("camdf_argmax", _argmax, family="camdf", ours=True, order=30, colour="#e377c2", marker="X",
             shippable=True),
        Card("camdf_risk", _risk, family="camdf", ours=True, order=40, colour="#8c564b", marker="h", shippable=True,
             dials=(ALPHA,), portable=_portable_risk),
        # Ablations (table A20).
        Card("camdf_unweighted", partial(_camdf, weighted=False), order=50, **ablation),
        Card("camdf_no_cost", partial(_camdf, features="NO_COST"), order=60, **ablation),
        Card("camdf_no_membership", partial(_camdf, features="NO_MEMBERSHIP"), order=70, **ablation),
        Card("camdf_regression", partial(_camdf, target="regress"), order=80, **ablation),
        Card("camdf_no_task", partial(_camdf, features="NO_TASK"), order=90, **ablation),
        Card("camdf_no_identity", partial(_camdf, tool_identity=False), order=100, **ablation),
        Card("camdf_argmax_no_margin", partial(_argmax, base_margin=False, grid=slice(1, None)), ours=True,
             order=110, **ablation),
        Card("camdf_argmax_untuned", partial(_argmax, grid=slice(1, 2)), ours=True, order=120, **ablation),
        Card("camdf_argmax_identity", partial(_argmax, tool_identity=True), ours=True, order=130, **ablation),
        Card("camdf_risk_no_split", partial(_risk, split=False), ours=True, order=140, dials=(ALPHA,), **ablation),
        Card("camdf_lambda", _camdf_lambda, family="camdf", order=150, colour="#bcbd22", marker="p"),
        # The transferred policy (A30) and the runtime's default: lambda-conditioned, a booster sized for pooled domains.
        Card("camdf_transfer", _camdf_transfer, family="camdf", ours=True, order=151, colour="#7f7f00", marker="v",
             shippable=True, across_lambdas="camdf_transfer", portable=_portable_camdf),
        _base("full", "Full", 160, "#1f77b4", "o", anchor=True),
        _base("none", "NoTools", 170, "#7f7f7f", "o"),
        _base("fixed_k", "FixedK", 180, "#17becf", "v"),
        _base("score_threshold", "score_threshold", 190, "#2ca02c", "^"),
        _base("score_per_cost", "score_per_cost", 200, "#9467bd", "<"),
        _base("predict_threshold", "predict_threshold", 210, "#393b79", ">"),
        _base("sufficiency_threshold", "sufficiency_threshold", 220, "#637939", "d"),
        _base("plugin_argmax", "PluginArgmax", 230, "#8c6d31", "D"),
        # Drawn with a spare colour and marker by name, as before the cards (figures styled a dead "marginal" key).
        _base("marginal_rule", "MarginalRule", 240),
        # Set rules (A27): any subset of the ranked candidates, ours.
        Card("plugin_set", partial(_set_rule, cls="PluginSet"), family="camdf", ours=True, order=152,
             colour="#d62728", marker="s", shippable=True, picks_prefix=False,
             portable=partial(_portable, "PortablePluginSet")),
        Card("learned_set", partial(_set_rule, cls="LearnedSet"), family="camdf", ours=True, order=154,
             colour="#e377c2", marker="D", shippable=True, picks_prefix=False,
             portable=partial(_portable, "PortablePluginSet")),
        Card("risk_set", partial(_set_rule, cls="RiskSetRule"), family="camdf", ours=True, order=156,
             colour="#8c564b", marker="H", shippable=True, dials=(ALPHA,), picks_prefix=False,
             portable=partial(_portable, "PortableRiskSet")),
        # cv_set's pool is frozen (camdf.policies.cv_set.POOL_FROZEN, 2026-12-05): another pool is another card.
        Card("cv_set", partial(_cv_set), family="camdf", ours=True, order=158, colour="#2f4b7c", marker="d",
             shippable=True, picks_prefix=False, portable=partial(_portable, "PortableCVSet")),
        # The expected-payoff set under a multinomial over the training tasks' G_x classes (evaluated, not shipped).
        Card("class_set", _class_set, family="camdf", ours=True, order=157, colour="#1b7837", marker="x",
             picks_prefix=False),
        # The plug-in set that knows a miss can be recovered by a search over the deferred tools (A29).
        Card("fallback_set", _fallback_set, family="camdf", ours=True, order=159, colour="#ff9896", marker="8",
             shippable=True, picks_prefix=False, defers=True, dials=(SEARCH_COST, SEARCH_K),
             portable=partial(_portable, "PortableFallbackSet")),
        # The field's own baselines (A27): always-loaded tools, the product default of five, Bits-over-Random.
        Card("static_set", partial(_peer, cls="StaticSetRule"), family="peer", order=242, colour="#17becf",
             marker="P", picks_prefix=False),
        Card("top5", partial(_peer, cls="TopK", k=5), family="peer", order=244, colour="#9edae5", marker="1"),
        # What a harness's tool search returns (A30): its top 3 or top 10, untuned.
        Card("top3", partial(_peer, cls="TopK", k=3), family="peer", order=243, colour="#6baed6", marker="2"),
        Card("top10", partial(_peer, cls="TopK", k=10), family="peer", order=245, colour="#08519c", marker="3"),
        # Ridge 0.05: what every reported bor_depth was fitted with (the evaluate stage's method-wide 0.05 reached
        # the rule's penalty by name until dials were declared per rule); the class default is 1.0.
        Card("bor_depth", partial(_peer, cls="BoRDepthRule", ridge=0.05), family="peer", order=246, colour="#c5b0d5",
             marker="2"),
        _base("oracle_set", "OracleSet", 250, "#000000", "s", family="oracle", picks_prefix=False),
        _base("best_prefix", "BestPrefix", 260, "#555555", "s", family="oracle", anchor=True),
    ]


#: The method every other is compared with in a cell's paired differences (the paper's CAM-DF).
REFERENCE = "camdf"
#: Full access: the anchor of the success comparisons (non-inferiority of each method's success against it).
FULL_ACCESS = "full"
#: No tools at all: the other untuned anchor (neither it nor full access is a tuned baseline).
NO_TOOLS = "none"
#: The clairvoyant prefix (the oracle that knows G_x picks each task's best depth): what a depth rule could reach.
BEST_PREFIX = "best_prefix"

#: Every registered method's card by name; change it only through :func:`register` and :func:`unregister`.
CARDS: dict[str, Card] = {c.name: c for c in _builtin_cards()}


def register(new: Card) -> Card:
    """Add a method's card; ValueError when the name is taken or a dial's name clashes with another's spec."""
    if not isinstance(new, Card):
        raise TypeError(f"register: expected a Card, got {type(new).__name__}")
    if new.name in CARDS:
        raise ValueError(f"card {new.name!r}: already registered")
    known = {d.name: d for c in CARDS.values() for d in c.dials}
    for dial in new.dials:
        if dial.name == "lam" or (dial.name in known and known[dial.name] != dial):
            raise ValueError(f"card {new.name!r}: dial {dial.name!r} is already defined differently")
    CARDS[new.name] = new
    return new


def unregister(name: str) -> Card:
    """Remove a method's card (KeyError naming it when it is not registered)."""
    if name not in CARDS:
        raise KeyError(f"card {name!r}: not registered")
    return CARDS.pop(name)


@contextmanager
def registered(*new: Card) -> Iterator[tuple[Card, ...]]:
    """Register ``new`` for the duration of a ``with`` block (tests and plugins that must not leak)."""
    done = []
    try:
        for c in new:
            done.append(register(c))
        yield tuple(done)
    finally:
        for c in reversed(done):
            CARDS.pop(c.name, None)


def card(name: str) -> Card:
    """The card of ``name``; ValueError naming the known methods otherwise."""
    try:
        return CARDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"method: unknown {name!r}, expected one of {sorted(CARDS)}") from None


def methods(**facts: Any) -> tuple[str, ...]:
    """Registered method names in display order, filtered by card facts (``methods(shippable=True)``)."""
    ranked = sorted(enumerate(CARDS.values()), key=lambda ic: (ic[1].order, ic[0]))
    return tuple(c.name for _, c in ranked if all(getattr(c, k) == v for k, v in facts.items()))


def oracles() -> tuple[str, ...]:
    """The oracle methods (they read the task's required set: references, never deployable), as registered now."""
    return tuple(m for m in methods() if is_oracle(m))


def camdf_family() -> tuple[str, ...]:
    """The CAM-DF family: its rules and their ablations, as registered now; every other deployable method is a
    baseline."""
    return tuple(m for m in methods() if in_camdf_family(m))


def is_oracle(method: str) -> bool:
    """Whether ``method`` is a registered oracle (:func:`oracles`; False for any other name): one card read, for
    the per-method tests of loops."""
    card = CARDS.get(method)
    return card is not None and card.family == "oracle"


#: The card families that make up the CAM-DF family (its rules and their ablations).
_CAMDF_FAMILIES = ("camdf", "ablation")


def in_camdf_family(method: str) -> bool:
    """Whether ``method`` belongs to the CAM-DF family (:func:`camdf_family`; False for any other name)."""
    card = CARDS.get(method)
    return card is not None and card.family in _CAMDF_FAMILIES


def policy_methods() -> tuple[str, ...]:
    """The rules a StopPolicy can be (shippable cards): the train stage fits each and ships the best out of fold."""
    return methods(shippable=True)


#: The card families of the rivals a result of ours is judged against: the paper's baselines and the field's peers.
RIVAL_FAMILIES = ("baseline", "peer")


def best_tuned_baseline(payoff: Mapping[str, float]) -> str | None:
    """THE best tuned baseline, the one definition every table, note, claim and cell description uses: of the
    methods in ``payoff`` (name -> mean payoff), the deployable one that is not ours (a card of the paper's
    baselines or the field's peers: no oracle, no CAM-DF rule or ablation) with the highest mean payoff, the
    earlier one in ``payoff``'s order on a tie; picked on the cell's own tasks, which favours it. None without one."""
    found = [m for m in payoff if m in CARDS and CARDS[m].family in RIVAL_FAMILIES and math.isfinite(payoff[m])]
    return max(found, key=lambda m: (payoff[m], -found.index(m))) if found else None


def dial_specs() -> dict[str, Dial]:
    """Every registered dial by name."""
    return {d.name: d for c in CARDS.values() for d in c.dials}


def own_dials(name: str, dials: Mapping[str, Any] | None) -> dict[str, Any]:
    """The entries of ``dials`` that are dials of method ``name``'s rule (the rest are other rules' dials)."""
    mine = {d.name for d in card(name).dials}
    return {k: v for k, v in (dials or {}).items() if k in mine}


def make_policy(name: str, random_state: int = 0, **settings: Any) -> Any:
    """A fresh rule by name (the registry is the only factory).

    ``settings`` set the rule's parameters of those names where it has them, and are
    ignored otherwise; a setting that is one of the rule's dials is checked first (its
    :class:`~camdf.common.dials.Dial`: the fitted default of that dial). None leaves a parameter as it is.
    """
    c = card(name)
    rule = c.factory(random_state)
    specs = {d.name: d for d in c.dials}
    params = rule.get_params()
    chosen = {}
    for key, value in settings.items():
        if value is None or key not in params:
            continue
        chosen[key] = specs[key].check(value, key) if key in specs else value
    return rule.set_params(**chosen) if chosen else rule
