"""The run client: one run per cell of an experiment, found again by its cell key.

The default store is an embedded SQLite database under ``outputs/`` with artifacts
beside it; ``MLFLOW_TRACKING_URI`` overrides it (a shared ``mlflow server``, say).
A cell whose key already has a FINISHED run is skipped; a FAILED, KILLED or
unfinished one is run again (claimed first: :mod:`camdf.tracking.claims`). A run of
another kind (a policy, a sweep, the tables) is held with a heartbeat too (``owner.*``
tags): the next stage that opens a run of that kind ends the stale ones, whose holder
died or went silent (KILLED, tagged ``stale.ended_by``), so a SIGKILLed stage leaves no
RUNNING run behind for longer than that. Every
cell run is tagged with the machine's numeric environment (``numeric.*``: BLAS kernel
and threads, numpy's CPU features; :func:`camdf.common.machine.numeric_environment`).
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd

from camdf.common.machine import numeric_environment
from camdf.tracking.claims import CLAIM_POLL, CLAIM_TIMEOUT, Claim, ClaimsMixin, _Heartbeat, owner_alive, owner_tags
from camdf.tracking.locations import (
    check_store_file, default_artifact_root, portable, relocate_store, store_init_lock,
)
from camdf.tracking.probe import connect
from camdf.tracking.runs import CELL_KEY, is_cell

log = logging.getLogger(__name__)


class Tracker(ClaimsMixin):
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
        check_store_file(uri)  # a 0-byte or corrupt SQLite file: one line naming it, not an empty store
        with store_init_lock(uri):
            self.client = connect(uri)  # raises TrackingUnreachable when a tracking server does not answer
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

    def end_stale(self, kind: str, timeout: float | None = None) -> list[str]:
        """End the stale RUNNING runs of ``kind``: KILLED, tagged ``stale.ended_by``; returns their ids.

        A run is stale when its holder (``owner.*`` tags, :func:`~camdf.tracking.claims.owner_tags`)
        is gone (this machine, no such process) or silent for ``timeout`` seconds (default
        ``claim_timeout``); a run without an owner (logged by an older camdf) when it started more
        than ``timeout`` ago. Cell runs are the claims' business (:mod:`camdf.tracking.claims`).
        """
        timeout = float(timeout or self.claim_timeout)
        now = time.time()
        ended = []
        for run in self.runs(f"tags.kind = '{kind}'", status="RUNNING"):
            tags = run.data.tags
            if "owner.pid" in tags:
                if owner_alive(tags, "owner", timeout, now):
                    continue
            elif now - run.info.start_time / 1000 <= timeout:
                continue
            rid = run.info.run_id
            self.client.set_tag(rid, "stale.ended_by", f"pid {os.getpid()} at {time.strftime('%Y-%m-%dT%H:%M:%S')}")
            self.client.set_terminated(rid, status="KILLED")
            ended.append(rid)
        if ended:
            log.warning("ended %d stale %s run(s) whose stage was killed or went silent: %s", len(ended), kind,
                        ", ".join(ended))
        return ended

    def open_kind_run(self, kind: str, name: str, tags: dict[str, str], same: tuple[str, ...] = ()) -> str:
        """The id of a RUNNING run of another ``kind`` (a policy, tables, a sweep), held with a heartbeat until
        :meth:`close_kind_run`; stale runs of the kind are ended first (:meth:`end_stale`).

        With ``same``, the latest run of the kind whose tags ``same`` equal ``tags``'s is reopened
        (updated, not duplicated), else one is created."""
        from mlflow.entities import RunTag

        self.end_stale(kind)
        tags = portable({**tags, "kind": kind}, self.roots)
        clauses = [f"tags.kind = '{kind}'", *(f"tags.`{k}` = '{tags[k]}'" for k in same)]
        found = self.runs(" and ".join(clauses), status=None) if same else []
        owner = owner_tags("owner")
        if not found:
            rid = self.client.create_run(self.experiment_id, run_name=name, tags={**tags, **owner}).info.run_id
        else:
            rid = found[-1].info.run_id
            self.client.update_run(rid, status="RUNNING", name=name)
            self.client.log_batch(rid, tags=[RunTag(k, v) for k, v in {**tags, **owner}.items()])
        beat = _Heartbeat(self.uri, rid, max(0.5, min(30.0, self.claim_timeout / 5)), prefix="owner")
        beat.start()
        self.__dict__.setdefault("_beats", {})[rid] = beat
        return rid

    def close_kind_run(self, run_id: str, status: str = "FINISHED") -> None:
        """End a run of :meth:`open_kind_run` with ``status`` (its heartbeat stops)."""
        beat = self.__dict__.get("_beats", {}).pop(run_id, None)
        if beat is not None:
            beat.stop()
        self.client.set_terminated(run_id, status=status)

    @contextmanager
    def kind_run(self, kind: str, name: str, tags: dict[str, str], same: tuple[str, ...] = ()) -> Iterator:
        """:meth:`open_kind_run` as a context: FINISHED on success, FAILED on an exception, KILLED on Ctrl-C."""
        rid = self.open_kind_run(kind, name, tags, same)
        try:
            yield self.client.get_run(rid)
        except BaseException as err:
            self.close_kind_run(rid, "KILLED" if isinstance(err, KeyboardInterrupt) else "FAILED")
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
    check_store_file(uri)
    return connect(uri).get_experiment_by_name(experiment) is not None
