"""What a config may ask of this machine, checked before Hydra starts (:func:`camdf.pipeline.checks.gates.preflight`).

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
- **Memory**: each stage job is held to its share of the machine, its physical memory over the local launcher's
  workers (:func:`cap_memory`, called by the stages' boundary as a job starts, in the worker that runs it): a
  watchdog thread reads the job's resident memory and stops the job once it passes the share, so a cell that
  outgrows it fails alone with one line instead of the machine swapping or the kernel killing another worker;
  ``CAMDF_WORKER_MEMORY_MB`` lowers it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterable, Iterator

from camdf.common.waits import NotRegular, cores, memory_bytes, read_regular
from camdf.pipeline.checks.errors import ConfigError

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
            continue  # a syntax error: camdf.pipeline.checks.choices.check_keys names it
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

    try:
        text = read_regular(path, MAX_BYTES, "a config file a read cannot block on")
    except NotRegular as err:
        what = str(err)[len(f"{path}:1: "):]
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
#: The launcher that starts every job of a sweep at once on this machine (submitit's local executor,
#: ``hydra/launcher=slurm_local``): it has no cap of its own.
SUBMITIT_LOCAL = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"
#: The most jobs a ``slurm_local`` sweep may start at once, per core (each job held to its memory share).
LOCAL_JOBS_PER_CORE = 4


def _is(launcher: object, target: str) -> bool:
    """Whether a resolved ``hydra.launcher`` node is the launcher ``target``."""
    return isinstance(launcher, dict) and launcher.get("_target_") == target


def local_jobs_limit() -> int:
    """The most jobs a sweep on submitit's local executor may have (:data:`LOCAL_JOBS_PER_CORE` per core)."""
    return LOCAL_JOBS_PER_CORE * cores()


def _n_jobs(launcher: object) -> int | None:
    """A joblib launcher's ``n_jobs`` (a resolved ``hydra.launcher`` node) when it is a usable count (a non-zero
    integer; -1: every core); None for another launcher or another value."""
    if not _is(launcher, JOBLIB):
        return None
    n = launcher.get("n_jobs")
    return None if isinstance(n, bool) or not isinstance(n, int) or n == 0 else n


def check_fanout(launcher: object, n_jobs: int = 1) -> None:
    """Refuse a launcher (a resolved ``hydra.launcher`` node) that would start more processes on this machine than
    it has: a joblib launcher asking for more worker processes than :func:`cores` (or for none), or a sweep of
    more than :func:`local_jobs_limit` jobs (``n_jobs``) on submitit's local executor, which starts every job at
    once, one process each."""
    if _is(launcher, SUBMITIT_LOCAL) and n_jobs > local_jobs_limit():
        raise ConfigError("hydra/launcher", "slurm_local", f"a sweep of at most {local_jobs_limit()} jobs (submitit's "
                          f"local executor starts every job at once, one process each; this sweep has {n_jobs}): "
                          "use hydra/launcher=parallel on this machine, or a cluster launcher")
    if not _is(launcher, JOBLIB):
        return
    n, limit = _n_jobs(launcher), cores()
    if n is None or not -limit <= n <= limit:
        raise ConfigError("hydra.launcher.n_jobs", launcher.get("n_jobs"),
                          f"1 to {limit} worker processes (this machine's cores; more only wait for a core, each "
                          f"holding a cell in memory) or -1 for every core")


#: The environment variable that lowers a job's memory share (MiB).
MEMORY_ENV = "CAMDF_WORKER_MEMORY_MB"


def workers(launcher: object) -> int:
    """The worker processes a (resolved) ``hydra.launcher`` node runs on this machine at once: the joblib
    launcher's ``n_jobs`` (-1: every core), submitit's local executor :func:`local_jobs_limit` (it starts every
    job at once), else 1 (Hydra's basic launcher runs one job at a time; a cluster's jobs run elsewhere)."""
    if _is(launcher, SUBMITIT_LOCAL):
        return local_jobs_limit()
    n = _n_jobs(launcher)
    if n is None:
        return 1
    return cores() if n < 0 else min(n, cores())


