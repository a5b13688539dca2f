"""The stages' error boundary: any failure becomes one line naming its cause and what to do, and an exit code.

Every stage entry point (``pipelines/*.py``) wraps its Hydra task function in
:func:`stage` and starts through :func:`run_stage`; the ``camdf`` command line
wraps its commands in :func:`cli_boundary`. Whatever is raised, whenever:

- exit 2 (bad input: a config value, a data folder, a request) or 1 (a fault of
  the machine or the store: disk full, permissions, a corrupt tracking store, a
  bug), with ``error: <one line>`` on stderr, credentials stripped from any URI;
- exit 130 on Ctrl-C (``KeyboardInterrupt``), the shell's code for SIGINT, with
  ``error: interrupted ...``;
- the Hydra job folder the failing job made is removed (:func:`camdf.pipeline.checks.values.refuse`);
- no traceback, unless ``CAMDF_TRACEBACK=1`` asks for it (printed before the line).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from camdf.common.uri import safe_uri
from camdf.pipeline.checks.bounds import cap_memory, release_memory

#: Exit code of bad input (config, data, request), of a fault of the machine or store, and of Ctrl-C.
BAD_INPUT, FAULT, INTERRUPTED = 2, 1, 130
_CODE_ROOT = Path(__file__).resolve().parents[2]
def _where(err: BaseException) -> str:
    """``file:line`` of the innermost frame of this checkout's code (camdf or pipelines) in ``err``'s traceback."""
    where = ""
    for frame in traceback.extract_tb(err.__traceback__):
        path = Path(frame.filename)
        if _CODE_ROOT in path.parents:
            where = f"{path.relative_to(_CODE_ROOT)}:{frame.lineno}"
    return where


def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return "; ".join(lines) if lines else ""


def _is_store_error(err: BaseException) -> bool:
    """An error raised by the tracking store (MLflow, SQLAlchemy, sqlite3), found by its module (nothing imported)."""
    import sqlite3

    module = type(err).__module__ or ""
    return isinstance(err, sqlite3.Error) or module.split(".")[0] in ("mlflow", "sqlalchemy")


def _is_composition_error(err: BaseException) -> bool:
    """Whether ``err`` is Hydra's refusal of a config (a file it cannot compose, an override it cannot apply)."""
    hydra_errors = sys.modules.get("hydra.errors")
    return hydra_errors is not None and isinstance(
        err, (hydra_errors.ConfigCompositionException, hydra_errors.MissingConfigException,
              hydra_errors.OverrideParseException))


