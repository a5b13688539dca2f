"""The stage config schema: check and normalise a resolved config before any data is read or any run is made.

Every stage's entry point calls :func:`checked` first. A value of the wrong type,
out of range or not among the known names stops the stage with one line naming
the key, the value and what is expected, and exit code 2; the Hydra output folder
the refused job made is removed, so a refused run leaves nothing behind.

Numbers are normalised on the way (``cost.d=1`` and ``cost.d=1.0`` are one value,
a float; counts are ints), so the cell key, the logged params and the tables'
selection all see one spelling of each value.
"""

from __future__ import annotations

import math
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from camdf.core.payoff import CELL_KINDS, PAYOFF_KINDS
from camdf.costs import REGIMES, declared_params
from camdf.data.io import DOMAIN_NAME
from camdf.data.model import CELL_LABEL_SOURCES
from camdf.integrations.registry import measured_params, measured_regimes
from camdf.pipeline.identity import CONF_DIR
from camdf.pipeline.checks.errors import (  # noqa: F401  (ConfigError, _shown and the converters re-exported)
    BUILT_IN_CONVERTERS, MISSING, ConfigError, _shown, converters, get_dotted,
)
from camdf.policies import CARDS, methods, policy_methods
from camdf.rankers import SCORER_FUNCTIONS

PROTOCOLS = ("kfold", "split", "group")
#: Every cost regime a config may name: the computed ones and the integrations' measured ones.
COST_REGIMES = (*REGIMES, *measured_regimes())
EXPERIMENTS_DIR = CONF_DIR / "experiment"




# -- value checks: each takes (key, value) and returns the normalised value or raises ConfigError ----------------
@dataclass(frozen=True)
class Number:
    """A finite real (or integer) number in a range; returned as float (or int)."""

    lo: float | None = None
    hi: float | None = None
    hi_open: bool = False
    integer: bool = False
    lo_open: bool = False

    def expected(self) -> str:
        what = "an integer" if self.integer else "a finite number"
        show = (lambda v: f"{int(v)}") if self.integer else (lambda v: f"{v:g}")
        if self.lo is not None and self.hi is not None:
            return f"{what} in {'(' if self.lo_open else '['}{show(self.lo)}, {show(self.hi)}{')' if self.hi_open else ']'}"
        if self.lo is not None:
            return f"{what} {'>' if self.lo_open else '>='} {show(self.lo)}"
        return what

    def __call__(self, key: str, value: Any) -> int | float:
        # An int is compared as an int: float() of a 400-digit integer overflows.
        ok = not isinstance(value, bool) and (
            isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)))
        if ok and self.integer:
            ok = isinstance(value, int) or value.is_integer()
        if ok and self.lo is not None:
            ok = value > self.lo if self.lo_open else value >= self.lo
        if ok and self.hi is not None:
            ok = value < self.hi if self.hi_open else value <= self.hi
        try:
            if ok:
                return int(value) if self.integer else float(value)
        except OverflowError:
            pass
        raise ConfigError(key, _shown(value), self.expected())




@dataclass(frozen=True)
class OneOf:
    """One of a set of names: fixed, or a function returning them (a registry query, read at each check)."""

    names: Sequence[str] | Callable[[], Sequence[str]]

    def __call__(self, key: str, value: Any) -> str:
        names = self.names() if callable(self.names) else self.names
        if not isinstance(value, str) or value not in names:
            raise ConfigError(key, value, "one of " + ", ".join(sorted(names)))
        return value


@dataclass(frozen=True)
class ListOf:
    """A non-empty list whose items pass ``item``; duplicates are refused."""

    item: Callable[[str, Any], Any]

    def __call__(self, key: str, value: Any) -> list:
        if not isinstance(value, (list, tuple)) or not value:
            raise ConfigError(key, value, "a non-empty list")
        out = [self.item(f"{key}[{i}]", v) for i, v in enumerate(value)]
        if len(set(map(repr, out))) != len(out):
            raise ConfigError(key, value, "a list without repeated items")
        return out


@dataclass(frozen=True)
class Optional:
    """None, or a value that passes ``check``."""

    check: Callable[[str, Any], Any]

    def __call__(self, key: str, value: Any) -> Any:
        return None if value is None else self.check(key, value)


def flag(key: str, value: Any) -> bool:
    """true or false (a YAML boolean, not a string or a number)."""
    if not isinstance(value, bool):
        raise ConfigError(key, _shown(value), "true or false")
    return value


