"""What a config may ask of this machine, checked before Hydra starts (:func:`camdf.pipeline.gates.preflight`).

- **Config folders** a command line adds (``hydra.searchpath``) are read before Hydra composes anything from
  them (:func:`check_config_folders`). Hydra reads a YAML file whole and OmegaConf copies every node an alias
  points to, so a 10-line file of nested aliases expands to billions of nodes and composition never ends; a FIFO
  among the configs blocks the read; a search path of ``/`` would be walked for hours. Every ``*.yaml`` of an
  added folder is parsed as YAML events (linear in its size, nothing expanded) and refused, in one line naming
  the file and line, when it holds an anchor or an alias, is not a regular file, or is larger than
  :data:`MAX_BYTES`; a folder of more than :data:`MAX_ENTRIES` entries is refused as not a config folder.
- **Fan-out**: a local launcher's worker processes (``hydra.launcher.n_jobs`` of the joblib launcher,
  ``hydra/launcher=parallel``) at most this machine's cores (:func:`check_fanout`): ``n_jobs=100000`` had
  spawned 526 processes and 12 GB in 97 s. A cluster launcher's sizes are the cluster's to bound.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

from camdf.pipeline.refusals import ConfigError

#: Bytes of one config file (the project's largest is a few KB).
MAX_BYTES = 1 << 20
#: Entries (files and folders) of one added config folder, walked before any is read.
MAX_ENTRIES = 20_000
_KEY = "hydra.searchpath"


def searchpath_folders(overrides: Iterable[str]) -> list[Path]:
    """The local folders a ``hydra.searchpath=[...]`` override adds (``file://`` or a plain path; ``pkg://`` is
    installed code and is not read here)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    folders: list[Path] = []
    for line in overrides:
        if line.split("=", 1)[0].lstrip("+~") != _KEY:
            continue
        try:
            (override,) = OverridesParser.create().parse_overrides([line])
            value = override.value()
        except (HydraException, ValueError):
            continue  # a syntax error: camdf.pipeline.choices.check_keys names it
        for entry in value if isinstance(value, list) else [value]:
            text = str(entry)
            if text.startswith("pkg://"):
                continue
            folders.append(Path(text[len("file://"):] if text.startswith("file://") else text))
    return folders


def _yaml_files(folder: Path) -> Iterator[Path]:
    seen = 0
    for top, dirs, files in os.walk(folder):  # symlinked folders are not followed
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES:
            raise ConfigError(_KEY, str(folder), f"a folder of configs (at most {MAX_ENTRIES:,} entries under it)")
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")):
                yield Path(top) / name


def _check_file(path: Path) -> None:
    import yaml

    from camdf.data.io.read import read_regular_file

    problems: list[str] = []
    text = read_regular_file(path, str(path), "a config file a read cannot block on", problems, limit=MAX_BYTES)
    if text is None:
        what = problems[0][len(f"{path}:1: "):]
        raise ConfigError(str(path), what.split(" (expected")[0], f"a config file of at most {MAX_BYTES:,} bytes "
                          "(a regular file: a FIFO or a device would block the read)")
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                mark = "*" if isinstance(event, yaml.AliasEvent) else "&"
                raise ConfigError(f"{path}:{event.start_mark.line + 1}", f"{mark}{anchor}",
                                  "a config without YAML anchors or aliases (nested aliases expand to billions "
                                  "of nodes when Hydra composes them): write each value out")
    except yaml.YAMLError:
        return  # not YAML: Hydra's own error names it when the file is used


def check_config_folders(overrides: Iterable[str]) -> None:
    """Refuse (:class:`ConfigError`) any YAML file of the folders ``hydra.searchpath`` adds that Hydra could not
    compose in bounded time and memory (see the module's docstring). A folder that does not exist is left to
    Hydra, which ignores it."""
    for folder in searchpath_folders(overrides):
        if folder.is_dir():
            for path in _yaml_files(folder):
                _check_file(path)


#: The launcher whose ``n_jobs`` worker processes run on this machine.
JOBLIB = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says, else the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_fanout(launcher: object) -> None:
    """Refuse a joblib launcher (a resolved ``hydra.launcher`` node) asking for more worker processes than
    :func:`cores` (or for none)."""
    if not isinstance(launcher, dict) or launcher.get("_target_") != JOBLIB:
        return
    n, limit = launcher.get("n_jobs"), cores()
    if isinstance(n, bool) or not isinstance(n, int) or n == 0 or not -limit <= n <= limit:
        raise ConfigError("hydra.launcher.n_jobs", n,
                          f"1 to {limit} worker processes (this machine's cores; more only wait for a core, each "
                          f"holding a cell in memory) or -1 for every core")
