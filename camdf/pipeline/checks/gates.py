"""Code, paths and secrets by construction: the gates every composed config passes before Hydra acts on it.

Three mechanisms, each over the whole config tree rather than a list of keys:

- **Code**: every ``_target_`` anywhere in the composed config (the task's nodes and
  Hydra's own: ``hydra.callbacks``, ``hydra.launcher``, ``hydra.sweeper``) must be one of
  :func:`allowed_targets`; every ``class`` or ``()`` factory and every ``ext://`` value of
  Hydra's logging configs one of :data:`LOGGING_CLASSES` / :data:`EXT_VALUES`. The tree is
  checked as written and again as resolved (as Hydra will instantiate it), and no value may
  call a resolver that makes a node from a string (:mod:`camdf.pipeline.checks.interpolation`: ``oc.create``,
  ``oc.decode``, escaped or nested), since that node would reach ``instantiate``. On the
  command line Hydra's own keys are fixed: only :data:`HYDRA_KEYS` (launcher sizes, the
  job folders, the search path) may be set there; callbacks, launcher and sweeper classes
  and logging come from the config files. A command-line value may not carry a
  ``_target_`` node at all (``domain.converter.folder={_target_:os.system}``).
- **Paths**: every path a stage writes (:func:`check_paths`) is an absolute path that
  stays out of the checkout except under its ``data/`` and ``outputs/``; the caches, logs,
  Hydra job folders (``.hydra/`` and a sweep's job subfolders included), every file a logging
  handler writes (``filename`` under ``hydra.job_logging`` / ``hydra.hydra_logging``), a local
  artifact root and a local tracking store lie inside ``paths.output_dir``.
- **Secrets**: a value interpolated from the environment (``${oc.env:...}``) is never a
  name (experiment, domain, label: names are stored and shown), and its text is removed
  from every message the project prints (:func:`camdf.common.uri.add_secrets`).

:func:`camdf.pipeline.checks.preflight.preflight` runs all of them on the command line's composed config before
Hydra starts (so before a callback is instantiated or a job folder made); the schema runs
:func:`check_tree` on every job's config again (a sweep's jobs included).
"""

from __future__ import annotations

import os
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Iterator, Sequence
from urllib.parse import urlparse

from camdf.pipeline.checks.interpolation import NO_NODE_RESOLVER, calls_node_resolver
from camdf.pipeline.checks.errors import ConfigError, _shown, get_dotted

#: Code a config may name besides the converters (:func:`camdf.pipeline.checks.values.converters`: the built-in ones and
#: those the integrations declare): the stages' callbacks, and the launchers and sweepers of the launcher configs
#: under ``conf/hydra/launcher/`` (Hydra's own and its official plugins).
HYDRA_TARGETS = (
    "camdf.pipeline.sweeps.CheckSweep",
    "camdf.pipeline.sweep_run.SweepRun",
    "camdf.pipeline.sweep_run.PrintQualityTable",
    "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
    "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
    "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
    "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher",
)


def allowed_targets() -> tuple[str, ...]:
    """The one allow-list of ``_target_`` values: the converters and :data:`HYDRA_TARGETS`."""
    from camdf.pipeline.checks.errors import converters

    return (*converters(), *HYDRA_TARGETS)


#: Classes Hydra's logging configs (``hydra.job_logging``, ``hydra.hydra_logging``) may name (``class``, ``()``).
LOGGING_CLASSES = ("logging.StreamHandler", "logging.FileHandler", "logging.NullHandler", "logging.Formatter",
                   "colorlog.ColoredFormatter")
#: The ``ext://`` objects a logging config may name.
EXT_VALUES = ("ext://sys.stdout", "ext://sys.stderr")
#: Hydra keys the command line may set (fnmatch patterns); every other ``hydra.*`` key is fixed by the configs.
HYDRA_KEYS = ("hydra.searchpath", "hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir", "hydra.verbose",
              "hydra.launcher.n_jobs", "hydra.launcher.partition", "hydra.launcher.timeout_min",
              "hydra.launcher.cpus_per_task", "hydra.launcher.mem_gb", "hydra.launcher.nodes",
              "hydra.launcher.array_parallelism", "hydra.launcher.gpus_per_node", "hydra.launcher.account",
              "hydra.launcher.qos", "hydra.launcher.constraint")