def memory_share(n_workers: int) -> int:
    """The data memory (bytes) one of ``n_workers`` jobs may use: the machine's physical memory over the workers,
    or less when :data:`MEMORY_ENV` says (ConfigError when it is not a positive whole number of MiB)."""
    share = memory_bytes() // max(1, n_workers)
    text = os.environ.get(MEMORY_ENV)
    if text is not None:
        if not text.strip().isdigit() or int(text) <= 0:
            raise ConfigError(MEMORY_ENV, text, "a positive whole number of MiB")
        share = min(share, int(text) << 20)
    return share


class MemoryShareExceeded(BaseException):
    """Raised in a job's main thread when its resident memory passed its share (:func:`cap_memory`); a
    ``BaseException``, like Ctrl-C, so no library's ``except Exception`` swallows it on the way to the boundary."""

    def __init__(self, used: int, share: int):
        self.used, self.share = used, share
        super().__init__(f"{used} bytes resident, share {share}")


_WATCH: dict[str, object] = {"share": None, "thread": None, "fired": False}
_POLL_S = 0.25


def _resident() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _watch() -> None:
    import _thread
    import signal
    import time

    while True:
        time.sleep(_POLL_S)
        share, used = _WATCH["share"], _resident()
        if share is not None and used is not None and used > share and not _WATCH["fired"]:
            _WATCH["fired"] = True
            _WATCH["used"] = used
            _thread.interrupt_main(signal.SIGUSR1)


def _exceeded(signum, frame) -> None:
    raise MemoryShareExceeded(int(_WATCH.get("used") or 0), int(_WATCH["share"] or 0))


def _dropped_in_a_finalizer(hook):
    """``sys.unraisablehook`` over ``hook``: a :class:`MemoryShareExceeded` that landed in a finalizer (a weakref
    callback, a ``__del__``), where Python drops an exception after printing it with its traceback, is not printed:
    the watcher raises it again at its next poll, in the job's own code."""
    def unraisable(info) -> None:
        if isinstance(info.exc_value, MemoryShareExceeded):
            _WATCH["fired"] = False
            return
        hook(info)

    unraisable.camdf_memory_share = True
    return unraisable


def cap_memory(launcher: object) -> int | None:
    """Hold this job's resident memory to :func:`memory_share` of the launcher's workers: a daemon thread reads it
    (``/proc/self/statm``, every 0.25 s) and, once it passes the share, raises :class:`MemoryShareExceeded` in the
    main thread (a long call into a library ends first). The share in bytes; None where it cannot be watched (no
    ``/proc``, or not the main thread). Reserved but untouched memory is not counted (``RLIMIT_DATA`` would count
    the gigabytes of address space thread pools reserve)."""
    import signal
    import threading

    share = memory_share(workers(launcher))
    if _resident() is None or threading.current_thread() is not threading.main_thread():
        return None
    signal.signal(signal.SIGUSR1, _exceeded)
    if not getattr(sys.unraisablehook, "camdf_memory_share", False):
        sys.unraisablehook = _dropped_in_a_finalizer(sys.unraisablehook)
    _WATCH.update(share=share, fired=False)
    if _WATCH["thread"] is None:
        _WATCH["thread"] = threading.Thread(target=_watch, name="camdf-memory-share", daemon=True)
        _WATCH["thread"].start()
    return share


def share_exceeded() -> MemoryShareExceeded | None:
    """The stop of a job whose share ran out, if it fired: whatever a library made of the exception on its way (a
    converter's error wrapped by Hydra's instantiate, a schema error of a compiled validator), the cause is memory."""
    if not _WATCH["fired"] or _WATCH["share"] is None:
        return None
    return MemoryShareExceeded(int(_WATCH.get("used") or 0), int(_WATCH["share"]))


def release_memory() -> None:
    """Stop holding this process to a job's share (the job ended; a worker's next job sets its own)."""
    _WATCH["share"] = None


def memory_line(err: BaseException) -> str:
    """The one line of a job that outgrew its memory share (:func:`cap_memory`) or that the system refused memory."""
    share = getattr(err, "share", None) or _WATCH["share"]
    used = f"{err.used / 2**30:.1f} GiB resident, " if getattr(err, "used", 0) else ""
    limit = "all of it" if share is None else f"{share / 2**30:.1f} GiB"
    return (f"out of memory: {used}this job may use {limit} (the machine's memory over hydra.launcher.n_jobs "
            f"workers, or {MEMORY_ENV}); run fewer workers at once (hydra.launcher.n_jobs) or a smaller cell")
