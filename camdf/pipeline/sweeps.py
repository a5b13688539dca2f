"""A sweep's jobs, computed before they run: expand overrides as Hydra's basic sweeper does, compose each job.

Two users: the :class:`CheckSweep` callback refuses a multirun with one bad job
before any job runs, and the tables stage computes the cells (and so the cell keys)
an experiment's sweep makes, to select exactly those runs from the store.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Iterable

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from camdf.pipeline.checks.choices import compose  # noqa: F401  (one composition helper; re-exported here)

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


#: The most jobs one sweep may have (the largest shipped experiment has a few hundred): a sweep past it is refused
#: before any job is composed or run; ``CAMDF_MAX_JOBS`` raises it for a sweep that really is that large.
MAX_JOBS = 5000


def max_jobs() -> int:
    """:data:`MAX_JOBS`, or ``CAMDF_MAX_JOBS`` when it is a positive integer."""
    import os

    value = os.environ.get("CAMDF_MAX_JOBS", "")
    return int(value) if value.isdigit() and int(value) > 0 else MAX_JOBS


def _values_by_key(overrides: Iterable[str]) -> dict[str, list[str]]:
    """Each key's overrides in a sweep (``key=value``, one per value), a later override of a key replacing an earlier
    one (command line after the experiment's ``hydra.sweeper.params``), as in Hydra; ValueError for a sweep that
    is not discrete."""
    by_key: dict[str, list[str]] = {}
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.get_key_element()
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                raise ValueError(f"{key}: only discrete sweeps (a,b,c) are supported, got {override.input_line}")
            by_key[key] = [f"{key}={v}" for v in override.sweep_string_iterator()]
        else:
            by_key[key] = [f"{key}={override.get_value_element_as_str()}"]
    return by_key


def job_count(overrides: Iterable[str]) -> int:
    """How many jobs a sweep of ``overrides`` has (the product of each key's values), counted without building
    them; ValueError as :func:`_values_by_key`."""
    import math

    return math.prod(len(v) for v in _values_by_key(overrides).values())


def expand(overrides: Iterable[str]) -> list[list[str]]:
    """The jobs of a sweep: the cartesian product of every discrete sweep, in Hydra's basic-sweeper order.

    A later override of a key replaces an earlier one (command line after the experiment's
    ``hydra.sweeper.params``), as in Hydra. More than :func:`max_jobs` jobs raise ValueError
    (counted before the product is built).
    """
    overrides = list(overrides)
    n = job_count(overrides)
    if n > max_jobs():
        raise ValueError(f"{n} jobs, more than the limit of {max_jobs()} (CAMDF_MAX_JOBS raises it)")
    return [list(job) for job in itertools.product(*_values_by_key(overrides).values())]


def varying_keys(jobs: list[list[str]]) -> list[str]:
    """The keys whose value differs between a sweep's jobs (override lists), in override order."""
    values: dict[str, set[str]] = {}
    for job in jobs:
        for override in job:
            key, _, value = override.partition("=")
            values.setdefault(key.lstrip("+~"), set()).add(value)
    return [k for k, v in values.items() if len(v) > 1]


def sweep_params(cfg: DictConfig) -> list[str]:
    """``hydra.sweeper.params`` of a composed config as override strings."""
    params = OmegaConf.select(cfg, "hydra.sweeper.params", default=None) or {}
    return [f"{k}={v}" for k, v in params.items()]


def _is_group(key: str) -> bool:
    # hydra.* (hydra.searchpath above all) shapes the composition itself, as a config group choice does.
    return key.startswith("hydra.") or (CONF_DIR / key.split("@")[0]).is_dir()


def searchpath_overrides(config: DictConfig | None = None) -> list[str]:
    """The ``hydra.searchpath`` of a composed config with its ``hydra`` node (default: the running Hydra
    app's) as an override, so that configs composed on the side (each job of a sweep check, the cells
    the tables stage reads) find the same config folders as the stage (empty when there is none)."""
    if config is not None:
        paths = OmegaConf.select(config, "hydra.searchpath", default=None)
    else:
        from hydra.core.hydra_config import HydraConfig

        paths = HydraConfig.get().searchpath if HydraConfig.initialized() else None
    paths = [str(p) for p in (paths or [])]
    if not paths:
        return []
    quoted = ",".join("'" + p.replace("\\", "\\\\").replace("'", "\\'") + "'" for p in paths)
    return [f"hydra.searchpath=[{quoted}]"]


def compose_jobs(config_name: str, jobs: list[list[str]]) -> list[DictConfig]:
    """The composed config of each job (as :func:`compose` gives it, without the ``hydra`` node).

    Jobs that differ only in plain values (``cost.lam=...``) share one composition of
    their config-group choices; the values are then set on a copy, as Hydra sets them
    after it has assembled the defaults list. Anything else (``+key``, ``~key``) is
    composed in full.
    """
    parser = OverridesParser.create()
    bases: dict[tuple[str, ...], DictConfig] = {}
    out = []
    for job in jobs:
        parsed = parser.parse_overrides(job)
        plain = [o for o in parsed if not _is_group(o.get_key_element()) and o.get_key_element()[0] not in "+~"]
        groups = tuple(o.input_line for o in parsed if o not in plain)
        if groups not in bases:
            bases[groups] = compose(config_name, list(groups))
        cfg = bases[groups].copy()
        OmegaConf.set_struct(cfg, False)
        for o in plain:
            OmegaConf.update(cfg, o.get_key_element(), o.value(), merge=False)
        out.append(cfg)
    return out


def experiment_jobs(experiment: str, config_name: str = "evaluate", extra: Iterable[str] = ()) -> list[list[str]]:
    """The override lists of every job ``python -m pipelines.<config_name> -m experiment=<experiment>`` runs."""
    base = [f"experiment={experiment}", *extra]
    fixed = [o.input_line for o in OverridesParser.create().parse_overrides(base) if not o.is_sweep_override()]
    cfg = compose(config_name, fixed, with_hydra=True)  # the experiment's sweeper params (compose takes no sweep)
    return expand([*sweep_params(cfg), *base])


def experiment_cells(experiment: str, extra: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The resolved, validated evaluate config of every cell of an experiment's sweep."""
    return [cell for cell, _ in _swept_cells(experiment, extra)]


def _swept_cells(experiment: str, extra: Iterable[str]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each cell of the experiment's sweep with the values of the keys the sweep varies (``{"cost.lam": 0.02,
    "cost.d": 0.0}``: the keys whose value differs between its jobs, each typed as Hydra parses it)."""
    from camdf.pipeline.checks.values import resolve, validate

    jobs = experiment_jobs(experiment, extra=extra)
    varying = varying_keys(jobs)
    parser = OverridesParser.create()
    values = [{o.key_or_group: o.value() for o in parser.parse_overrides(job)} for job in jobs]
    cells = [validate(resolve(cfg), "evaluate") for cfg in compose_jobs("evaluate", jobs)]
    return [(cell, {k: v.get(k) for k in varying}) for cell, v in zip(cells, values)]


def experiment_keys(experiments: Iterable[str], data_dir: str | Path, extra: Iterable[str] = ()
                    ) -> tuple[dict[str, dict[str, dict[str, Any]]], list[str]]:
    """The cells of each experiment's sweep at the current code and data, by cell key, and what could not be keyed.

    Returns ``{experiment: {cell key: {swept key: value}}}`` (the values of the keys its sweep varies: what
    tells its cells apart, :func:`_swept_cells`) and the messages of the cells without a key: a cell whose
    domain is not built under ``data_dir`` has none yet; the tables that need it are skipped. A cell two
    experiments share (the same config) has one key and is listed under each.
    """
    from camdf.pipeline.identity import cell_key

    out: dict[str, dict[str, dict[str, Any]]] = {}  # camdf.reporting.experiment_cells.ExperimentCells
    missing: list[str] = []
    for name in experiments:
        cells = out.setdefault(name, {})
        for cell, swept in _swept_cells(name, extra):
            try:
                cells[cell_key(cell, Path(data_dir))] = swept
            except FileNotFoundError:
                missing.append(f"experiment {name}: domain `{cell['domain']['name']}` is not built under {data_dir}")
    return out, sorted(set(missing))


class CheckSweep(Callback):
    """Hydra callback: before a multirun starts, compose and check every job; one bad job refuses the sweep.

    The stage (``evaluate``, ``train``, ...) is the primary config's name. Nothing has
    been written yet at this point (Hydra makes the sweep folder after the callback).
    """

    def on_multirun_start(self, config: DictConfig, config_name: str | None = None, **kwargs: Any) -> None:
        from camdf.pipeline.checks.gates import check_tree
        from camdf.pipeline.checks.kinds import check_kinds
        from camdf.pipeline.checks.values import SCHEMAS, ConfigError, refuse, resolve, validate

        if config_name not in SCHEMAS:
            return
        task = list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
        try:
            overrides = [*sweep_params(config), *task]
            jobs = expand(overrides)
            searchpath = searchpath_overrides(config)  # a user's config folder (hydra.searchpath=[...])
            if not jobs:  # Hydra would run nothing, exit 0, and the sweep's record would be rewritten as done
                empty = [o.get_key_element() for o in OverridesParser.create().parse_overrides(overrides)
                         if o.is_sweep_override() and not list(o.sweep_string_iterator())]
                refuse(ConfigError(empty[0] if empty else "hydra.sweeper.params", "an empty sweep",
                                   "at least one value to sweep"))
            for cfg in compose_jobs(config_name, [[*job, *searchpath] for job in jobs]):
                resolved = resolve(cfg)
                check_tree(cfg, resolved)  # code, paths and secrets of every job (camdf.pipeline.checks.gates)
                check_kinds(resolved, config_name, SCHEMAS.get(config_name, {}))  # every key's kind (camdf.pipeline.checks.kinds)
                validate(resolved, config_name)
        except ConfigError as err:
            refuse(err)
        except ValueError as err:
            what = "at most CAMDF_MAX_JOBS jobs" if "CAMDF_MAX_JOBS" in str(err) else "discrete sweeps"
            refuse(ConfigError("hydra.sweeper.params", str(err), what))
