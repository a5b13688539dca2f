"""The gates in front of Hydra: a stage's command line and the config it composes, checked before Hydra acts on either.

:func:`preflight` runs the checks of :mod:`camdf.pipeline.checks.gates` (code, paths, secrets) and of
:mod:`camdf.pipeline.checks.bounds` (config folders, fan-out) on the command line's overrides and on the config
they compose, Hydra's own node included, with each sweep's first value and again with each later value of a
sweep that can name another file, a Hydra or path setting or an interpolation. A refusal is one line and
exit 2.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Sequence

from camdf.pipeline.checks.bounds import check_config_folders, check_fanout
from camdf.pipeline.checks.choices import hydra_overrides
from camdf.pipeline.checks.gates import (CONFIG_DIR_OPTIONS, GateError, _get, check_code, check_overrides, check_paths,
                                  check_writable)
from camdf.pipeline.checks.interpolation import as_hydra_runs, check_expansion, resolved_now
from camdf.pipeline.checks.errors import ConfigError


def _check_composed(cfg: Any, multirun: bool, n_jobs: int = 1) -> str | None:
    """:func:`check_code` (as written and as Hydra instantiates it), the launcher's fan-out over the sweep's
    ``n_jobs``, :func:`check_paths` and :func:`check_writable` of one composed config; its resolved
    ``paths.output_dir`` (None when not known)."""
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(cfg, resolve=False)
    check_expansion(raw)  # before anything resolves it
    check_code(raw)
    params = (raw.get("hydra", {}).get("sweeper") or {}).get("params") or {}
    check_overrides([f"{k}={v}" for k, v in params.items()], where="sweeper's params")
    now = resolved_now(as_hydra_runs(cfg, multirun))
    check_code(now)  # as Hydra instantiates it (callbacks, launcher, sweeper, logging, the task's nodes)
    check_fanout(_get(now, "hydra.launcher"), n_jobs)
    task = OmegaConf.masked_copy(cfg, [k for k in cfg.keys() if k != "hydra"])
    try:
        resolved = OmegaConf.to_container(task, resolve=True)
    except Exception:  # noqa: BLE001  an interpolation that fails is the schema's to name
        if isinstance(_get(now, "paths.output_dir"), str) and "${" not in _get(now, "paths.output_dir"):
            check_paths({"paths": {"output_dir": _get(now, "paths.output_dir")}, "hydra": now.get("hydra")})
        return None
    resolved["hydra"] = now.get("hydra")
    check_paths(resolved)
    check_writable(resolved)
    return _get(resolved, "paths.output_dir")


def _value_text(value: Any) -> str:
    return str(getattr(value, "text", value))


def _risky(key: str, values: Sequence[Any], groups: set[str]) -> bool:
    """Whether a sweep's later values can change what the config names beyond the task's values a job's own schema
    checks: a config group (another file, Hydra's logging included), a Hydra or path key, or an interpolation."""
    return (key.lstrip("+~") in groups or key.startswith(("hydra", "paths."))
            or any("${" in _value_text(v) for v in values))


def _sweep_variants(parsed: Sequence[Any], groups: set[str]) -> list[list[str]]:
    """One override list per later value of each risky sweep (:func:`_risky`), every other sweep at its first value:
    each value of a sweep is composed and checked once, not only the first (a product of every sweep is not needed,
    since a value names what it names alone)."""
    firsts, sweeps = [], []
    for o in parsed:
        if o.is_sweep_override():
            values = [_value_text(v) for v in o.sweep_string_iterator()]
            prefix = f"{'+' if o.is_add() else ''}{o.key_or_group}="
            firsts.append(prefix + values[0] if values else None)
            sweeps.append((len(firsts) - 1, prefix, values[1:] if _risky(o.key_or_group, values, groups) else []))
        else:
            firsts.append(o.input_line)
    variants = [[f for f in firsts if f is not None]]
    for at, prefix, later in sweeps:
        for value in later:
            variants.append([prefix + value if i == at else f for i, f in enumerate(firsts) if f is not None])
    return variants


def _compose(config_name: str, overrides: Sequence[str]):
    from hydra import compose, initialize_config_dir

    from camdf.pipeline.identity import CONF_DIR

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose(config_name, overrides=list(overrides), return_hydra_config=True)


@dataclass(frozen=True)
class Checked:
    """What :func:`preflight` found: the resolved ``paths.output_dir`` (None when not known) and whether the stage
    composed with every override (then :func:`camdf.pipeline.checks.choices.check_keys` need not compose it again)."""

    output_dir: str | None = None
    composed_whole: bool = False


def preflight(config_name: str, argv: Sequence[str] | None = None) -> Checked:
    """Check the command line and its composed config (Hydra's node included) before Hydra acts on either.

    Hydra instantiates callbacks, the launcher and the sweeper and makes the job folder
    before any stage code runs, so they are checked here: the overrides (:func:`check_overrides`,
    also a sweep's ``hydra.sweeper.params``), then the config composed with each sweep's
    first value, and again with each later value of a sweep that can name another file, a
    Hydra or path setting or an interpolation (:func:`_sweep_variants`, the command line's and
    the sweeper's params), each checked by :func:`check_code` over every node and
    :func:`check_paths`. A refusal is one line and exit 2; a config that does not compose is
    left to Hydra's own message. An output folder that cannot be written is one line and exit 1
    (:func:`check_writable`).

    Returns what it found (:class:`Checked`).
    """
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    import camdf.pipeline.resolvers  # noqa: F401  (paths.root_dir's resolver)

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        for a in args:
            if a.split("=", 1)[0] in CONFIG_DIR_OPTIONS:
                raise GateError(a.split("=", 1)[0], a, "hydra.searchpath=[file:///your/conf] to add a config "
                                                      "folder (its configs are checked like conf/'s)")
        overrides = hydra_overrides(args)
        check_overrides(overrides)
        if GlobalHydra.instance().is_initialized():
            return Checked()
        check_config_folders(overrides)  # before Hydra reads them: no alias expansion, no blocking read
        parser = OverridesParser.create()
        try:
            parsed = parser.parse_overrides(overrides)
            first = _sweep_variants(parsed, set())[0]
            cfg = _compose(config_name, first)
        except Exception:  # noqa: BLE001  not composable: Hydra's own run says why (nothing is instantiated)
            return Checked()
        multirun = any(a in ("-m", "--multirun") for a in args) or \
            str(OmegaConf.select(cfg, "hydra.mode", default=None, throw_on_resolution_failure=False)) == "MULTIRUN"
        if not multirun:
            return Checked(_check_composed(cfg, multirun), composed_whole=True)
        from camdf.pipeline.sweeps import job_count  # a sweep's only: a single run does not import it

        params = [f"{k}={v}" for k, v in ((OmegaConf.to_container(cfg.hydra.sweeper, resolve=False) or {})
                                          .get("params") or {}).items()]
        try:
            n_jobs = job_count([*params, *overrides])  # the command line after the sweeper's params, as in Hydra
        except Exception:  # noqa: BLE001  Hydra's sweeper names it
            n_jobs = 1
        checked = Checked(_check_composed(cfg, multirun, n_jobs), composed_whole=True)
        groups = set(OmegaConf.to_container(cfg.hydra.runtime.choices, resolve=False))
        try:
            swept = parser.parse_overrides(params)
            variants = _sweep_variants(parsed, groups)[1:] + [first + v for v in _sweep_variants(swept, groups)[1:]]
        except Exception:  # noqa: BLE001  Hydra's sweeper names it
            variants = []
        for variant in variants:
            try:
                later = _compose(config_name, variant)
            except Exception:  # noqa: BLE001  that job's own composition fails and says why
                continue
            _check_composed(later, multirun, n_jobs)
        return checked
    except ConfigError as err:  # a gate's or a bound's (camdf.pipeline.checks.bounds)
        from camdf.common.uri import safe_uri

        print(f"error: {safe_uri(str(err))}", file=sys.stderr)
        raise SystemExit(2) from None
