"""MLflow tracking: one run per cell, found again by its cell key, claimed before it is computed.

The default store is an embedded SQLite database under ``outputs/`` with artifacts
beside it; ``MLFLOW_TRACKING_URI`` overrides it (a shared ``mlflow server``, say).
A cell whose key already has a FINISHED run is skipped; a FAILED, KILLED or
unfinished one is run again. A tracking server (an ``http(s)://`` URI) is asked once,
with a short timeout, before the client is made (:func:`check_server`): an
unreachable one raises :class:`TrackingUnreachable` in seconds instead of after
MLflow's minutes of HTTP retries. Every cell run is tagged with the machine's
numeric environment (``numeric.*``: BLAS kernel and threads, numpy's CPU features;
:func:`camdf.common.machine.numeric_environment`).

Claims
------
Several workers (joblib processes, SLURM jobs, machines sharing one server) may
reach the same cell key. Before computing a cell, a worker claims it in the
tracking store itself, so the protocol works wherever the store is shared:

1. It creates a RUNNING run tagged ``cell_key`` plus its identity (``claim.token``,
   ``claim.host``, ``claim.node``, ``claim.pid``, ``claim.pid_start``) and a
   ``claim.heartbeat`` time.
2. It reads every run of the key and takes the ticket ``claim.ticket`` = 1 + the
   largest ticket it saw (Lamport's bakery: a run without a ticket is still
   choosing).
3. It reads the key's runs again until no live claim is still choosing; then the
   live claim with the smallest ``(ticket, run_id)`` wins. A worker whose run was
   created after the winner's ticket was written necessarily draws a larger
   ticket, so two workers never both win while both claims are live.

The winner computes the cell while a thread refreshes its heartbeat; the run
ends FINISHED. A loser deletes its own run (KILLED first) and waits for the
winner's run: FINISHED means the cell is reused; a winner that failed or died
sends it back to step 1. A FINISHED run of the key, seen at any step, ends the
claim. A claim is dead (ignored, and marked KILLED by the next winner) when its
heartbeat is older than the timeout, or at once when it was made on this
machine (same host, boot and pid namespace) by a process that no longer exists,
so the cell of a SIGKILLed worker is taken over by the rerun. Heartbeats use
wall clocks, so machines sharing a server need clocks in step to well within
the timeout (NTP does that), and reads must see every committed write (no read
replica behind the server). A worker whose claim was taken over while it was
still alive (a pause longer than the timeout) does not mark its run FINISHED.
Runs of another ``kind`` (a policy, a sweep, the tables' figures) are not cell runs
and take no part.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from camdf.common.machine import numeric_environment

CELL_KEY = "cell_key"
#: The ``kind`` tag of a cell run; policies, sweeps and tables carry their own kind.
CELL = "cell"
CLAIM_TIMEOUT = 300.0  # seconds without a heartbeat after which a claim counts as dead
CLAIM_POLL = 2.0       # seconds between looks at the winner's run while waiting for it
PROBE_PATH = "/api/2.0/mlflow/experiments/search?max_results=1"  # a read every MLflow server answers
PROBE_TIMEOUT = 3.0    # seconds to connect, and to wait for the answer, when checking a server

log = logging.getLogger(__name__)


def is_cell(run) -> bool:
    """Whether a run is a cell's (tagged ``kind=cell``, or untagged as stores older than the tag have them)."""
    return run.data.tags.get("kind", CELL) == CELL


def _quiet() -> None:
    for name in ("mlflow", "alembic", "sqlalchemy"):
        logging.getLogger(name).setLevel(logging.WARNING)


def store_uri(output_dir: str | os.PathLike) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else ``sqlite:///<output_dir>/mlflow.db``."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(output_dir).resolve()}/mlflow.db"


class TrackingUnreachable(RuntimeError):
    """The tracking URI names a server that does not answer as MLflow; the message is one line naming the URI.

    Stage entry points print it and exit 2. ``uri`` is the URI; the exception pickles
    (a worker process may raise it).
    """

    def __init__(self, uri: str, message: str):
        super().__init__(uri, message)

    @property
    def uri(self) -> str:
        return self.args[0]

    def __str__(self) -> str:
        return self.args[1]


