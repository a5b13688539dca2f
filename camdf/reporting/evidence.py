"""The evidence layer: every sweep the tables and claims read, selected once from the store's cell runs.

An experiment's cells are found by their key (:mod:`camdf.reporting.experiment_cells`): :meth:`Evidence.cells`
gives them back as one frame per experiment, a column per key the sweep varies; a table on a new experiment
reads ``evidence.cells("<experiment>")`` and needs nothing else. The named sweeps below (the paper's tables)
slice their experiments' cells by the main cell's params. Each function returns the
deduplicated frame of one sweep's cells (one row per cell: the latest FINISHED run of it, rows oldest
first unless stated), empty when the store holds none; :func:`gather` calls each once and the tables, the
claims and the headline findings all read the resulting :class:`Evidence`, so they cannot disagree about
which runs count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from camdf.core.payoff import RECOVERY
from camdf.evaluation.headroom import DEGENERATE_HEADROOM
from camdf.reporting.artifacts import CellArtifacts
from camdf.reporting.experiment_cells import SWEEPS, ExperimentCells, cells_of, experiment_frame
from camdf.reporting.store import mkey, ranking_frame, select
from camdf.reporting.verdicts import Judge


#: The anchor keys of the ``main`` config block, by the cell param each one fixes (``main.protocol`` fixes
#: ``folds.protocol``); :func:`anchored` moves them with the ``cell_overrides`` of those params.
ANCHOR = {"domain.name": "domain", "scorer.label": "scorer", "cost.regime": "regime", "cost.lam": "lam",
          "cost.d": "d", "seed": "seed", "payoff": "payoff", "folds.protocol": "protocol"}
#: The anchor's defaults for keys an older ``main`` block lacks.
ANCHOR_DEFAULTS = {"payoff": "exact", "protocol": "kfold"}


def main_params(main: dict) -> dict:
    """The :func:`~camdf.reporting.store.select` params of the main cell described by the ``main`` config block."""
    main = {**ANCHOR_DEFAULTS, **main}
    return dict(domain__name=main["domain"], scorer__label=main["scorer"], cost__regime=main["regime"],
                cost__lam=main["lam"], cost__d=main["d"], seed=main["seed"], payoff=main["payoff"],
                label_noise=0.0, label_source="data", folds__protocol=main["protocol"])


def anchored(main: dict, overrides: list[str]) -> dict:
    """The ``main`` block with the anchor keys the cells' ``overrides`` set (``folds.protocol=split`` ->
    ``protocol: split``, ``domain=my_shop`` or ``domain.name=my_shop`` -> ``domain: my_shop``), so every
    selection finds the cells those overrides ran; the other overrides leave the anchor as it is."""
    out = {**ANCHOR_DEFAULTS, **main}
    for item in overrides:
        key, _, value = item.lstrip("+~").partition("=")
        key = {"domain": "domain.name", "scorer": "scorer.label"}.get(key, key)  # a group file names its cells
        if key in ANCHOR and "," not in value:  # a swept list (a18's lambdas) fixes no anchor
            name = ANCHOR[key]
            out[name] = type(out[name])(value) if isinstance(out[name], (int, float)) else value
    return out


def anchor_hints(runs: pd.DataFrame, main: dict) -> list[str]:
    """What would find the main cell when the store holds none at the anchor: for each anchor param whose
    change alone finds cell runs, the ``cell_overrides=['<param>=<value>']`` naming each value they have
    (the cells' override, which moves the anchor and the cell keys the tables read alike)."""
    base = main_params(main)
    if runs.empty or not select(runs, **base).empty:
        return []
    hints = []
    for param in ANCHOR:
        col, key = "p:" + param, param.replace(".", "__")
        found = select(runs, **{k: v for k, v in base.items() if k != key})
        if not found.empty and col in found:
            values = sorted(set(found[col]) - {str(base[key])})
            hints += [f"cell_overrides=['{param}={v}']" for v in values]
    return hints


def sweep(runs: pd.DataFrame, main: dict, vary: tuple[str, ...]) -> pd.DataFrame:
    """FINISHED runs of a sweep over the params ``vary``, every other param at the main cell.

    ``runs``: the cells of the sweep's experiments (:data:`SWEEPS`). Rows come oldest first, one per cell key
    (see :func:`~camdf.reporting.store.select`).
    """
    p = main_params(main)
    for key in vary:
        p.pop(key)
    return select(runs, **p)


def _latest(sel: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    """The latest run of each value of ``by`` (rows oldest first)."""
    return sel.sort_values("start").drop_duplicates(by, keep="last")


def is_degenerate(run: pd.Series) -> bool:
    """A cell whose headroom (best prefix - max(full, none)) is below
    :data:`camdf.evaluation.headroom.DEGENERATE_HEADROOM`: no stopper can gain much there (its logged flag)."""
    return bool(run.get(mkey("cell", "degenerate"), 0.0) == 1.0)


#: The degeneracy threshold as the tables and figures print it.
DEGENERATE_TEXT = f"{DEGENERATE_HEADROOM:g}"


def below_zero_everywhere(run: pd.Series) -> bool:
    """Every deployable method's mean payoff below 0 (oracles aside): each loses to exposing nothing (and not searching),
    which no method of the cell does, so the cell tells no rule from another (the catalog's recovery cells at lambda
    0.12). A cell where some rule reaches 0 by abstaining is not one: it shows which rules know to abstain."""
    from camdf.policies import is_oracle
    from camdf.reporting.store import methods_of

    payoffs = [run[mkey(m, "payoff_mean")] for m in methods_of(run) if not is_oracle(m)]
    return bool(payoffs) and max(payoffs) < 0.0


def decides_nothing(run: pd.Series) -> bool:
    """A cell no claim counts (:func:`left_out_as`): degenerate, or every method pays below 0."""
    return left_out_as(run) is not None


#: What a table appends to a cell's label, by why no claim counts the cell (:func:`left_out_as`).
MARKERS = {"degenerate": " (degenerate)", "below zero": " (every method pays below 0)"}


def left_out_as(run: pd.Series) -> str | None:
    """Why no claim counts ``run``: ``"degenerate"``, ``"below zero"`` (every method pays below 0), or None."""
    return "degenerate" if is_degenerate(run) else "below zero" if below_zero_everywhere(run) else None


def cell_marker(run: pd.Series) -> str:
    """What a table appends to a cell's label when no claim counts it (:data:`MARKERS`), or nothing."""
    return MARKERS.get(left_out_as(run), "")


def main_scorers(main: dict) -> list[str]:
    """The ranking sources of the main cell: the main scorer, then ``table2_scorers`` (each once)."""
    return list(dict.fromkeys([main["scorer"], *main.get("table2_scorers", ())]))


def main_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """The main cell (Table 2, the family verdict, claims a, d, e) per ranking source and fold protocol.

    One row per (scorer of :func:`main_scorers`, ``folds.protocol``) with the main methods and
    unscaled costs (``list_cost`` unset), ordered by scorer, then k-fold before the other protocols.
    """
    base = main_params(main)
    sel = select(runs, **{k: v for k, v in base.items() if k not in ("scorer__label", "folds__protocol")})
    if sel.empty:
        return sel
    if "p:list_cost" in sel:
        sel = sel[sel["p:list_cost"].isin(["None"])]
    scorers = main_scorers(main)
    anchor = base["folds__protocol"]
    sel = _latest(sel[sel["p:scorer.label"].isin(scorers)], ["p:scorer.label", "p:folds.protocol"])
    order = [2 * scorers.index(s) + (p != anchor) for s, p in zip(sel["p:scorer.label"], sel["p:folds.protocol"])]
    out = sel.assign(order=order).sort_values("order", kind="stable").drop(columns="order")
    out.attrs["protocol"] = anchor  # the protocol :func:`main_cell` reads by default
    return out


def main_cell(cells: pd.DataFrame, what: str, scorer: str, protocol: str | None = None) -> pd.Series:
    """The row of :func:`main_cells` for ``scorer`` and ``protocol`` (None: the anchor's, ``main.protocol``);
    LookupError naming ``what`` and the overrides to check when absent."""
    protocol = protocol or cells.attrs.get("protocol", ANCHOR_DEFAULTS["protocol"])
    if not cells.empty:
        hit = cells[(cells["p:scorer.label"] == scorer) & (cells["p:folds.protocol"] == protocol)]
        if not hit.empty:
            return hit.iloc[-1]
    raise LookupError(f"{what}: no FINISHED main-cell run in the store with scorer {scorer} and {protocol} folds; "
                      f"run its experiment first, or pass the anchor your cells ran at (main.domain, main.scorer, "
                      f"main.protocol, ... or the cells' own cell_overrides)")


def ablation_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A20: the family and its ablations at the main cell, one row per ranking source."""
    sel = sweep(runs, main, ("scorer__label",))
    return sel if sel.empty else _latest(sel, "p:scorer.label")


def grid_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A18/A24 (and A20's lambda dial, claims b, c, g): the lambda x d grid, one row per (``lam``, ``d``)."""
    sel = sweep(runs, main, ("cost__lam", "cost__d"))
    if sel.empty:
        return sel
    return _latest(sel.assign(lam=sel["p:cost.lam"].astype(float), d=sel["p:cost.d"].astype(float)), ["lam", "d"])


def noise_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A19 (and A25's re-scoring, claim f): the label-noise sweep, one row per (ranking source, ``eps``).

    Rows come by the ranking sources of :func:`main_scorers`, then by ``eps``.
    """
    sel = sweep(runs, main, ("label_noise", "scorer__label"))
    if sel.empty:
        return sel
    scorers = main_scorers(main)
    sel = sel[sel["p:scorer.label"].isin(scorers)]
    sel = _latest(sel.assign(eps=sel["p:label_noise"].astype(float)), ["p:scorer.label", "eps"])
    order = [scorers.index(s) for s in sel["p:scorer.label"]]
    return sel.assign(order=order).sort_values(["order", "eps"], kind="stable").drop(columns="order")


def ranker_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A21 (and claim c): the ranking sources at the main cell, one row per scorer label."""
    sel = sweep(runs, main, ("scorer__label",))
    return sel if sel.empty else _latest(sel, "p:scorer.label")


def label_source_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A25: the training label sources at the main cell with verified metrics, one row per label source."""
    sel = sweep(runs, main, ("label_source",))
    if sel.empty or mkey("camdf", "verified_success") not in sel:
        return sel.iloc[0:0]
    return _latest(sel[sel[mkey("camdf", "verified_success")].notna()], "p:label_source")


def domain_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A22/A23: the other domains at the main cell, one row per (domain, payoff kind), each deciding over its
    whole candidate list: a cell that cuts the ranking to its top N (A28's catalog) is not one of them."""
    p = main_params(main)
    for key in ("domain__name", "payoff"):
        p.pop(key)
    sel = select(runs, **p)
    if sel.empty:
        return sel
    sel = sel[(sel["p:domain.name"] != main["domain"]) & ~cuts_to_top_n(sel)]
    return _latest(sel, ["p:domain.name", "p:payoff"])


def cuts_to_top_n(sel: pd.DataFrame) -> pd.Series:
    """Whether each cell cuts its ranking to a top N (``candidates.top_k`` set; MLflow logs an unset one as
    ``None``, a run without the param has NaN)."""
    if "p:candidates.top_k" not in sel:
        return pd.Series(False, index=sel.index)
    top_k = sel["p:candidates.top_k"]
    return ~(top_k.isna() | top_k.isin(["None", "null"]))


#: The params of a cell's run-time dials (``method.dials.<name>``), numbers.
DIALS = "p:method.dials."


def risk_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A26: the risk-controlled stopper, one row per (domain, scorer, dial values), sorted by them.

    The dial columns (``p:method.dials.<name>``) are read as floats.
    """
    p = main_params(main)
    for key in ("domain__name", "scorer__label"):
        p.pop(key)
    sel = select(runs, **p)
    dials = sorted(c for c in sel.columns if c.startswith(DIALS))
    if sel.empty or not dials:
        return sel.iloc[0:0]
    sel = sel.assign(**{c: sel[c].astype(float) for c in dials})
    keys = ["p:domain.name", "p:scorer.label", *dials]
    return sel.drop_duplicates(keys, keep="last").sort_values(keys)


def catalog_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A28: the catalog-scale cells (a top-N cut of the whole catalog), one row per (domain, scorer, N, fold
    protocol and grouping), at the main lambda, d, cost regime and seed, sorted by them."""
    p = main_params(main)
    for key in ("domain__name", "scorer__label", "folds__protocol"):
        p.pop(key)
    sel = select(runs, **p)
    sel = sel[cuts_to_top_n(sel)]
    if sel.empty:
        return sel
    by = sel["p:folds.group_by"] if "p:folds.group_by" in sel else pd.Series("None", index=sel.index)
    sel = sel.assign(top_n=sel["p:candidates.top_k"].astype(int),
                     protocol=[proto if g in ("None", None) else f"{proto}:{str(g).removeprefix('meta.')}"
                               for proto, g in zip(sel["p:folds.protocol"], by)])
    sel = sel.drop_duplicates(["p:domain.name", "p:scorer.label", "top_n", "protocol"], keep="last")
    return sel.sort_values(["p:domain.name", "protocol", "p:scorer.label", "top_n"], kind="stable")


#: The params of a recovery cell's search fallback (``search.<key>``, conf/evaluate.yaml).
SEARCH = "p:search."


def fallback_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A29: the recovery-payoff cells, one row per (domain, lambda, scorer, search cost, k, rounds, noise, aware) at the
    main d, cost regime, seed and fold protocol, sorted by them, with ``lam``, ``search_cost`` (no fallback: inf),
    ``search_k`` and ``search_rounds`` (a cell from before ``search.rounds``: 1) as numbers."""
    p = main_params(main)
    for key in ("domain__name", "scorer__label", "payoff", "cost__lam"):
        p.pop(key)
    sel = select(runs, **p, payoff=RECOVERY)
    if sel.empty or SEARCH + "cost" not in sel:
        return sel.iloc[0:0]
    sel = sel.assign(search_cost=[float("inf") if c == "None" else float(c) for c in sel[SEARCH + "cost"]],
                     search_k=sel[SEARCH + "k"].astype(int), search_noise=sel[SEARCH + "noise"].astype(float),
                     aware=sel[SEARCH + "aware"] == "True", lam=sel["p:cost.lam"].astype(float),
                     search_rounds=[1 if str(r) in ("None", "nan") else int(float(r))
                                    for r in sel.get(SEARCH + "rounds", pd.Series("None", index=sel.index))])
    keys = ["p:domain.name", "lam", "p:scorer.label", "search_noise", "aware", "search_rounds", "search_k", "search_cost"]
    return sel.drop_duplicates(keys, keep="last").sort_values(
        keys, ascending=[True, True, True, True, False, True, True, True], kind="stable")


#: The param that marks A30's cells (``transfer.leave_out``: True, fitted on the other domains; False, in-domain).
TRANSFER = "p:transfer.leave_out"


def transfer_cells(runs: pd.DataFrame, main: dict) -> pd.DataFrame:
    """A30: the transfer cells, one row per (domain, ``leave_out``) at the main seed with the exact payoff
    (their own cost regime, lambda and method list: conf/experiment/a30.yaml), sorted by domain then
    transferred before in-domain; ``leave_out`` as a bool."""
    if runs.empty or TRANSFER not in runs:
        return runs.iloc[0:0]
    sel = select(runs[runs[TRANSFER].isin(["True", "False"])], seed=main["seed"], payoff="exact", label_noise=0.0,
                 label_source="data")
    if sel.empty:
        return sel
    sel = _latest(sel.assign(leave_out=sel[TRANSFER] == "True"), ["p:domain.name", "leave_out"])
    return sel.sort_values(["p:domain.name", "leave_out"], ascending=[True, False], kind="stable")


@dataclass(frozen=True)
class Evidence:
    """Every sweep's cells, each selected once (:func:`gather`); an empty frame (the default): the store holds none.

    Attributes
    ----------
    fallback, transfer, main : DataFrame
        :func:`fallback_cells` (A29), :func:`transfer_cells` (A30), :func:`main_cells` at the main cell (Table 2).
    ablations, grid, noise, rankers, label_sources, domains, risk, catalog : DataFrame
        :func:`ablation_cells`, :func:`grid_cells`, :func:`noise_cells`, :func:`ranker_cells`,
        :func:`label_source_cells`, :func:`domain_cells`, :func:`risk_cells`, :func:`catalog_cells`.
    artifacts : CellArtifacts or None
        The cell runs' outcomes and tuned parameters (per-fit differences, inner-CV choices, MDDs, seed
        stability); None: the tables read the logged metrics alone.
    experiments : dict of str to DataFrame
        Each experiment's cells by key (:func:`experiment_frame`); read through :meth:`cells`.
    fold_seeds : dict of int to DataFrame
        :func:`main_cells` at each other fold seed the store holds (``seed``: the folds, rankers and models of
        every repeat); read through :meth:`at_fold_seed`.
    ranking : DataFrame
        The latest default-policy run's ranking across catalogs (:func:`~.store.ranking_frame`).
    judge : Judge
        The comparisons of these cells (:class:`~camdf.reporting.verdicts.Judge` over ``artifacts``).
    """

    main: pd.DataFrame = field(default_factory=pd.DataFrame)
    ablations: pd.DataFrame = field(default_factory=pd.DataFrame)
    grid: pd.DataFrame = field(default_factory=pd.DataFrame)
    noise: pd.DataFrame = field(default_factory=pd.DataFrame)
    rankers: pd.DataFrame = field(default_factory=pd.DataFrame)
    label_sources: pd.DataFrame = field(default_factory=pd.DataFrame)
    domains: pd.DataFrame = field(default_factory=pd.DataFrame)
    risk: pd.DataFrame = field(default_factory=pd.DataFrame)
    artifacts: CellArtifacts | None = None
    catalog: pd.DataFrame = field(default_factory=pd.DataFrame)
    fallback: pd.DataFrame = field(default_factory=pd.DataFrame)
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)
    experiments: dict[str, pd.DataFrame] = field(default_factory=dict)
    fold_seeds: dict[int, pd.DataFrame] = field(default_factory=dict)
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)
    judge: Judge = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        # One Judge per Evidence, so every table and claim shares what it has read and re-drawn.
        object.__setattr__(self, "judge", Judge(self.artifacts))

    def cells(self, experiment: str) -> pd.DataFrame:
        """The cells of ``experiment``'s sweep (``conf/experiment/<experiment>.yaml``) at the current code and data,
        found by their key: one row per cell (its latest FINISHED run, oldest first), a column per key the
        sweep varies; empty when the store holds none of them (or the experiment was not asked for: a
        table lists the experiments it reads in its ``TableSpec``)."""
        return self.experiments.get(experiment, pd.DataFrame())

    def at_fold_seed(self, seed: int) -> "Evidence":
        """The main cells at fold seed ``seed`` and no other sweep (their cells ran at the main seed alone), with
        the same artifacts: what a claim that reads the main cells says under other folds."""
        return Evidence(main=self.fold_seeds[seed], artifacts=self.artifacts)


def gather(runs: pd.DataFrame, main: dict, tracker=None, artifacts: CellArtifacts | None = None,
           cells: ExperimentCells | None = None) -> Evidence:
    """Select every sweep once from ``runs`` (the frame of :func:`camdf.reporting.store.runs_frame`).

    ``cells``: each experiment's cells by key (:func:`camdf.pipeline.sweeps.experiment_keys`); each named
    sweep reads the cells of its experiments (:data:`SWEEPS`), and :meth:`Evidence.cells` any experiment's
    (None: no experiment's, every sweep empty). ``tracker``
    (:class:`camdf.tracking.client.Tracker`) lets the tables read the cells' artifacts
    (:class:`~camdf.reporting.artifacts.CellArtifacts`), or ``artifacts`` gives the reader itself; with
    neither the tables read the logged metrics alone.
    """
    if artifacts is None and tracker is not None:
        artifacts = CellArtifacts.from_tracker(tracker)
    frames = {name: experiment_frame(runs, keyed) for name, keyed in (cells or {}).items()}
    of = {sweep: cells_of(frames, names) for sweep, names in SWEEPS.items()}
    seeds = sorted({int(float(s)) for s in of["main"].get("p:seed", ())} - {int(main["seed"])})
    return Evidence(
        main=main_cells(of["main"], main), ablations=ablation_cells(of["ablations"], main),
        grid=grid_cells(of["grid"], main), noise=noise_cells(of["noise"], main),
        rankers=ranker_cells(of["rankers"], main), label_sources=label_source_cells(of["label_sources"], main),
        domains=domain_cells(of["domains"], main), risk=risk_cells(of["risk"], main),
        artifacts=artifacts, catalog=catalog_cells(of["catalog"], main), fallback=fallback_cells(of["fallback"], main),
        transfer=transfer_cells(of["transfer"], main), experiments=frames,
        fold_seeds={seed: main_cells(of["main"], {**main, "seed": seed}) for seed in seeds},
        ranking=pd.DataFrame() if tracker is None else ranking_frame(tracker))