#: Options that load configs from folders the search path does not name.
CONFIG_DIR_OPTIONS = ("-cd", "--config-dir", "-cp", "--config-path")
_LOGGING = ("hydra.job_logging", "hydra.hydra_logging")


class GateError(ConfigError):
    """A config value refused by a gate: ``key: expected <what>, got <value>``."""

    def __init__(self, key: str, value: Any, expected: str):
        super().__init__(key, _shown(value), expected)


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(dotted key, last key part, value) of every entry of a plain container, depth first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        name = f"{prefix}[{key}]" if isinstance(node, list) else f"{prefix}.{key}" if prefix else str(key)
        yield name, key, value
        yield from _leaves(value, name)


def check_code(tree: dict[str, Any]) -> None:
    """Refuse any ``_target_`` outside :func:`allowed_targets`, any logging class or ``ext://`` not allowed, and
    any value calling a node-making resolver (:data:`camdf.pipeline.checks.interpolation.NODE_RESOLVERS`).

    ``tree`` is a plain container, unresolved (``OmegaConf.to_container(cfg, resolve=False)``): an
    interpolated ``_target_`` (``${oc.env:X}``) is refused as it stands; the gates check the resolved
    tree too (:func:`check_tree`, :func:`camdf.pipeline.checks.preflight.preflight`). The task's keys are checked before Hydra's
    (whose ``hydra.overrides`` echo the command line), so a refusal names the key that was set.
    """
    allowed = allowed_targets()
    if isinstance(tree, dict):
        tree = dict(sorted(tree.items(), key=lambda item: item[0] == "hydra"))
    for key, part, value in _leaves(tree):
        if isinstance(value, str) and calls_node_resolver(value):
            raise GateError(key, value, NO_NODE_RESOLVER)
        if part == "_target_" and value not in allowed:
            raise GateError(key, value, "one of the allowed targets (the built-in converters, camdf's "
                                        "callbacks, Hydra's launchers and sweepers; docs/reliability.md): a "
                                        "config never names other code")
        if key.startswith(_LOGGING):
            if part in ("class", "()") and value not in LOGGING_CLASSES:
                raise GateError(key, value, "one of " + ", ".join(LOGGING_CLASSES))
            if isinstance(value, str) and value.startswith("ext://") and value not in EXT_VALUES:
                raise GateError(key, value, "one of " + ", ".join(EXT_VALUES))


def _has_target(value: Any) -> bool:
    return any(part in ("_target_", "()") for _, part, _ in _leaves(value)) if isinstance(value, (dict, list)) \
        else False