def explain(err: BaseException, uri: str | None = None) -> tuple[str, int]:
    """The one line and exit code of a failure.

    Parameters
    ----------
    err : BaseException
        What was raised.
    uri : str, optional
        The tracking URI of the stage, named when the store failed (credentials stripped).

    Returns
    -------
    line : str
        One line: the cause (key, file or ``file:line``, run id or URI) and what to do.
    code : int
        :data:`INTERRUPTED` for Ctrl-C, :data:`BAD_INPUT` for a refused value or input,
        :data:`FAULT` for the machine, the store or a bug.
    """
    from camdf.tracking.probe import TrackingUnreachable

    if isinstance(err, KeyboardInterrupt):
        return ("interrupted (Ctrl-C): nothing unfinished was kept; rerun the same command to go on "
                "(finished cells are reused)"), INTERRUPTED
    from camdf.pipeline.checks.bounds import MemoryShareExceeded, memory_line, share_exceeded

    if isinstance(err, (MemoryError, MemoryShareExceeded)) or share_exceeded() is not None:
        return memory_line(share_exceeded() or err), FAULT
    if isinstance(err, BrokenPipeError):
        from camdf.common.process import closed_stdout

        return closed_stdout()
    if isinstance(err, TrackingUnreachable):
        return safe_uri(_one_line(err)), BAD_INPUT
    if _is_store_error(err) and re.search(r"Read timed out|ConnectTimeout|timed out", str(err)):
        store = f"the tracking server {safe_uri(uri)}" if uri else "the tracking server"
        wait = os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
        return (f"tracking.uri: {store} did not answer within {wait} s (MLFLOW_HTTP_REQUEST_TIMEOUT); check the "
                "server, or point MLFLOW_TRACKING_URI at another store"), FAULT
    if _is_store_error(err):
        store = f"the tracking store {safe_uri(uri)}" if uri else "the tracking store"
        text = _one_line(err).split("; ")[0][:300]
        return (f"{store} failed: {type(err).__name__}: {safe_uri(text)} (is it a readable MLflow store? "
                "check the file or server, or point MLFLOW_TRACKING_URI at another store)"), FAULT
    if type(err).__name__ == "UncompletedJobError":  # submitit: a job of the sweep stopped; its own line says why
        said = re.search(r"^\s*error: (.+)$", str(err), re.M)
        job = re.search(r"Job (\S+)", str(err))
        where = f"job {job.group(1)} of the sweep" if job else "a job of the sweep"
        if said:
            return f"{where} (submitit) stopped: {safe_uri(said.group(1))[:300]}", BAD_INPUT
        return (f"{where} (submitit) produced no result: {safe_uri(_one_line(err))[:300]} (its log is in the "
                "sweep folder's .submitit/)"), FAULT
    if _is_composition_error(err):  # a config file or override Hydra cannot compose: the user's input
        return (f"config: {safe_uri(_one_line(err))[:300]} (a config file or override Hydra could not compose; "
                "fix the file or the override it names)"), BAD_INPUT
    if isinstance(err, (FileNotFoundError, NotADirectoryError, IsADirectoryError)):
        name = err.filename or _where(err)
        return f"{name}: {err.strerror or err} (expected it to exist; run `make data` if it is a data file)", BAD_INPUT
    if isinstance(err, OSError):
        name = err.filename or _where(err)
        return (f"{name}: {err.strerror or err} (a fault of the machine: check free space and permissions, "
                "then rerun)"), FAULT
    if isinstance(err, (ValueError, TypeError, LookupError)):
        text = safe_uri(_one_line(err))
        where = _where(err)
        known = re.match(r"^[\w.\[\]/`-]+[:]", text) and not isinstance(err, (TypeError, LookupError))
        suffix = "" if known or not where else f" (at {where})"
        return f"{text}{suffix}", BAD_INPUT
    where = _where(err) or "unknown place"
    return (f"internal error at {where}: {type(err).__name__}: {safe_uri(_one_line(err))[:300]} "
            "(please report it; CAMDF_TRACEBACK=1 prints the traceback)"), FAULT


def _traceback_asked() -> bool:
    return os.environ.get("CAMDF_TRACEBACK", "").lower() not in ("", "0", "false")


def _select(cfg: Any, key: str) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)


def _launcher() -> Any:
    """The running job's resolved ``hydra.launcher`` node (None outside a Hydra job)."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    try:
        return OmegaConf.to_container(HydraConfig.get().launcher, resolve=True) if HydraConfig.initialized() else None
    except Exception:  # noqa: BLE001  a launcher node that does not resolve: counted as one worker
        return None


def stage(task: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Wrap a stage's Hydra task function (under ``@hydra.main``): every failure becomes one line and an exit code.

    ``SystemExit`` (a refusal made already) passes through. Anything else is explained
    by :func:`explain`, printed as ``error: <line>``, the job's Hydra folder is removed and
    the process exits with the line's code (:func:`camdf.pipeline.checks.values.refuse`).
    """

    @functools.wraps(task)
    def run(cfg: Any) -> Any:
        from camdf.pipeline.checks.values import refuse

        unborn = _unborn_store(_select(cfg, "tracking.uri"))
        try:
            cap_memory(_launcher())  # this job's share of the machine (camdf.pipeline.checks.bounds)
            return task(cfg)
        except SystemExit:
            raise
        except BaseException as err:  # noqa: BLE001  the boundary: every failure ends here
            if _traceback_asked():
                traceback.print_exc()
            line, code = explain(err, _select(cfg, "tracking.uri"))  # before the share is released: it may be why
            if unborn is not None and (_is_store_error(err) or isinstance(err, OSError)):
                _drop_if_empty(unborn)
            refuse(line, _select(cfg, "paths.output_dir"), code)
        finally:
            release_memory()

    return run