def plain_name(key: str, value: Any) -> str:
    """A name that is safe as one folder name: letters, digits, ``_`` and ``-``, not starting with ``-``."""
    if not isinstance(value, str) or not DOMAIN_NAME.fullmatch(value):
        raise ConfigError(key, value, "a plain name (letters, digits, `_`, `-`)")
    return value


_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def label_name(key: str, value: Any) -> str:
    """A name that becomes one folder name: :func:`plain_name`, also ``.`` inside (``noisy_oracle_q0.5``), never ``..``."""
    if not isinstance(value, str) or not _LABEL.fullmatch(value) or ".." in value:
        raise ConfigError(key, value, "a plain name (letters, digits, `_`, `-`, `.` inside; no `/` or `..`)")
    return value




def converter_target(key: str, value: Any) -> str:
    """A ``_target_`` from :func:`converters` (the allow-list of code a domain config may run)."""
    allowed = converters()
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(key, _shown(value), "one of the built-in converters " + ", ".join(allowed))
    return value


def group_key(key: str, value: Any) -> str | None:
    """``folds.group_by``: None (each task's ``group``) or ``meta.<field>`` (a field of each task's ``meta``)."""
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"meta\.[A-Za-z0-9_]+", value):
        raise ConfigError(key, _shown(value), "null (each task's group) or meta.<field> (a field of each task's meta)")
    return value


def experiment_name(key: str, value: Any) -> str:
    """The name of an experiment file under ``conf/experiment/``."""
    names = sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))
    if not isinstance(value, str) or value not in names:
        raise ConfigError(key, value, "one of " + ", ".join(names))
    return value