def check_overrides(overrides: Sequence[str], where: str = "command line") -> None:
    """Refuse overrides that would name code: a ``hydra.*`` key outside :data:`HYDRA_KEYS`, a ``_target_`` key
    with a value outside the allow-list, or a value holding a ``_target_`` node."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException:
        return  # a syntax error: camdf.pipeline.checks.choices.check_keys names it
    for o in parsed:
        key = o.key_or_group
        if key.startswith("hydra.") and not any(fnmatchcase(key, p) for p in HYDRA_KEYS):
            raise GateError(key, o.input_line, f"a key the {where} may set (Hydra's callbacks, launcher, sweeper "
                                               "and logging are fixed by the config files; settable: "
                                               "hydra.launcher sizes, hydra.run.dir, hydra.sweep.dir, "
                                               "hydra.searchpath, hydra.verbose)")
        if o.is_delete():
            continue
        try:
            values = list(o.sweep_iterator()) if o.is_sweep_override() else [o.value()]
        except HydraException:
            continue  # glob(...) or range over a group: values are config names, not nodes
        for value in values:
            if key.split(".")[-1] in ("_target_", "class", "()") and value not in allowed_targets():
                raise GateError(key, value, "one of the allowed targets (the built-in converters, camdf's "
                                            "callbacks, Hydra's launchers and sweepers; docs/reliability.md): a "
                                            "config never names other code")
            if _has_target(value):
                raise GateError(key, value, "a value without a `_target_` node (a command-line value never "
                                            "names code)")
            if calls_node_resolver(value):
                raise GateError(key, value, NO_NODE_RESOLVER)


# -- paths ---------------------------------------------------------------------------------------------------

#: The folders a stage writes under, each checked by :func:`check_paths`.
WRITTEN_UNDER_OUTPUT = ("paths.cache_dir", "paths.log_dir", "hydra.run.dir", "hydra.sweep.dir")


def _inside(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def _get(cfg: dict, dotted: str) -> Any:
    return get_dotted(cfg, dotted, None)  # absent reads as None here: the gates treat both alike


def _path(key: str, value: Any) -> Path:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise GateError(key, value, "an absolute path (a non-empty string)")
    if not os.path.isabs(value):
        raise GateError(key, value, "an absolute path (a relative one would land in the working folder)")
    return Path(value).resolve()


def _local_path(uri: str) -> Path | None:
    """The local file a tracking or artifact URI names (``sqlite:///x``, ``file:///x``, ``/x``), or None if remote."""
    if uri.startswith("sqlite:///"):
        return Path("/" + uri.removeprefix("sqlite:///").split("?", 1)[0].lstrip("/"))
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else uri)
    return None


def check_paths(cfg: dict[str, Any]) -> None:
    """Refuse a path a stage would write outside ``data/`` and ``outputs/`` (resolved: ``..`` and links followed).

    ``paths.root_dir`` is the checkout; ``paths.data_dir`` and ``paths.output_dir`` are
    absolute paths either inside its ``data/`` and ``outputs/`` or outside the checkout (a
    scratch disk); the caches, logs and Hydra job folders, a local ``tracking.artifact_root``
    and a local (``sqlite:``/``file:``) ``tracking.uri`` lie inside ``paths.output_dir``.
    """
    paths = cfg.get("paths")
    if paths is None:
        return
    if not isinstance(paths, dict):
        raise GateError("paths", paths, "a node of paths (root_dir, data_dir, output_dir, ...)")
    root = _path("paths.root_dir", paths.get("root_dir")) if "root_dir" in paths else None
    tops = {}
    for key, folder in (("data_dir", "data"), ("output_dir", "outputs")):
        if key not in paths:
            continue
        tops[key] = p = _path(f"paths.{key}", paths[key])
        if root is not None and _inside(p, root) and not _inside(p, root / folder):
            raise GateError(f"paths.{key}", paths[key], f"a folder inside {root / folder} or outside the checkout "
                                                        f"{root} (nothing else of the checkout is written)")
        if root is not None and _inside(root, p):
            raise GateError(f"paths.{key}", paths[key], f"a folder that does not hold the checkout {root}")
    out = tops.get("output_dir")
    if out is None:
        return
    for key in WRITTEN_UNDER_OUTPUT:
        value = _get(cfg, key)
        if value is not None:
            _check_inside(key, value, value, out)
    for key in ("tracking.artifact_root", "tracking.uri"):
        value = _get(cfg, key)
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise GateError(key, value, "a URI (a non-empty string)")
        local = _local_path(value)
        if local is not None and not _inside(Path(os.path.abspath(local)).resolve(), out):
            from camdf.common.uri import safe_uri

            raise GateError(key, safe_uri(value), f"a remote URI or a local one inside paths.output_dir ({out})")
    for key, shown, path in _hydra_writes(cfg):
        _check_inside(key, shown, path, out)


