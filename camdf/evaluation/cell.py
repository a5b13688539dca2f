"""Evaluate one cell: every method's out-of-fold decision for every task.

A cell is (domain, scorer, cost regime, lambda, d, methods, seed). Tasks are split
into folds (``Instances.folds``); for each evaluated fold f, the membership model
and every stopping rule are fitted on the other tasks only, and decide for the
tasks of f. Training features use membership probabilities cross-fitted inside the
training tasks, so they are as noisy as the ones met at test time. With a learned
ranker the fold-f models read the training tasks as the nested cross-fit scored them
(``Instances.train_views``, :func:`camdf.rankers.score_domain`), so no training feature
of fold f depends on fold f's labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import ThreadpoolController

from camdf.core.reliability import calibration_rows, fold_calibrations
from camdf.core.folds import fold_ids
from camdf.core.instances import Instances, curves_from_sets
from camdf.core.membership import fold_probabilities
from camdf.core.payoff import CELL_KINDS, has_fallback, prefix_payoffs
from camdf.core.recovery import Search, recovery_outcomes, recovery_prefix_payoffs
from camdf.core.sets import set_cost, set_partial, set_success
from camdf.common.fit_memo import fitted
from camdf.policies import CARDS, StateBatch, make_policy, own_dials

OUTCOME_COLUMNS = (
    "task_id", "fold", "method", "depth", "n_exposed", "cost", "success", "success_partial", "covers_g", "payoff",
)
#: The columns the recovery payoff adds (:mod:`camdf.core.recovery`): a search round was paid, it recovered
#: the task, the tools it loaded and the rounds paid; ``n_exposed`` stays the preloaded tools and ``cost`` includes
#: the search.
RECOVERY_COLUMNS = ("searched", "recovered", "loaded", "rounds")


@dataclass
class CellResult:
    """Per-task outcomes of every method, and what the fitted models expose."""

    outcomes: pd.DataFrame
    lite_coefficients: pd.DataFrame = field(default_factory=pd.DataFrame)
    tuned: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Per evaluated task, the true payoff of exposing nothing, everything and the best prefix
    #: (columns ``task_id, none, full, best``): what the headroom of the cell is computed from.
    prefix_bounds: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Per set rule, the ranked positions it exposed for every evaluated task, (T, N) bool in the rows of the
    #: instances (what the outcome rows, depth -1, do not carry; verified success re-scores these sets).
    exposed: dict[str, np.ndarray] = field(default_factory=dict)
    #: Per calibration source and tool, the out-of-fold reliability of the membership probabilities
    #: (:func:`camdf.core.reliability.fold_calibrations`, :func:`camdf.core.reliability.calibration_rows`).
    calibration: pd.DataFrame = field(default_factory=pd.DataFrame)


def noisy_membership(member: np.ndarray, valid: np.ndarray, epsilon: float, random_state: int) -> np.ndarray:
    """Corrupt G_x: drop each required tool and add each other candidate with probability epsilon."""
    if epsilon == 0:
        return member.copy()
    rng = np.random.default_rng(random_state)
    flip = (rng.random(member.shape) < epsilon) & valid
    return np.where(flip, ~member, member) & valid


def with_membership(inst: Instances, member: np.ndarray) -> Instances:
    """The same rankings with another G_x (and no alternatives): used for training labels only.

    ``member`` is in the rank order of ``inst``; each training view gets the same G_x, tool
    by tool, in its own rank order.
    """
    sets = [[np.flatnonzero(row)] for row in member]
    success, partial = curves_from_sets(member, sets, inst.n)
    views = inst.map_views(lambda v: with_membership(v, same_tools(member, inst.tools, v.tools)))
    return replace(inst, member=member, success=success, partial=partial, train_views=views,
                   sets=member[:, None, :].copy(), present=np.ones((inst.T, 1), dtype=bool))


def same_tools(values: np.ndarray, tools: np.ndarray, other: np.ndarray) -> np.ndarray:
    """``values`` (T, N), laid out by ``tools``, moved to the positions the same tools hold in ``other``.

    Each row of ``other`` must hold the same tools as the row of ``tools`` (another ranking of them).
    """
    rows = np.arange(len(tools))[:, None]
    src, dst = np.argsort(tools, axis=1, kind="stable"), np.argsort(other, axis=1, kind="stable")
    out = np.empty_like(values)
    out[rows, dst] = values[rows, src]
    return out


def evaluate_cell(
    inst: Instances,
    lam: float,
    methods: list[str] | tuple[str, ...],
    kind: str = "exact",
    random_state: int = 0,
    label_noise: float = 0.0,
    train_kind: str | None = None,
    lam_grid: tuple[float, ...] | list[float] | None = None,
    inner_folds: int = 5,
    membership_cache: str | None = None,
    fit_depth: int | None = None,
    dials: Mapping[str, Any] | None = None,
    search: Search | None = None,
    calibration: bool = True,
) -> CellResult:
    """Out-of-fold outcomes of every method on every evaluated task.

    Parameters
    ----------
    inst : Instances
        Rankings, costs c_j(d), true G_x and folds (fold -1: training only); a learned
        ranker's ``train_views`` are what each fold's models are fitted on.
    lam : float
        Cost pressure.
    methods : list of str
        Registered method names (:func:`camdf.policies.methods`). In each fold the prefix rules'
        rows come first, then the set rules' (in the order given).
    kind : {"exact", "partial", "recovery"}
        Payoff used for training labels, tuning and the reported payoff; ``"recovery"``: the exact
        payoff with the fallback ``search`` (:mod:`camdf.core.recovery`), the rules' features and
        plug-in estimates reading the exact value.
    random_state : int
    label_noise : float
        Epsilon of the membership noise injected into the *training* G_x (table A19);
        evaluation always uses the clean G_x.
    inner_folds : int
        Folds of the inner cross-fitting of membership probabilities.
    train_kind : {"exact", "partial", "recovery"} or None
        Payoff behind the training labels and tuning (default: ``kind``); evaluation uses ``kind``.
        ``"exact"`` under ``kind="recovery"``: rules unaware of the fallback, evaluated with it.
    lam_grid : sequence of float or None
        Lambdas a lambda-conditioned rule (lambda is one of its features, e.g. ``camdf_lambda``)
        trains across; default ``[lam]``.
    membership_cache : path or None
        Folder where the membership probabilities are kept between cells
        (:func:`camdf.core.membership.fold_probabilities`; they do not depend on costs or lambda).
    fit_depth : int or None
        Bound on the states the models learn from at catalog scale (``candidates.fit_depth``): the
        membership model and every rule are fitted on each training task's first ``fit_depth`` states
        (:meth:`camdf.policies.StateBatch.head`); features, payoffs and Delta labels are computed on the
        whole lists first, so a kept state is the same state a test task meets; test tasks are decided
        on their whole lists, but a prefix rule that learns stops by depth ``fit_depth`` at the latest (past
        it, it has seen no state: walking on would extrapolate its model down the list). None: every state.
    dials : mapping or None
        Run-time dials by name (``method.dials``): each rule that has a dial of that name is fitted
        with it as its default (checked against the dial's range); the others ignore it. None or
        absent: every rule's own default.
    search : Search or None
        The fallback of ``kind="recovery"`` (required there, ignored otherwise).
    calibration : bool
        Measure the out-of-fold reliability of the membership probabilities (``calibration``; False:
        an empty frame). Only a diagnostic: no rule reads it, and on the catalog it is a quarter of a cell.

    Returns
    -------
    CellResult
        ``outcomes`` has one row per (task, method) with columns
        :data:`OUTCOME_COLUMNS`.
    """
    unknown = [m for m in methods if m not in CARDS]
    if unknown:
        raise ValueError(f"methods: unknown {unknown}, expected names from {sorted(CARDS)}")
    if not 0 <= label_noise < 1:
        raise ValueError(f"label_noise: must be in [0, 1), got {label_noise}")
    if kind not in CELL_KINDS or (train_kind or kind) not in CELL_KINDS:
        raise ValueError(f"kind: expected one of {CELL_KINDS}, got {kind!r} (train_kind {train_kind!r})")
    recovery = has_fallback(kind)
    if recovery and search is None:
        raise ValueError("search: the recovery payoff needs the fallback's search (camdf.core.recovery.Search)")
    # The search the training labels know (None: rules unaware of the fallback), and the value the features read.
    train_search = search if recovery and has_fallback(train_kind or kind) else None
    value_kind = "exact" if recovery else kind
    train_value = "exact" if has_fallback(train_kind or kind) else (train_kind or kind)
    u_true = recovery_prefix_payoffs(inst, lam, search) if recovery else prefix_payoffs(inst, lam, kind)
    train_member = noisy_membership(inst.member, inst.valid, label_noise, random_state)
    train_inst = inst if label_noise == 0 else with_membership(inst, train_member)
    rows, coefs, tuned = [], [], []
    set_masks: dict[str, np.ndarray] = {}
    calibrated: dict[str, np.ndarray] = {}
    # The cell's models are small (hundreds to ~10^5 rows, ~20 columns): multi-threaded BLAS only adds
    # hand-offs and spinning workers, which made the logistic fits 10-30x slower on 2 busy cores.
    # Results are unchanged (checked on retail: identical outcomes, thresholds and coefficients).
    with _blas_controller().limit(limits=1, user_api="blas"):
        probabilities = fold_probabilities(train_inst, train_member, fold_ids(inst.folds), inner_folds,
                                           random_state, cache_dir=membership_cache, fit_depth=fit_depth)
        for f in fold_ids(inst.folds):
            te = inst.folds == f
            tr = ~te
            tr_inst = train_inst.training_view(f).subset(tr)
            te_inst = inst.subset(te)
            p_te, p_tr = probabilities[f]
            for source, p_cal in (fold_calibrations(tr_inst, p_tr, te_inst, p_te) if calibration else {}).items():
                calibrated.setdefault(source, np.zeros(inst.tools.shape))[te] = p_cal
            train = StateBatch.make(tr_inst, p_tr, lam, train_value, train=True, search=train_search).head(fit_depth)
            test = StateBatch.make(te_inst, p_te, lam, value_kind, train=False, search=train_search)
            truth = replace(test, u=u_true[te])  # what an oracle decides on
            idx = np.flatnonzero(te)
            across = None  # the training batch across the lambda grid, built once per fold when a rule asks
            rules = [(name, make_policy(name, random_state, **own_dials(name, dials))) for name in methods]
            # Prefix rules' rows first, then set rules' (the outcome files' order since the oracle set was added).
            for name, policy in sorted(rules, key=lambda nr: not nr[1].picks_prefix):
                if policy.lambda_conditioned:
                    if across is None:
                        across = StateBatch.across_lambdas(tr_inst, p_tr, lam_grid or [lam], train_value,
                                                           search=train_search).head(fit_depth)
                    policy = fitted(policy, across)  # the same states in every cell of a lambda sweep
                else:
                    policy.fit(train)
                exposed = policy.select(truth if policy.needs_truth else test)
                if fit_depth is not None and policy.picks_prefix and policy.requires_fit:
                    exposed = exposed & (np.arange(exposed.shape[1]) < int(fit_depth))  # within what it learned from
                coefficients = policy.coefficients()
                if coefficients is not None:
                    coefs.append(coefficients.rename(f).to_frame().T.assign(fold=f))
                tuned += [{"fold": f, "method": name, "parameter": parameter, "value": str(value)}
                          for parameter, value in policy.tuned_parameters().items()]
                rows.append(_mask_outcomes(name, f, exposed, te_inst, lam, kind, search, policy.picks_prefix))
                if not policy.picks_prefix:
                    set_masks.setdefault(name, np.zeros(inst.tools.shape, dtype=bool))[idx] = exposed
    outcomes = pd.concat(rows, ignore_index=True)[list(OUTCOME_COLUMNS + (RECOVERY_COLUMNS if recovery else ()))]
    coef_df = pd.concat(coefs, ignore_index=True) if coefs else pd.DataFrame()
    evaluated = np.isin(inst.folds, fold_ids(inst.folds))
    calibration = pd.concat([calibration_rows(p[evaluated], inst.member[evaluated], inst.tool_ids[evaluated],
                                              inst.valid[evaluated], list(inst.vocab)).assign(source=source)
                             for source, p in calibrated.items()], ignore_index=True) if calibrated else pd.DataFrame()
    u = u_true[evaluated]  # -inf beyond each task's list, so max() is the best reachable prefix
    bounds = pd.DataFrame({"task_id": inst.task_ids[evaluated], "none": u[:, 0],
                           "full": u[np.arange(len(u)), inst.n[evaluated]], "best": u.max(axis=1)})
    return CellResult(outcomes, coef_df, pd.DataFrame(tuned), bounds, set_masks, calibration)


@cache
def _blas_controller() -> ThreadpoolController:
    """The process's BLAS libraries, inspected once (the inspection costs tens of milliseconds)."""
    return ThreadpoolController()


def _mask_outcomes(name, fold, exposed, sub, lam, kind, search, prefix) -> pd.DataFrame:
    """Outcomes of exposing ``exposed`` ((T_f, N) bool over the ranked positions) to the tasks of ``sub`` (the
    fold's test instances).

    One path for every rule: a prefix rule's mask is its top ``depth`` positions, a set rule's any subset
    (depth -1). ``success``: some sufficient set of the task (G_x or an alternative,
    :meth:`Instances.sufficient`) lies inside A, a set with a tool off the list never does; the partial
    value is |G_x & A| / |G_x| with the required tools cut off the list counted in |G_x|
    (:attr:`Instances.g_size`), ``covers_g`` when it is 1; C(A) is summed in ranked order
    (:func:`camdf.core.sets.set_cost`). So a prefix scores bit for bit as its curves
    (:func:`camdf.core.payoff.prefix_payoffs`) score it, and a set holding the same tools scores the same.
    The payoff is ``v(A) - lam * C(A)`` with v the success (exact) or the partial value (partial); under
    ``kind="recovery"`` the fallback ``search`` adds its rounds (:func:`camdf.core.recovery.recovery_outcomes`:
    ``success`` counts a recovered task, ``cost`` includes the search) and the :data:`RECOVERY_COLUMNS`.
    """
    n_exposed = exposed.sum(axis=1)
    partial = set_partial(exposed, sub.member, sub.g_size)
    extra = {}
    if has_fallback(kind):
        out = recovery_outcomes(exposed, sub, lam, search)
        success, cost, payoff = out.success, out.cost, out.payoff
        extra = {"searched": out.searched, "recovered": out.recovered, "loaded": out.loaded, "rounds": out.rounds}
    else:
        success = set_success(exposed, *sub.sufficient())
        cost = set_cost(exposed, sub.costs)
        payoff = (success if kind == "exact" else partial).astype(float) - lam * cost
    return pd.DataFrame(
        {
            "task_id": sub.task_ids, "fold": fold, "method": name,
            "depth": n_exposed if prefix else -1, "n_exposed": n_exposed, "cost": cost,
            "success": success, "success_partial": partial, "covers_g": partial >= 1.0, "payoff": payoff,
            **extra,
        }
    )