def override_list(key: str, value: Any) -> list[str]:
    """A list of Hydra override strings (``key=value``), possibly empty."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and "=" in v for v in value):
        raise ConfigError(key, value, "a list of overrides like [stats.n_resamples=500]")
    return list(value)


#: Upper bounds that keep every product finite: lambda times a list's cost (mean 1 per tool, or list_cost)
#: stays far below float's range, a cost dispersion past 1000 sends every cost but the largest to 0, and
#: a seed or count is a C int for LightGBM and scikit-learn (seed + repeat included).
MAX_LAM = 1e6
MAX_DISPERSION = 1e3
MAX_INT = 2**31 - 1
#: More bootstrap resamples than this add nothing an interval can show and hold tasks x B floats per method.
MAX_RESAMPLES = 100_000
LAM = Number(lo=0, hi=MAX_LAM)
#: A search round priced above this many tools is no fallback (null says so); the noise is in score SDs.
MAX_SEARCH_COST = 1e6
MAX_SEARCH_NOISE = 1e3
SEED = Number(lo=0, hi=MAX_INT, integer=True)


def count(lo: int) -> Number:
    """An integer count in ``[lo, 2**31 - 1]``."""
    return Number(lo=lo, hi=MAX_INT, integer=True)


CELL = {
    "domain.name": plain_name,
    "scorer.name": OneOf(tuple(SCORER_FUNCTIONS)),
    "cost.regime": OneOf(COST_REGIMES),
    "cost.lam": LAM,
    "cost.d": Number(lo=0, hi=MAX_DISPERSION),
    "method.names": ListOf(OneOf(methods)),
    "payoff": OneOf(CELL_KINDS),
    "search.cost": Optional(Number(lo=0, hi=MAX_SEARCH_COST)),
    "search.k": count(1),
    "search.rounds": Number(lo=1, hi=100, integer=True),
    "search.noise": Number(lo=0, hi=MAX_SEARCH_NOISE),
    "search.aware": flag,
    "seed": SEED,
    "label_noise": Number(lo=0, hi=1, hi_open=True),
    "label_source": OneOf(CELL_LABEL_SOURCES),
    "lambda_grid": ListOf(LAM),
    "folds.n_folds": count(2),
    "folds.protocol": OneOf(PROTOCOLS),
    "folds.repeats": count(1),
    "folds.group_by": group_key,
    "candidates.top_k": Optional(count(1)),
    "candidates.fit_depth": Optional(count(1)),
    "list_cost": Optional(Number(lo=0, hi=MAX_LAM, lo_open=True)),
    "stats.n_resamples": Number(lo=100, hi=MAX_RESAMPLES, integer=True),
    "stats.delta": Number(lo=0, hi=1, hi_open=True),
    "stats.calibration": flag,
    "transfer.leave_out": flag,
    "transfer.max_tasks": Optional(count(1)),
}
SCHEMAS: dict[str, dict[str, Callable[[str, Any], Any]]] = {
    "data": {"domain.name": plain_name},
    "scores": {k: CELL[k] for k in ("domain.name", "scorer.name", "cost.regime", "cost.lam", "cost.d",
                                    "folds.n_folds", "folds.protocol", "folds.group_by")} | {"random_state": SEED},
    "evaluate": CELL,
    # The shipped policy is fitted under the exact or partial payoff; a fallback-aware one is method fallback_set.
    "train": CELL | {"payoff": OneOf(PAYOFF_KINDS), "policy.method": OneOf(lambda: ("auto", *policy_methods())),
                     "policy.candidates": ListOf(OneOf(policy_methods)),
                     "policy.lam_grid": Optional(ListOf(LAM)),
                     "policy.registered_name": Optional(plain_name), "policy.alias": plain_name},
    "default_policy": CELL | {"policy.method": OneOf(policy_methods)},
    "tables": {
        "main.domain": plain_name, "main.scorer": plain_name, "main.regime": OneOf(COST_REGIMES), "main.lam": LAM,
        "main.d": Number(lo=0, hi=MAX_DISPERSION), "main.seed": SEED, "main.table2_scorers": ListOf(plain_name),
        "main.payoff": OneOf(PAYOFF_KINDS), "main.protocol": OneOf(PROTOCOLS),
        "experiments": Optional(ListOf(experiment_name)),
        "cell_overrides": Optional(override_list),
    },
}


#: Names that become a folder or a path part, checked in every stage that has them.
NAMES = {"domain.name": plain_name, "scorer.label": label_name, "tracking.experiment": label_name}
for _stage in SCHEMAS.values():
    _stage.update({k: v for k, v in NAMES.items() if k not in _stage})
SCHEMAS["data"]["domain.converter._target_"] = converter_target

#: Config values that become paths the stages write, each confined to the folder a root key names:
#: the one check that no written file lands outside ``paths.output_dir`` (``data_dir`` for data) or the checkout.
#: The roots themselves (``paths.root_dir``, ``data_dir``, ``output_dir``, ``tracking.artifact_root``) are the
#: user's to choose; the folders a domain reads (``domain.converter.folder``, ``domain.inputs``) are only read.
CONFINED = {
    "paths.cache_dir": "paths.output_dir",
    "paths.log_dir": "paths.output_dir",
    "out_dir": "paths.output_dir",
    "policy.out_dir": "paths.output_dir",
    "policy.ranker_dir": "paths.output_dir",
    "cost.params.cache_dir": "paths.output_dir",
    "readme": "paths.root_dir",
    "headline": "paths.root_dir",
}


def check_confined(cfg: dict[str, Any]) -> None:
    """Refuse a path value of :data:`CONFINED` that does not resolve inside its root (``..`` and links resolved)."""
    for key, root_key in CONFINED.items():
        value, root = _get(cfg, key), _get(cfg, root_key)
        if value is _MISSING or value is None or root is _MISSING or root is None:
            continue
        if not isinstance(value, str) or not value:
            raise ConfigError(key, value, f"a path inside {root_key} ({root})")
        path, top = Path(value).resolve(), Path(str(root)).resolve()
        if path != top and top not in path.parents:
            raise ConfigError(key, _shown(value), f"a path inside {root_key} ({root})")


_MISSING, _get = MISSING, get_dotted  # an absent key is _MISSING (a present one may be None)


def _set(cfg: dict, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = cfg
    for part in parents:
        node = node[part]
    node[last] = value


def validate(cfg: dict[str, Any], stage: str) -> dict[str, Any]:
    """Check the keys of ``stage``'s schema in ``cfg`` (a resolved container) and normalise them in place.

    A key the config does not have is left alone (the stage's own defaults hold it); a
    fold count is also checked against the domain's task count when ``data/<name>`` is built.
    """
    for key, check in SCHEMAS[stage].items():
        value = _get(cfg, key)
        if value is not _MISSING:
            _set(cfg, key, check(key, value))
    check_confined(cfg)
    dials = _get(cfg, "method.dials")
    if dials is not _MISSING:
        names = _get(cfg, "method.names")
        _set(cfg, "method.dials", method_dials(dials, [] if names is _MISSING else names))
    seed, repeats = _get(cfg, "seed"), _get(cfg, "folds.repeats")
    if _MISSING not in (seed, repeats) and seed + repeats - 1 > MAX_INT:  # repeat r runs at seed + r
        raise ConfigError("seed", seed, f"an integer in [0, {MAX_INT - repeats + 1}] (seed + folds.repeats - 1 "
                                        f"<= {MAX_INT})")
    check_cost_params(cfg)
    n_folds, protocol = _get(cfg, "folds.n_folds"), _get(cfg, "folds.protocol")
    counts = _domain_counts(cfg)
    if counts is not None and n_folds is not _MISSING and protocol in (_MISSING, "kfold", "group"):
        n, what = (counts[1], "fold groups") if protocol == "group" else (counts[0], "tasks")
        if n is not None and n_folds > n:
            raise ConfigError("folds.n_folds", n_folds, f"an integer in [2, {n}] (the {what} of the domain)")
    return cfg


def check_cost_params(cfg: dict[str, Any]) -> None:
    """``cost.params`` gives only parameters its regime accepts (a declared regime's keyword-only arguments, a
    measured regime's declared params): ConfigError naming the first other one and what the regime accepts."""
    regime, params = _get(cfg, "cost.regime"), _get(cfg, "cost.params")
    if regime is _MISSING or not isinstance(params, dict):
        return
    accepted = declared_params(regime) if regime in REGIMES else measured_params().get(regime, tuple(params))
    for key in params:
        if key not in accepted:
            raise ConfigError(f"cost.params.{key}", params[key],
                              f"a parameter of cost regime {regime}: {', '.join(accepted) or 'it takes none'}")


def method_dials(dials: Any, methods: Sequence[str]) -> dict[str, float]:
    """``method.dials`` checked against the dials the methods' rules declare (name, range; :class:`Dial`).

    Every entry must be a dial of at least one of ``methods`` (the cell's ``method.names``) and
    in that dial's range; null or ``{}``: every rule at its own defaults.
    """
    if dials is None:
        return {}
    if not isinstance(dials, dict):
        raise ConfigError("method.dials", _shown(dials), "a mapping of dial name to value, e.g. {name: value}")
    owned = {d.name: d for m in methods if m in CARDS for d in CARDS[m].dials}
    out = {}
    for name, value in dials.items():
        key = f"method.dials.{name}"
        if name not in owned:
            have = ", ".join(f"{d.describe()}" for d in owned.values()) or "none"
            raise ConfigError(key, _shown(value), f"a dial of one of the cell's methods ({', '.join(methods)}; "
                                                  f"their dials: {have})")
        try:
            out[name] = owned[name].check(value, key)
        except ValueError:
            raise ConfigError(key, _shown(value), owned[name].describe()) from None
    return out


def _domain_counts(cfg: dict) -> tuple[int, int | None] | None:
    """Tasks and fold groups of the built domain, from its manifest (no task is read); None when it is not built."""
    import json

    data_dir, name = _get(cfg, "paths.data_dir"), _get(cfg, "domain.name")
    if _MISSING in (data_dir, name):
        return None
    manifest = Path(data_dir, name, "manifest.json")
    try:
        summary = json.loads(manifest.read_text(encoding="utf-8"))["summary"]
        groups = summary.get("n_groups")
        return int(summary["n_tasks"]), int(groups) if groups is not None else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """``OmegaConf.to_container(cfg, resolve=True)``, a failed interpolation reported as a :class:`ConfigError`."""
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or "config"
        raise ConfigError(str(key), getattr(err, "msg", str(err)).splitlines()[0], "a value that resolves") from None


#: The stages that read ``data/<domain>/``: its manifest is checked before they read it or make a run.
READS_DATA = ("scores", "evaluate", "train")


def checked(cfg: DictConfig, stage: str) -> dict[str, Any]:
    """The stage's resolved, validated and normalised config; on a bad value, :func:`refuse`.

    A stage that reads ``data/<domain>/`` (:data:`READS_DATA`) also checks that the
    domain is built and matches its manifest (:func:`camdf.pipeline.data_stage.verify_built`),
    so ``domain=airline`` where only retail is built says "run make data" before any cell
    key is hashed or any run is made.
    """
    from camdf.pipeline.data_stage import DataNotReady, verify_built

    from camdf.pipeline.checks.gates import check_tree
    from camdf.pipeline.checks.kinds import check_kinds

    output_dir = OmegaConf.select(cfg, "paths.output_dir", default=None, throw_on_resolution_failure=False)
    try:
        out = resolve(cfg)
        check_tree(cfg, out)  # code, paths and secrets (camdf.pipeline.checks.gates)
        check_kinds(out, stage, SCHEMAS.get(stage, {}))  # every key's kind, from the shipped configs (camdf.pipeline.checks.kinds)
        out = validate(out, stage)
        if stage in READS_DATA:
            verify_built(Path(out["paths"]["data_dir"]), out["domain"]["name"])
    except (ConfigError, DataNotReady) as err:
        refuse(err, output_dir)
    warn_unswept(stage)
    return out


def warn_unswept(stage: str) -> None:
    """Warn (one line on stderr) when a single run's experiment defines a sweep whose keys it leaves at their defaults.

    ``python -m pipelines.evaluate experiment=smoke`` runs one cell, not the experiment's
    sweep (that needs ``-m``). It is a warning, not a refusal: one cell of an experiment,
    its swept keys set on the command line (``experiment=smoke cost.lam=0.12 cost.d=1``), is
    a legitimate way to rerun or inspect that cell.
    """
    from hydra.core.hydra_config import HydraConfig

    if stage not in ("evaluate", "train") or not HydraConfig.initialized():
        return
    hydra = HydraConfig.get()
    experiment = hydra.runtime.choices.get("experiment")
    if hydra.mode.name == "MULTIRUN" or not experiment:
        return
    swept = [str(k) for k in (OmegaConf.select(hydra, "sweeper.params", default=None) or {})]
    given = {o.split("=", 1)[0].lstrip("+~") for o in hydra.overrides.task}
    left = [k for k in swept if k not in given]
    if left:
        print(f"warning: experiment={experiment} sweeps {', '.join(left)} only with -m; this single run uses "
              f"their defaults (add -m to run the sweep)", file=sys.stderr)


def open_tracker(cfg: dict[str, Any]):
    """The stage's :class:`~camdf.tracking.client.Tracker`; an unreachable tracking server is refused (exit 2)."""
    from camdf.tracking.client import Tracker
    from camdf.tracking.probe import TrackingUnreachable

    t = cfg["tracking"]
    try:
        root = _get(cfg, "paths.root_dir")
        return Tracker(t["uri"], t["experiment"], t.get("artifact_root"),
                       roots=(root,) if isinstance(root, str) and root else ())
    except TrackingUnreachable as err:
        refuse(err, _get(cfg, "paths.output_dir") if _get(cfg, "paths.output_dir") is not _MISSING else None)


def refuse(err: Exception, output_dir: str | None = None, code: int = 2):
    """Print ``error: <err>`` as one line, remove what Hydra wrote for this job, exit with ``code``.

    Hydra writes the job's ``.hydra/`` folder (and a sweep's ``multirun.yaml``) before the
    stage runs; a refused job removes its own folder and the folders that are left empty
    by that, up to ``output_dir`` (kept). A folder holding anything else is not touched.
    """
    from camdf.common.process import INTERRUPTED, exit_interrupted
    from camdf.common.uri import safe_uri

    print(f"error: {safe_uri(str(err))}", file=sys.stderr)
    _remove_job_folder(output_dir)
    if code == INTERRUPTED:  # Ctrl-C: 130 for certain (CPython may exit by SIGINT otherwise)
        exit_interrupted()
    raise SystemExit(code)


def _remove_job_folder(output_dir: str | None) -> None:
    from hydra.core.hydra_config import HydraConfig

    if output_dir is None or not HydraConfig.initialized():
        return
    stop = Path(output_dir).resolve()
    try:
        job_dir = Path(HydraConfig.get().runtime.output_dir).resolve()
    except Exception:  # noqa: BLE001  Hydra failed before it chose the job folder (`--cfg job`): nothing to remove
        return
    if stop not in job_dir.parents or not job_dir.is_dir():
        return
    if any(p.name != ".hydra" and p.suffix != ".log" for p in job_dir.iterdir()):
        return
    shutil.rmtree(job_dir)
    parent = job_dir.parent
    while parent != stop:
        rest = list(parent.iterdir())
        if any(p.name != "multirun.yaml" for p in rest):
            break
        for p in rest:
            p.unlink()
        parent.rmdir()
        parent = parent.parent
