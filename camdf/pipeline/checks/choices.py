"""Config-group choices on a stage's command line, checked before Hydra composes (kept light: no numpy)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from camdf.pipeline.identity import CONF_DIR

#: Hydra's command-line options that take a value (``--cfg job``): the value is no override.
_WITH_VALUE = ("--cfg", "-c", "--package", "-p", "--config-name", "-cn", "--config-path", "-cp", "--config-dir",
               "-cd", "--info", "-i", "--experimental-rerun", "--shell-completion", "-sc")


def hydra_overrides(args: Sequence[str]) -> list[str]:
    """The overrides of a Hydra command line: its arguments without the options and their values."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            if not a.startswith("-") and "=" not in a:
                continue
        if a.startswith("-"):
            skip = a in _WITH_VALUE
            continue
        out.append(a)
    return out


# Options that point Hydra at other config folders, where choices this checkout lacks may live.
_OTHER_CONFIGS = ("-cd", "--config-dir", "-cp", "--config-path", "-cn", "--config-name", "hydra.searchpath")


def check_choices(argv: Sequence[str] | None = None, conf_dir: Path = CONF_DIR) -> None:
    """Refuse a config-group choice that names no file under ``conf/``, before Hydra composes.

    ``domain=nope`` would otherwise end in Hydra's composition error (exit 1, several lines)
    and ``domain=../data`` in an error about another file. Each choice of a group of this
    checkout's ``conf/`` (one value, or each of a sweep's) must be a config of that group;
    otherwise one line ``error: <group>: no config '<value>' (expected one of ...)`` and exit 2.
    Skipped when the command line points Hydra at other config folders (``-cd``,
    ``hydra.searchpath``): those may hold the choice.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    args = list(sys.argv[1:] if argv is None else argv)
    if any(a.split("=", 1)[0].lstrip("+~") in _OTHER_CONFIGS or a in _OTHER_CONFIGS for a in args):
        return
    try:
        overrides = OverridesParser.create().parse_overrides(hydra_overrides(args))
    except HydraException:
        return  # a syntax error: Hydra's own message says where
    for o in overrides:
        group = o.key_or_group
        if o.is_delete() or group.startswith("hydra") or not (conf_dir / group).is_dir():
            continue
        try:
            values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.value()]
        except HydraException:
            continue  # glob(...): Hydra expands it against the group itself
        names = sorted(p.relative_to(conf_dir / group).with_suffix("").as_posix()
                       for p in (conf_dir / group).rglob("*.yaml"))
        for value in values:
            if value is None or (isinstance(value, str) and value in names):
                continue
            shown = ", ".join(names)
            print(f"error: {group}: no config {str(value)!r} (expected one of {shown})", file=sys.stderr)
            raise SystemExit(2)


#: Keys a config may lack that the stages read when present: the only ones ``+key=value`` may add.
OPTIONAL_KEYS = ("domain.where", "domain.where.*", "domain.label_source", "domain.executable",
                 "domain.keep_non_executable", "domain.report_execution_costs", "domain.environment",
                 "tracking.claim_timeout", "cost.params", "cost.params.*", "cost.random_state", "scorer.params",
                 "scorer.params.*", "scorer.label")


def _keys(node, prefix: str = "") -> set[str]:
    """Every dotted key of a composed config (inner nodes included), values not resolved."""
    from omegaconf import DictConfig

    out = set()
    for key in node.keys() if isinstance(node, DictConfig) else ():
        name = f"{prefix}{key}"
        out.add(name)
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing():
            out |= _keys(child, f"{name}.")
    return out


def check_keys(config_name: str, argv: Sequence[str] | None = None, conf_dir: Path = CONF_DIR,
               composed_whole: bool = False) -> None:
    """Refuse a command-line key that no config of the stage has, before Hydra composes.

    ``cost.lamda=0.5`` would end in Hydra's composition error (several lines, exit 1) and
    ``+cost.lamda=0.5`` would add a key nothing reads, so the cell ran at the default lambda
    under a new cell key. The stage's primary config is composed with the command line's
    group choices (a swept group: its first value); every other key must be one of its
    keys, and ``+`` may add only the optional keys the stages read (:data:`OPTIONAL_KEYS`).
    Otherwise one line ``error: <key>: no such config key (closest known key: ...)`` and exit 2.
    Skipped when the command line points Hydra at other config folders, and for plain keys when
    ``composed_whole`` (:func:`camdf.pipeline.checks.preflight.preflight` composed the stage with every override, each
    sweep at its first value, and Hydra refuses a key the config lacks unless ``+`` adds it).
    """
    import difflib
    from fnmatch import fnmatchcase

    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    args = list(sys.argv[1:] if argv is None else argv)
    if any(a.split("=", 1)[0].lstrip("+~") in _OTHER_CONFIGS or a in _OTHER_CONFIGS for a in args):
        return
    try:
        overrides = OverridesParser.create().parse_overrides(hydra_overrides(args))
    except HydraException as err:  # Hydra's message is several lines: the override, then the parser's reason
        lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
        what = lines[0].removeprefix("Error parsing override ").strip("'") if lines else "an override"
        _refuse_key(what, f"not a valid override ({lines[1] if len(lines) > 1 else 'syntax'}; "
                          "see Hydra's override grammar)")

    def is_group(key: str) -> bool:
        return (conf_dir / key.split("@")[0]).is_dir()

    _check_job_dirs({o.key_or_group: o.get_value_element_as_str() for o in overrides
                     if not o.is_delete() and not o.is_sweep_override()})

    plain = [o for o in overrides if not o.is_delete() and not o.key_or_group.startswith("hydra")
             and not is_group(o.key_or_group)]
    if not plain:
        return
    if composed_whole and not any(o.is_add() or o.is_force_add() for o in plain):
        return  # every plain key composed (Hydra refuses one the config lacks): no second composition
    choices = []
    for o in overrides:
        if is_group(o.key_or_group) and not o.is_delete():
            try:
                value = next(iter(o.sweep_string_iterator())) if o.is_sweep_override() else o.get_value_element_as_str()
            except (HydraException, StopIteration):
                return  # glob(...) or an empty sweep: the sweep check names it
            choices.append(f"{'+' if o.is_add() else ''}{o.key_or_group}={value}")
    known = _composed_keys(config_name, choices, conf_dir)
    if known is None:
        return
    for o in plain:
        key, add = o.key_or_group, o.is_add() or o.is_force_add()
        optional = any(fnmatchcase(key, p) for p in OPTIONAL_KEYS)
        if key in known and o.is_add():
            _refuse_key(f"+{key}", f"already set by the config; override it without `+` ({key}=...)")
        if key in known or (add and optional):
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
        hint = f"closest known key: {close[0]}" if close else "not a key of the stage's config"
        if not add and optional:
            hint = f"an optional key: add it with +{key}=..."
        _refuse_key(f"{'+' if add else ''}{key}", f"no such config key ({hint})")


def _composed_keys(config_name: str, choices: list[str], conf_dir: Path) -> set[str] | None:
    """The keys of ``config_name`` composed with ``choices``; None when it does not compose (Hydra then says why)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return None
    try:
        with initialize_config_dir(str(conf_dir), version_base="1.3"):
            return _keys(compose(config_name, overrides=choices))
    except Exception:  # noqa: BLE001  any composition error is Hydra's to report, with its own words
        return None