def _unborn_store(uri: Any) -> Path | None:
    """The file of a SQLite tracking store that does not exist yet (this stage would create it), else None."""
    from camdf.tracking.locations import sqlite_path

    db = sqlite_path(uri) if isinstance(uri, str) else None
    return db if db is not None and not db.exists() else None


def _drop_if_empty(db: Path) -> None:
    """Remove the store ``db`` this stage created (and SQLite's side files) when it holds no run: a store whose
    creation failed half-way (a full disk during MLflow's migrations) is left behind by nothing."""
    import sqlite3

    from camdf.common.waits import open_sqlite

    if not db.exists():
        return
    try:
        with open_sqlite(db, read_only=True) as con:
            if con.execute("select count(*) from runs").fetchone()[0]:
                return  # runs were recorded (each FAILED one with its failure tag): kept
    except sqlite3.Error:
        pass  # no runs table: the migrations never finished
    for path in (db, *(db.with_name(db.name + side) for side in ("-journal", "-wal", "-shm"))):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            return


def run_stage(main: Callable[[], Any], config_name: str, argv: list[str] | None = None) -> None:
    """A stage's ``__main__``: check the command line (:mod:`camdf.pipeline.checks.choices`), then run the Hydra ``main``.

    Ctrl-C outside the task function (while Hydra composes, or between a sweep's jobs)
    is one line and exit 130 too; nothing of the job's has been written at those points
    that :func:`stage` would not have removed.
    """
    from camdf.common.process import exit_interrupted, flush_stdout, release_start
    from camdf.pipeline.checks.choices import check_choices, check_keys
    from camdf.pipeline.checks.preflight import preflight

    try:
        release_start()  # from here on, this boundary handles Ctrl-C
        checked = preflight(config_name, argv)  # code, paths and secrets of the composed config, Hydra's
        check_choices(argv)  # a config-group choice naming no file: one line, exit 2
        check_keys(config_name, argv, composed_whole=checked.composed_whole)  # a key no config has: exit 2
        _hydra_reports_through_us(checked.output_dir)
        main()
    except KeyboardInterrupt as err:
        print(f"error: {explain(err)[0]}", file=sys.stderr)
        exit_interrupted()  # 130 for certain (CPython may exit by SIGINT otherwise: camdf.common.process)
    except BrokenPipeError as err:
        print(f"error: {explain(err)[0]}", file=sys.stderr)
        raise SystemExit(explain(err)[1]) from None
    code = flush_stdout()
    if code is not None:
        raise SystemExit(code)


def _hydra_reports_through_us(output_dir: str | None) -> None:
    """Hydra's own start-up (its job folder, its config files, its logging, the launcher) reports a failure
    in several lines and exit 1; route it through :func:`explain` instead: one line, the documented code, and
    the job folder Hydra made removed. (Hydra looks ``run_and_report`` up in its module at each run.)"""
    import hydra._internal.utils as hydra_utils

    def run_and_report(func: Callable[[], Any]) -> Any:
        from camdf.pipeline.checks.values import refuse

        try:
            return func()
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as err:  # noqa: BLE001  the boundary around Hydra's start-up
            if _traceback_asked():
                traceback.print_exc()
            line, code = explain(err)
            refuse(line, output_dir, code)

    hydra_utils.run_and_report = run_and_report


def cli_boundary(command: str, func: Callable[[], int], uri: str | None = None) -> int:
    """Run a ``camdf`` command: its return code, or one line ``camdf <command>: <cause>`` and 2, 1 or 130."""
    from camdf.common.process import exit_interrupted, flush_stdout, release_start

    try:
        release_start()  # from here on, this boundary handles Ctrl-C
        code = func()
        return flush_stdout() or code
    except SystemExit:
        raise
    except BaseException as err:  # noqa: BLE001  the command line's boundary
        if _traceback_asked():
            traceback.print_exc()
        line, code = explain(err, uri)
        print(f"camdf {command}: {line}", file=sys.stderr)
        if isinstance(err, KeyboardInterrupt):
            exit_interrupted()
        return code