def _check_inside(key: str, shown: Any, path: Any, out: Path) -> None:
    if isinstance(path, str) and "${" in path:  # only a Hydra value unresolvable before Hydra starts stays so
        raise GateError(key, shown, f"a path known before the stage starts, inside paths.output_dir ({out})")
    if not _inside(_path(key, path), out):
        raise GateError(key, shown, f"a path inside paths.output_dir ({out})")


def _hydra_writes(cfg: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(key, value as set, path) of every file or folder Hydra writes that :data:`WRITTEN_UNDER_OUTPUT` does not
    name: a sweep's job folders, the ``.hydra/`` folder of a run and of a job, every logging handler's file."""
    run, sweep = _get(cfg, "hydra.run.dir"), _get(cfg, "hydra.sweep.dir")
    subdir, dot_hydra = _get(cfg, "hydra.sweep.subdir"), _get(cfg, "hydra.output_subdir")
    job = os.path.join(sweep, str(subdir)) if isinstance(sweep, str) and subdir is not None else None
    if job is not None:
        yield "hydra.sweep.subdir", subdir, job
    for top in (run, job):
        if isinstance(top, str) and dot_hydra is not None:
            yield "hydra.output_subdir", dot_hydra, os.path.join(top, str(dot_hydra))
    for name in _LOGGING:
        node = _get(cfg, name)
        for key, part, value in _leaves(node, name) if isinstance(node, (dict, list)) else ():
            if part == "filename":
                yield key, value, value


# -- secrets -------------------------------------------------------------------------------------------------

#: Keys whose value may come from the environment and is shown (paths, a domain's folders: a missing one is named
#: as the user wrote it; URIs are shown without credentials).
SHOWN_FROM_ENV = ("paths.", "tracking.uri", "tracking.artifact_root", "hydra.", "domain.source", "domain.inputs",
                  "domain.converter.source", "domain.converter.folder", "domain.converter.data_dir")
#: Keys that become names (of runs, experiments, folders): never from the environment.
NAME_KEYS = ("tracking.experiment", "domain.name", "scorer.label", "scorer.name", "policy.registered_name",
             "policy.alias")


def check_secrets(unresolved: Any, resolved: dict[str, Any]) -> None:
    """Refuse a name taken from the environment; register every other environment value as a secret to redact."""
    from camdf.common.uri import add_secrets
    from camdf.pipeline.checks.redact import env_keys

    tainted = env_keys(unresolved)
    for key in sorted(tainted):
        if key in NAME_KEYS:
            raise GateError(key, "<from the environment>", "a name given in the config itself (names are stored "
                                                           "and shown; an environment value may be a secret)")
    add_secrets(str(_get(resolved, k)) for k in tainted
                if not k.startswith(SHOWN_FROM_ENV) and _get(resolved, k) is not None)


def check_tree(unresolved: Any, resolved: dict[str, Any]) -> None:
    """The gates a job's config passes: code (:func:`check_code`), paths and secrets."""
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(unresolved, resolve=False) if OmegaConf.is_config(unresolved) else unresolved
    check_code(raw)
    check_code(resolved)  # as Hydra instantiates it: a node an interpolation made, an escaped one unescaped
    check_secrets(unresolved, resolved)
    check_paths(resolved)


# -- before Hydra starts -------------------------------------------------------------------------------------

def check_writable(resolved: dict[str, Any]) -> None:
    """Refuse (exit 1: a fault of the machine) an output folder the stage cannot write: the nearest existing
    folder of ``paths.output_dir`` (Hydra makes its job folder there first) must be writable (``os.access``
    answers for a read-only file system too, also for root)."""
    out = _get(resolved, "paths.output_dir")
    if not isinstance(out, str):
        return
    p = Path(out)
    while not p.exists() and p != p.parent:
        p = p.parent
    if not os.access(p, os.W_OK | os.X_OK) or not p.is_dir():
        print(f"error: paths.output_dir: {p} is not a writable folder (read-only file system or permissions); "
              "make it writable or point paths.output_dir elsewhere", file=sys.stderr)
        raise SystemExit(1)