def _refuse_key(key: str, what: str) -> None:
    print(f"error: {key}: {what}", file=sys.stderr)
    raise SystemExit(2)


#: The keys that place Hydra's job folder; Hydra makes it before any stage code runs, so they are checked here.
JOB_DIR_KEYS = ("paths.log_dir", "hydra.run.dir", "hydra.sweep.dir")


def _check_job_dirs(values: dict[str, str]) -> None:
    """Refuse a job-folder key (:data:`JOB_DIR_KEYS`) on the command line that leaves ``paths.output_dir``.

    A value built on ``${paths.output_dir}`` or ``${paths.log_dir}`` without ``..`` stays inside;
    any other value must resolve inside the command line's ``paths.output_dir`` (default: the
    checkout's ``outputs/``, or ``$CAMDF_ROOT/outputs``).
    """
    import os

    root = Path(os.environ.get("CAMDF_ROOT") or CONF_DIR.parent)
    output_dir = values.get("paths.output_dir")
    top = Path(output_dir).resolve() if output_dir and "${" not in output_dir else (root / "outputs").resolve()
    for key in JOB_DIR_KEYS:
        value = values.get(key)
        if value is None:
            continue
        parts = Path(value).parts
        if value.startswith(("${paths.output_dir}", "${paths.log_dir}")) and ".." not in parts:
            continue
        path = Path(value).resolve() if "${" not in value else None
        if path is None or (path != top and top not in path.parents):
            _refuse_key(key, f"expected a path inside paths.output_dir ({top}), got {value!r}")


def compose(config_name: str, overrides: list[str], with_hydra: bool = False) -> DictConfig:
    """One composed config of ``conf/`` (inside a running Hydra app, or standalone)."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return hydra_compose(config_name, overrides=overrides, return_hydra_config=with_hydra)
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return hydra_compose(config_name, overrides=overrides, return_hydra_config=with_hydra)