def _exceptions(exc: BaseException) -> Iterator[BaseException]:
    """An exception and everything it wraps (causes, contexts, ``reason``, exception args), each once."""
    todo, seen = [exc], set()
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [x for x in (e.__cause__, e.__context__, getattr(e, "reason", None), *e.args)
                 if isinstance(x, BaseException)]


def _reason(exc: BaseException, timeout: float) -> str:
    """Why a request failed, in a few words (``connection refused``, ``host name not found`` ...)."""
    import requests

    if isinstance(exc, requests.exceptions.SSLError):
        return f"TLS error: {str(exc)[:200]}"
    if isinstance(exc, requests.exceptions.Timeout):
        return f"no answer within {timeout:g} s"
    for e in _exceptions(exc):
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return "host name not found"
        if isinstance(e, (socket.timeout, TimeoutError)):
            return f"no answer within {timeout:g} s"
        if isinstance(e, ConnectionResetError):
            return "connection reset"
        if isinstance(e, OSError) and e.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return os.strerror(e.errno).lower()
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def check_server(uri: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Ask an ``http(s)://`` tracking URI one read (``GET <uri>/api/2.0/mlflow/experiments/search``); raise if it fails.

    Other URIs (SQLite, files) are left alone. The server passes when it answers
    that read with JSON, or with 401/403 (it wants the credentials the MLflow
    client sends) or an MLflow error (the client reports it itself, without
    retrying). No answer (refused, unknown host, timeout, TLS failure), a page that
    is not MLflow's (404, HTML) or a server error raises
    :class:`TrackingUnreachable` within about ``2.5 * timeout`` seconds, name
    resolution included. The request goes through ``requests`` as MLflow's does
    (same proxies and CA bundle) and honours ``MLFLOW_TRACKING_INSECURE_TLS``,
    ``MLFLOW_TRACKING_SERVER_CERT_PATH`` and ``MLFLOW_TRACKING_CLIENT_CERT_PATH``.
    """
    if not uri.lower().startswith(("http://", "https://")):
        return
    import requests

    from_env = os.environ.get("MLFLOW_TRACKING_URI") == uri
    unset = "unset MLFLOW_TRACKING_URI" if from_env else "point tracking.uri at another store"
    url = uri.rstrip("/") + PROBE_PATH
    insecure = os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() in ("true", "1")
    verify = False if insecure else (os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH") or True)
    got: dict[str, Any] = {}

    def probe() -> None:
        try:
            got["response"] = requests.get(url, timeout=timeout, verify=verify, allow_redirects=True,
                                           cert=os.environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH") or None)
        except Exception as exc:  # noqa: BLE001 - every failure becomes the one error below
            got["error"] = exc

    # requests bounds connecting and each read, not name resolution: the thread bounds the whole probe.
    thread = threading.Thread(target=probe, name="camdf-tracking-probe", daemon=True)
    thread.start()
    thread.join(2.5 * timeout)
    if "response" not in got:
        reason = _reason(got["error"], timeout) if "error" in got else f"no answer within {2.5 * timeout:g} s"
        raise TrackingUnreachable(uri, f"tracking.uri: cannot reach the MLflow tracking server at {uri} ({reason}); "
                                       f"start it (make ui / mlflow server) or {unset}")
    resp = got["response"]
    try:
        body = resp.json()
    except ValueError:
        body = None
    mlflow_error = isinstance(body, dict) and "error_code" in body
    if (resp.ok and isinstance(body, dict)) or resp.status_code in (401, 403) or \
            (400 <= resp.status_code < 500 and mlflow_error):
        return
    path = PROBE_PATH.split("?")[0]
    if resp.status_code == 404 or (resp.ok and not isinstance(body, dict)):
        what = f"HTTP {resp.status_code}" if not resp.ok else "a page that is not MLflow's JSON"
        raise TrackingUnreachable(uri, f"tracking.uri: {uri} answers, but not as an MLflow tracking server "
                                       f"({what} for GET {path}); check its host, port and path, or {unset}")
    detail = f": {str(body.get('message'))[:200]}" if mlflow_error else ""
    raise TrackingUnreachable(uri, f"tracking.uri: the MLflow tracking server at {uri} answered HTTP "
                                   f"{resp.status_code} to GET {path}{detail}; check the server, or {unset}")


def _client(uri: str):
    """An :class:`mlflow.MlflowClient` for ``uri``, once a tracking server has answered (:func:`check_server`)."""
    check_server(uri)  # before importing mlflow (a second or so): a refusal comes at once
    import mlflow

    _quiet()
    return mlflow.MlflowClient(tracking_uri=uri)


def git_commit(root: str | os.PathLike) -> str:
    """HEAD's commit (suffixed ``-dirty`` when tracked files differ), or ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


#: Config keys that say where a run was recorded, not what it computed: not logged as params
#: (they are machine paths; the store itself is where the run is).
NOT_PARAMS = ("paths.root_dir", "paths.output_dir", "paths.cache_dir", "paths.log_dir", "tracking.uri",
              "tracking.artifact_root")


def flatten(cfg: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> flat ``a.b.c -> str(value)`` params (MLflow caps values at 6000 chars), without
    :data:`NOT_PARAMS`."""
    out: dict[str, str] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if name in NOT_PARAMS:
            continue
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = str(value)[:6000]
    return out


#: The checkout camdf runs from (the venv's libraries, the default data and outputs live under it).
CODE_ROOT = Path(__file__).resolve().parents[2]


def portable(values: dict[str, str], roots: tuple[str | os.PathLike, ...] = ()) -> dict[str, str]:
    """``values`` with every occurrence of the checkout (and of ``roots``) written ``.``: params and tags
    name no absolute path of the machine that logged them, so a store reads the same anywhere."""
    prefixes = sorted({str(Path(r).resolve()) for r in (CODE_ROOT, *roots) if r}, key=len, reverse=True)
    out = {}
    for key, value in values.items():
        for prefix in prefixes:
            value = value.replace(prefix, ".")
        out[key] = value
    return out


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, else None."""
    return Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None


def default_artifact_root(uri: str) -> str | None:
    """Where a new experiment's artifacts go when ``tracking.artifact_root`` is unset: ``mlartifacts/`` beside
    a SQLite file (so store and artifacts move together); a server decides for itself (None)."""
    db = sqlite_path(uri)
    return str(db.resolve().parent / "mlartifacts") if db is not None else None


#: Columns of an MLflow SQLite store that hold artifact locations (table, column).
_LOCATION_COLUMNS = (("experiments", "artifact_location"), ("runs", "artifact_uri"),
                     ("model_versions", "source"), ("model_versions", "storage_location"),
                     ("logged_models", "artifact_location"))


def relocate_store(uri: str) -> bool:
    """Point a moved SQLite store at its artifacts again; returns whether anything was rewritten.

    MLflow records artifact locations as absolute ``file://`` URIs. A store folder copied or
    moved whole (``mlflow.db`` with ``mlartifacts/`` beside it) keeps the old ones; when an
    experiment's recorded location does not exist but ``mlartifacts/<experiment>`` beside the
    database does, every location under the old root is rewritten to the new one. Stores
    whose artifacts are elsewhere (a server, object storage) are left alone.
    """
    import sqlite3

    db = sqlite_path(uri)
    if db is None or not db.is_file():
        return False
    here = db.resolve().parent / "mlartifacts"
    changed = False
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute("SELECT name, artifact_location FROM experiments").fetchall()
        except sqlite3.Error:
            return False  # not an MLflow store (yet): MLflow creates or refuses it
        for name, location in rows:
            if not (location or "").startswith("file://"):
                continue
            old = Path(_file_uri_path(location))
            new = here / old.name
            if old.exists() or not new.is_dir() or old.parent == here:
                continue
            old_root, new_root = old.parent.as_uri(), here.as_uri()
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table, column in _LOCATION_COLUMNS:
                if table in tables:
                    conn.execute(f"UPDATE {table} SET {column} = ? || substr({column}, ?) WHERE {column} LIKE ?",
                                 (new_root, len(old_root) + 1, old_root + "/%"))
            changed = True
    if changed:
        log.warning("tracking store %s was moved: its artifact locations now point to %s", db, here)
    return changed


def _file_uri_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


@contextmanager
def _store_init_lock(uri: str) -> Iterator[None]:
    """Serialise opening a SQLite store across local processes.

    MLflow creates the tables of a fresh SQLite file without a lock, so two workers
    opening a new store at once can both try; a server or another database needs none.
    """
    try:
        import fcntl
    except ImportError:  # Windows: no flock; a single worker per SQLite store there
        fcntl = None
    if not uri.startswith("sqlite:") or fcntl is None:
        yield
        return
    name = hashlib.sha256(uri.encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir(), f"camdf-mlflow-init-{name}.lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _proc_start(pid: int) -> str | None:
    """Start time of a live process in clock ticks since boot; None if it is gone or a zombie.

    An empty string means the process exists but ``/proc`` cannot tell its start.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (macOS): existence only
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and ')'
    if fields[0] in ("Z", "X"):  # a SIGKILLed worker nobody has reaped yet
        return None
    return fields[19]


def _node() -> str:
    """Where a pid means something: host name, boot id and pid namespace."""
    parts = [socket.gethostname()]
    for read in (lambda: Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
                 lambda: os.readlink("/proc/self/ns/pid")):
        try:
            parts.append(read())
        except OSError:
            parts.append("")
    return "|".join(parts)


class _Heartbeat(threading.Thread):
    """Refreshes ``claim.heartbeat`` of a run every ``every`` seconds until stopped."""

    def __init__(self, uri: str, run_id: str, every: float):
        super().__init__(name=f"camdf-heartbeat-{run_id[:8]}", daemon=True)
        self.uri, self.run_id, self.every = uri, run_id, every
        self._halt = threading.Event()

    def run(self) -> None:
        import mlflow

        client = mlflow.MlflowClient(tracking_uri=self.uri)
        while not self._halt.wait(self.every):
            try:
                client.set_tag(self.run_id, "claim.heartbeat", f"{time.time():.3f}")
            except Exception as exc:  # a missed beat only matters after the whole timeout
                log.warning("heartbeat of run %s failed: %s", self.run_id, exc)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)


@dataclass
class Claim:
    """The outcome of :meth:`Tracker.claim`.

    Attributes
    ----------
    run : mlflow.entities.Run
        The RUNNING run this worker now holds (``won``), or the key's FINISHED run.
    won : bool
        True when this worker must compute the cell (and end ``run``).
    """

    run: Any
    won: bool
    _heartbeat: _Heartbeat | None = field(default=None, repr=False)

    def release(self) -> None:
        """Stop refreshing the heartbeat (the run itself is left as it is)."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None


class Tracker:
    """A thin wrapper over :class:`mlflow.MlflowClient` for cell runs of one experiment.

    Parameters
    ----------
    uri : str
        Tracking URI. A server (``http(s)://``) is checked first: one that does not
        answer raises :class:`TrackingUnreachable` within seconds.
    experiment : str
        MLflow experiment name (created if missing).
    artifact_root : str or None
        Where a new experiment stores artifacts when the store is local; None lets
        a tracking server decide.
    claim_timeout : float, optional
        Seconds without a heartbeat after which another worker's claim on a cell
        counts as dead (default: ``CAMDF_CLAIM_TIMEOUT`` or 300).
    claim_poll : float, optional
        Seconds between looks at the winning run while waiting for it (default 2).
    """

    def __init__(self, uri: str, experiment: str, artifact_root: str | None = None, *,
                 claim_timeout: float | None = None, claim_poll: float | None = None,
                 roots: tuple[str | os.PathLike, ...] = ()):
        self.uri = uri
        self.roots = tuple(roots)
        artifact_root = artifact_root or default_artifact_root(uri)
        self.claim_timeout = float(claim_timeout or os.environ.get("CAMDF_CLAIM_TIMEOUT") or CLAIM_TIMEOUT)
        self.claim_poll = float(claim_poll or CLAIM_POLL)
        with _store_init_lock(uri):
            self.client = _client(uri)  # raises TrackingUnreachable when a tracking server does not answer
            relocate_store(uri)
            exp = self.client.get_experiment_by_name(experiment)
            if exp is None:
                location = None
                if artifact_root is not None and "://" in artifact_root:
                    location = f"{artifact_root.rstrip('/')}/{experiment}"  # s3://..., mlflow-artifacts:/...
                elif artifact_root is not None:
                    location = Path(artifact_root, experiment).resolve().as_uri()
                try:
                    self.experiment_id = self.client.create_experiment(experiment, artifact_location=location)
                except Exception:  # another worker created it first
                    exp = self.client.get_experiment_by_name(experiment)
                    if exp is None:
                        raise
                    self.experiment_id = exp.experiment_id
            else:
                self.experiment_id = exp.experiment_id
        self.experiment = experiment

    def runs(self, filter_string: str = "", status: str | None = "FINISHED") -> list:
        """Every run of the experiment matching the filter (all pages), oldest first."""
        clauses = [c for c in (filter_string, f"attributes.status = '{status}'" if status else "") if c]
        out, token = [], None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], filter_string=" and ".join(clauses), max_results=1000,
                order_by=["attributes.start_time ASC"], page_token=token,
            )
            out += list(page)
            token = page.token
            if not token:
                return out

    def finished(self, key: str):
        """The latest FINISHED cell run with this key, or None.

        Only cell runs count (:func:`is_cell`): the train stage's policy runs carry the key
        of their cell too.
        """
        runs = [r for r in self.runs(f"tags.{CELL_KEY} = '{key}'") if is_cell(r)]
        return runs[-1] if runs else None

    def _key_runs(self, key: str) -> list:
        """Every cell run of the key, whatever its status (deleted runs aside), oldest first."""
        return [r for r in self.runs(f"tags.{CELL_KEY} = '{key}'", status=None) if is_cell(r)]

    # -- claims ---------------------------------------------------------------------------------

    def _live(self, run, timeout: float, now: float) -> bool:
        """Whether a run is a claim whose worker may still be computing the cell."""
        tags = run.data.tags
        if run.info.status != "RUNNING" or "claim.token" not in tags:
            return False
        if now - float(tags.get("claim.heartbeat", 0)) > timeout:
            return False
        if tags.get("claim.node") == _node():
            start = _proc_start(int(tags.get("claim.pid", -1)))
            if start is None or (start and tags.get("claim.pid_start") and start != tags["claim.pid_start"]):
                return False  # the process is gone, or its pid now belongs to another one
        return True

    def _withdraw(self, run_id: str) -> None:
        self.client.set_terminated(run_id, status="KILLED")
        self.client.delete_run(run_id)

    def _await(self, winner_id: str, timeout: float):
        """Wait for another worker's claim: its FINISHED run, or None once it failed or died."""
        from mlflow.exceptions import MlflowException

        while True:
            time.sleep(self.claim_poll)
            try:
                run = self.client.get_run(winner_id)
            except MlflowException:  # purged (mlflow gc): it will never finish
                return None
            if run.info.status == "FINISHED":
                return run
            if not self._live(run, timeout, time.time()):
                return None

    def claim(self, key: str, name: str, tags: dict[str, str] | None = None,
              timeout: float | None = None) -> Claim:
        """Claim a cell key for this worker, or find its FINISHED run (the module docstring has the protocol).

        Blocks while another live worker holds the key.

        Parameters
        ----------
        key, name : str
            Cell key and run name.
        tags : dict, optional
            Tags of the claim run (it becomes the cell's run if this worker wins).
        timeout : float, optional
            Heartbeat timeout for this claim (default ``self.claim_timeout``).

        Returns
        -------
        Claim
            ``won`` with a RUNNING run whose heartbeat is kept fresh until
            :meth:`cell_run` ends it, or not ``won`` with the key's FINISHED run.
        """
        if (tags or {}).get("kind", CELL) != CELL:
            raise ValueError(f"claim: a cell run's kind is {CELL!r}, got {tags['kind']!r}; "
                             "runs of another kind are not cell runs")
        tags = portable({**(tags or {}), "kind": CELL}, self.roots)
        timeout = float(timeout or self.claim_timeout)
        beat_every = max(0.5, min(30.0, timeout / 5))
        ident = {"claim.host": socket.gethostname(), "claim.node": _node(), "claim.pid": str(os.getpid()),
                 "claim.pid_start": _proc_start(os.getpid()) or ""}
        while True:
            done = self.finished(key)
            if done is not None:
                return Claim(done, won=False)
            beat = time.time()
            run = self.client.create_run(self.experiment_id, run_name=name, tags={
                CELL_KEY: key, **tags, **ident, "claim.token": uuid.uuid4().hex,
                "claim.heartbeat": f"{beat:.3f}"})
            rid = run.info.run_id
            seen = self._key_runs(key)
            tickets = [int(r.data.tags["claim.ticket"]) for r in seen if "claim.ticket" in r.data.tags]
            ticket = 1 + max(tickets, default=0)
            self.client.set_tag(rid, "claim.ticket", str(ticket))
            while True:
                runs = self._key_runs(key)
                done = [r for r in runs if r.info.status == "FINISHED"]
                if done:
                    self._withdraw(rid)
                    return Claim(done[-1], won=False)
                mine = next((r for r in runs if r.info.run_id == rid), None)
                if mine is None or mine.info.status != "RUNNING":  # taken for dead by another worker
                    break
                now = time.time()
                if now - beat > beat_every:
                    beat = now
                    self.client.set_tag(rid, "claim.heartbeat", f"{beat:.3f}")
                others = [r for r in runs if r.info.run_id != rid and self._live(r, timeout, now)]
                if any("claim.ticket" not in r.data.tags for r in others):
                    time.sleep(0.05)  # someone is still drawing a ticket
                    continue
                rank = lambda r: (int(r.data.tags["claim.ticket"]), r.info.run_id)  # noqa: E731
                winner = min([mine, *others], key=rank)
                if winner is mine:
                    live = {rid, *(r.info.run_id for r in others)}
                    for r in runs:  # dead claims and unclaimed leftovers of killed workers
                        if r.info.status == "RUNNING" and r.info.run_id not in live:
                            self.client.set_tag(r.info.run_id, "claim.taken_over_by", rid)
                            self.client.set_terminated(r.info.run_id, status="KILLED")
                    heartbeat = _Heartbeat(self.uri, rid, beat_every)
                    heartbeat.start()
                    return Claim(mine, won=True, _heartbeat=heartbeat)
                self._withdraw(rid)
                finished = self._await(winner.info.run_id, timeout)
                if finished is not None:
                    return Claim(finished, won=False)
                break  # the winner failed or died: claim afresh

    @contextmanager
    def cell_run(self, key: str, name: str, params: dict[str, str], tags: dict[str, str],
                 claim: Claim | None = None) -> Iterator:
        """Start a run for a cell (or use a won ``claim``'s run); FINISHED on success, FAILED on an exception.

        With a claim, a run that another worker has meanwhile taken over (it is no longer
        RUNNING) or whose key got a FINISHED run elsewhere is not marked FINISHED.
        The run is tagged with :func:`~camdf.common.machine.numeric_environment`
        (``numeric.*``) besides ``tags``.
        """
        tags = portable({**numeric_environment(), **tags}, self.roots)
        params = portable(params, self.roots)
        if claim is None:
            run = self.client.create_run(self.experiment_id, run_name=name, tags={CELL_KEY: key, **tags})
        elif not claim.won:
            raise ValueError(f"cell_run: the claim on cell {key} was lost to run {claim.run.info.run_id}; "
                             "expected a won claim (reuse that run instead)")
        else:
            run = claim.run
        rid = run.info.run_id
        try:
            items = list(params.items())
            from mlflow.entities import Param, RunTag

            if claim is not None:
                self.client.log_batch(rid, tags=[RunTag(k, v) for k, v in tags.items()])
            for i in range(0, len(items), 100):
                self.client.log_batch(rid, params=[Param(k, v) for k, v in items[i:i + 100]])
            yield run
        except BaseException:
            if claim is not None:
                claim.release()
            self.client.set_terminated(rid, status="FAILED")
            raise
        if claim is None:
            self.client.set_terminated(rid, status="FINISHED")
            return
        claim.release()
        status = self.client.get_run(rid).info.status
        if status != "RUNNING":
            log.warning("cell %s: run %s was taken over by another worker (%s); not marking it FINISHED",
                        key, rid, status)
            return
        other = self.finished(key)
        if other is not None:
            self.client.set_tag(rid, "claim.duplicate_of", other.info.run_id)
            self.client.set_terminated(rid, status="KILLED")
            return
        self.client.set_terminated(rid, status="FINISHED")

    def open_kind_run(self, kind: str, name: str, tags: dict[str, str], same: tuple[str, ...] = ()) -> str:
        """The id of a RUNNING run of another ``kind`` (tables, sweep) that is updated, not duplicated: the
        latest run of the kind whose tags ``same`` equal ``tags``'s is reopened, else one is created."""
        from mlflow.entities import RunTag

        tags = portable({**tags, "kind": kind}, self.roots)
        clauses = [f"tags.kind = '{kind}'", *(f"tags.`{k}` = '{tags[k]}'" for k in same)]
        found = self.runs(" and ".join(clauses), status=None) if same else []
        if not found:
            return self.client.create_run(self.experiment_id, run_name=name, tags=tags).info.run_id
        rid = found[-1].info.run_id
        self.client.update_run(rid, status="RUNNING", name=name)
        self.client.log_batch(rid, tags=[RunTag(k, v) for k, v in tags.items()])
        return rid

    def close_kind_run(self, run_id: str, status: str = "FINISHED") -> None:
        self.client.set_terminated(run_id, status=status)

    @contextmanager
    def kind_run(self, kind: str, name: str, tags: dict[str, str], same: tuple[str, ...] = ()) -> Iterator:
        """:meth:`open_kind_run` as a context: FINISHED on success, FAILED on an exception."""
        rid = self.open_kind_run(kind, name, tags, same)
        try:
            yield self.client.get_run(rid)
        except BaseException:
            self.close_kind_run(rid, "FAILED")
            raise
        self.close_kind_run(rid, "FINISHED")

    def log_metrics(self, run_id: str, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)  # when it was logged (the UI shows it); values are what results read
        items = [Metric(k, float(v), now, 0) for k, v in sorted(metrics.items())]
        for i in range(0, len(items), 500):
            self.client.log_batch(run_id, metrics=items[i:i + 500])

    def log_files(self, run_id: str, files: dict[str, bytes | str], folders: dict[str, str] | None = None) -> None:
        """Log in-memory files (``relative/path -> content``) and whole folders as artifacts."""
        with tempfile.TemporaryDirectory() as tmp:
            for rel, content in files.items():
                path = Path(tmp, rel)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content if isinstance(content, bytes) else content.encode())
            if files:
                self.client.log_artifacts(run_id, tmp)
        for dest, folder in (folders or {}).items():
            if Path(folder).is_dir():
                self.client.log_artifacts(run_id, folder, artifact_path=dest)

    def load_table(self, run_id: str, rel: str) -> pd.DataFrame:
        """Read a parquet artifact of a run."""
        with tempfile.TemporaryDirectory() as tmp:
            path = self.client.download_artifacts(run_id, rel, tmp)
            return pd.read_parquet(path)


def store_has_experiment(uri: str, experiment: str) -> bool:
    """Whether the store at ``uri`` holds ``experiment``, without creating either.

    A SQLite store whose file does not exist has no experiment (and is not created by
    asking); a reader such as the tables stage refuses instead of making an empty one.
    A tracking server that does not answer raises :class:`TrackingUnreachable`.
    """
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        return False
    return _client(uri).get_experiment_by_name(experiment) is not None
