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
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from camdf.core.payoff import KINDS
from camdf.costs.regimes import REGIMES
from camdf.data.io import DOMAIN_NAME
from camdf.pipeline.assembly import LABEL_SOURCES
from camdf.pipeline.identity import CONF_DIR
from camdf.policies import METHODS
from camdf.rankers.scoring import SCORERS
from camdf.runtime.policy import POLICY_METHODS

PROTOCOLS = ("kfold", "split", "group")
EXPERIMENTS_DIR = CONF_DIR / "experiment"


class ConfigError(ValueError):
    """A config value the stage cannot run with: ``key: expected <what>, got <value>``."""

    def __init__(self, key: str, value: Any, expected: str):
        self.key, self.value, self.expected = key, value, expected
        super().__init__(f"{key}: expected {expected}, got {value!r}")


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
        if self.lo is not None and self.hi is not None:
            return f"{what} in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        if self.lo is not None:
            return f"{what} {'>' if self.lo_open else '>='} {self.lo:g}"
        return what

    def __call__(self, key: str, value: Any) -> int | float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if ok and self.integer:
            ok = float(value).is_integer()
        if ok and self.lo is not None:
            ok = value > self.lo if self.lo_open else value >= self.lo
        if ok and self.hi is not None:
            ok = value < self.hi if self.hi_open else value <= self.hi
        if not ok:
            raise ConfigError(key, value, self.expected())
        return int(value) if self.integer else float(value)


@dataclass(frozen=True)
class OneOf:
    """One of a fixed set of names."""

    names: Sequence[str]

    def __call__(self, key: str, value: Any) -> str:
        if not isinstance(value, str) or value not in self.names:
            raise ConfigError(key, value, "one of " + ", ".join(sorted(self.names)))
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


def plain_name(key: str, value: Any) -> str:
    """A name that is safe as one folder name: letters, digits, ``_`` and ``-``, not starting with ``-``."""
    if not isinstance(value, str) or not DOMAIN_NAME.fullmatch(value):
        raise ConfigError(key, value, "a plain name (letters, digits, `_`, `-`)")
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


LAM = Number(lo=0)
SEED = Number(lo=0, integer=True)
CELL = {
    "domain.name": plain_name,
    "scorer.name": OneOf(tuple(SCORERS)),
    "cost.regime": OneOf(REGIMES),
    "cost.lam": LAM,
    "cost.d": Number(lo=0),
    "method.names": ListOf(OneOf(METHODS)),
    "method.alpha": Number(lo=0, hi=1, lo_open=True, hi_open=True),
    "payoff": OneOf(KINDS),
    "seed": SEED,
    "label_noise": Number(lo=0, hi=1, hi_open=True),
    "label_source": OneOf(LABEL_SOURCES),
    "lambda_grid": ListOf(LAM),
    "folds.n_folds": Number(lo=2, integer=True),
    "folds.protocol": OneOf(PROTOCOLS),
    "folds.repeats": Number(lo=1, integer=True),
    "candidates.top_k": Optional(Number(lo=1, integer=True)),
    "list_cost": Optional(Number(lo=0, lo_open=True)),
    "stats.n_resamples": Number(lo=100, integer=True),
    "stats.delta": Number(lo=0, hi=1, hi_open=True),
}
SCHEMAS: dict[str, dict[str, Callable[[str, Any], Any]]] = {
    "data": {"domain.name": plain_name},
    "scores": {k: CELL[k] for k in ("domain.name", "scorer.name", "cost.regime", "cost.lam", "cost.d",
                                    "folds.n_folds", "folds.protocol")} | {"random_state": SEED},
    "evaluate": CELL,
    "train": CELL | {"policy.method": OneOf(("auto", *POLICY_METHODS)),
                     "policy.candidates": ListOf(OneOf(POLICY_METHODS)),
                     "policy.lam_grid": Optional(ListOf(LAM)),
                     "policy.registered_name": Optional(plain_name), "policy.alias": plain_name},
    "tables": {
        "main.domain": plain_name, "main.scorer": plain_name, "main.regime": OneOf(REGIMES), "main.lam": LAM,
        "main.d": Number(lo=0), "main.seed": SEED, "main.table2_scorers": ListOf(plain_name),
        "experiments": Optional(ListOf(experiment_name)),
        "cell_overrides": Optional(override_list),
        **{f"main.{k}": ListOf(OneOf(METHODS)) for k in ("methods", "grid_methods", "noise_methods",
                                                          "ablation_methods", "risk_methods")},
    },
}


_MISSING = object()


def _get(cfg: dict, dotted: str) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


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
    n_folds, protocol = _get(cfg, "folds.n_folds"), _get(cfg, "folds.protocol")
    n_tasks = _task_count(cfg)
    if n_tasks is not None and protocol in (_MISSING, "kfold") and n_folds is not _MISSING and n_folds > n_tasks:
        raise ConfigError("folds.n_folds", n_folds, f"an integer in [2, {n_tasks}] (the tasks of the domain)")
    return cfg


def _task_count(cfg: dict) -> int | None:
    """Tasks of the built domain, from its manifest (no task is read); None when it is not built yet."""
    import json

    data_dir, name = _get(cfg, "paths.data_dir"), _get(cfg, "domain.name")
    if _MISSING in (data_dir, name):
        return None
    manifest = Path(data_dir, name, "manifest.json")
    try:
        return int(json.loads(manifest.read_text(encoding="utf-8"))["summary"]["n_tasks"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """``OmegaConf.to_container(cfg, resolve=True)``, a failed interpolation reported as a :class:`ConfigError`."""
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or "config"
        raise ConfigError(str(key), getattr(err, "msg", str(err)).splitlines()[0], "a value that resolves") from None


def checked(cfg: DictConfig, stage: str) -> dict[str, Any]:
    """The stage's resolved, validated and normalised config; on a bad value, :func:`refuse`."""
    try:
        return validate(resolve(cfg), stage)
    except ConfigError as err:
        refuse(err, OmegaConf.select(cfg, "paths.output_dir", default=None, throw_on_resolution_failure=False))


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
    print(f"error: {err}", file=sys.stderr)
    _remove_job_folder(output_dir)
    raise SystemExit(code)


def _remove_job_folder(output_dir: str | None) -> None:
    from hydra.core.hydra_config import HydraConfig

    if output_dir is None or not HydraConfig.initialized():
        return
    stop = Path(output_dir).resolve()
    job_dir = Path(HydraConfig.get().runtime.output_dir).resolve()
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
