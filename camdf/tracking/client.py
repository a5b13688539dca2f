"""The run client: one run per cell of an experiment, found again by its cell key.

The default store is an embedded SQLite database under ``outputs/`` with artifacts
beside it; ``MLFLOW_TRACKING_URI`` overrides it (a shared ``mlflow server``, say).
A cell whose key already has a FINISHED run is skipped; a FAILED, KILLED or
unfinished one is run again (claimed first: :mod:`camdf.tracking.leases`). A run of
another kind (a policy, a sweep, the tables) is held with a heartbeat too (``owner.*``
tags): the next stage that opens a run of that kind ends the stale ones, whose holder
died or went silent (KILLED, tagged ``stale.ended_by``), so a SIGKILLed stage leaves no
RUNNING run behind for longer than that. The experiment is tagged as model development
(:data:`EXPERIMENT_KIND`), so MLflow's UI opens on its runs. A cell run's tags say what
it is (experiment, domain, scorer, ...); its bookkeeping goes to one artifact,
:data:`PROVENANCE`: the machine's numeric environment (BLAS kernel and threads, numpy's CPU
features: :func:`camdf.common.machine.numeric_environment`) and, once the run is FINISHED,
the claim tags it was computed under (``claim.*``, which the claim protocol needs only
while the run is RUNNING).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd

from camdf.common.machine import numeric_environment
from camdf.common.progress import no_download_bars
from camdf.tracking.leases import CLAIM_POLL, CLAIM_TIMEOUT, Claim, ClaimsMixin, _Heartbeat, owner_alive, owner_tags
from camdf.tracking.locations import (
    check_store_file, default_artifact_root, portable, relocate_store, store_init_lock,
)
from camdf.tracking.probe import connect
from camdf.tracking.runs import CELL_KEY, is_cell

log = logging.getLogger(__name__)

#: The experiment tag MLflow 3's UI reads to open an experiment on its runs (model training), not
#: on the GenAI overview of traces.
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
#: A cell run's bookkeeping artifact: ``{"numeric": {...}, "claim": {...}}``.
PROVENANCE = "provenance.json"
#: A cell run's every metric (``metric``, ``value``): the run logs only the few a person compares
#: across cells; the tables read this table (:func:`camdf.reporting.store.runs_frame`).
#: The prefix of a cell's headline metrics (:func:`camdf.pipeline.cell_job` logs them): capitalised, so the chart
#: view, which sorts its sections by name, shows them first, and logged first, so Compare opens on them.
HEADLINE = "Headline/"
METRICS_TABLE = "metrics.parquet"
#: The tag MLflow's UI shows as a run's (and an experiment's) description.
DESCRIPTION = "mlflow.note.content"
#: The experiment's description: where to look first (the UI shows it above the runs).
EXPERIMENT_DESCRIPTION = (
    "camdf: one run per cell (domain x ranker x cost regime x lambda x d), grouped under one parent run per "
    "sweep and domain (`sweep a18 (retail)`, `sweep table2 (retail)`, ...).\n\n"
    "- Compare CAM-DF with the baselines over lambda x d: open a sweep's parent run (e.g. `sweep a18 (retail)`) -> "
    "Artifacts -> `figures/heatmap*.png` (one heatmap per value of any other key the sweep varies) and `sweep.md`.\n"
    "- Table 2 and every other table: the `tables <fingerprint>` run -> Artifacts -> `tables/` and `figures/` "
    "(the same files as outputs/tables/ and docs/results.md).\n"
    "- In the chart and compare views, the `Headline/` metrics hold each cell's result: payoff with its 95% CI "
    "and tools exposed for CAM-DF, the cell's best baseline and its best rule, and CAM-DF minus the best "
    "baseline with its CI. Every other metric of a cell is in its `metrics.parquet` artifact.\n"
    "- The shipped stopper: Models -> `camdf-stopper` (its description says how to use it).")


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
            if exp is None or exp.tags.get(EXPERIMENT_KIND[0]) != EXPERIMENT_KIND[1]:
                self.client.set_experiment_tag(self.experiment_id, *EXPERIMENT_KIND)
            if exp is None or exp.tags.get(DESCRIPTION) != EXPERIMENT_DESCRIPTION:
                self.client.set_experiment_tag(self.experiment_id, DESCRIPTION, EXPERIMENT_DESCRIPTION)
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
        RUNNING) or whose key got a FINISHED run elsewhere is not marked FINISHED. The run's
        :data:`PROVENANCE` artifact records :func:`~camdf.common.machine.numeric_environment`;
        a claimed run that ends FINISHED moves its ``claim.*`` tags there (:meth:`_file_claim`).
        """
        tags = portable(tags, self.roots)
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
            self.log_files(rid, {PROVENANCE: _provenance_json({})})
            yield run
        except BaseException as err:
            if claim is not None:
                claim.release()
            self.end_failed(rid, err)
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
        self._file_claim(rid)

    def _file_claim(self, run_id: str) -> None:
        """Move a FINISHED run's ``claim.*`` tags into its :data:`PROVENANCE` artifact.

        Only after FINISHED: while the run is RUNNING other workers read its token,
        ticket and heartbeat (:mod:`camdf.tracking.leases`); a FINISHED run ends any
        claim on its key by its status alone.
        """
        claim = {k: v for k, v in self.client.get_run(run_id).data.tags.items() if k.startswith("claim.")}
        self.log_files(run_id, {PROVENANCE: _provenance_json(claim)})
        for key in claim:
            self.client.delete_tag(run_id, key)

    def log_dataset(self, run_id: str, name: str, digest: str, source: dict[str, str],
                    profile: dict | None = None) -> None:
        """Log the data a run read as its MLflow dataset input (the UI's Dataset column and lineage).

        Parameters
        ----------
        run_id : str
        name : str
            The dataset's name (a cell's domain).
        digest : str
            Its fingerprint; MLflow keeps at most 36 characters of a digest, so a longer
            one is cut there.
        source : dict
            ``{"uri": folder}`` (source type ``local``) or ``{"package": "name==version"}``
            (source type ``package``).
        profile : dict, optional
            Shown with the dataset (task counts, the full fingerprint, ...).
        """
        from mlflow.entities import Dataset, DatasetInput, InputTag

        kind = "package" if "package" in source else "local"
        dataset = Dataset(name=name, digest=digest[:36], source_type=kind,
                          source=json.dumps(portable(source, self.roots), sort_keys=True),
                          profile=portable({"p": json.dumps(profile or {}, sort_keys=True)}, self.roots)["p"])
        self.client.log_inputs(run_id, [DatasetInput(dataset, tags=[InputTag("mlflow.data.context", "evaluation")])])

    def describe(self, run_id: str, text: str) -> None:
        """Set a run's description (the :data:`DESCRIPTION` tag the UI shows on its page)."""
        self.client.set_tag(run_id, DESCRIPTION, text[:5000])

    def end_stale(self, kind: str, timeout: float | None = None) -> list[str]:
        """End the stale RUNNING runs of ``kind``: KILLED, tagged ``stale.ended_by``; returns their ids.

        A run is stale when its holder (``owner.*`` tags, :func:`~camdf.tracking.leases.owner_tags`)
        is gone (this machine, no such process) or silent for ``timeout`` seconds (default
        ``claim_timeout``); a run without an owner (logged by an older camdf) when it started more
        than ``timeout`` ago. Cell runs are the claims' business (:mod:`camdf.tracking.leases`).
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

    def end_failed(self, run_id: str, err: BaseException | str) -> None:
        """End a run that failed: its one-line cause in the ``failure`` tag first, then FAILED (KILLED on Ctrl-C).

        A run is FAILED only with its ``failure`` tag: when the store cannot take the tag (a full
        disk), the run ends KILLED (recomputed or taken over next time, like an interrupted one).
        A store that cannot take the status either is left as it is (its heartbeat stops, so the
        next stage ends it as stale); the stage's own error line says why.
        """
        line = err if isinstance(err, str) else _one_line(err)
        status = "KILLED" if isinstance(err, KeyboardInterrupt) else "FAILED"
        try:
            self.client.set_tag(run_id, "failure", line[:5000])
        except Exception:  # noqa: BLE001  no tag, no FAILED
            status = "KILLED"
        try:
            self.client.set_terminated(run_id, status=status)
        except Exception:  # noqa: BLE001  the store is gone: the stage's line says so
            pass

    def close_kind_run(self, run_id: str, status: str = "FINISHED", failure: BaseException | str | None = None) -> None:
        """End a run of :meth:`open_kind_run` with ``status`` (its heartbeat stops); FAILED through :meth:`end_failed`."""
        beat = self.__dict__.get("_beats", {}).pop(run_id, None)
        if beat is not None:
            beat.stop()
        if status == "FAILED":
            self.end_failed(run_id, failure if failure is not None else "failed (no cause recorded)")
            return
        self.client.set_terminated(run_id, status=status)

    @contextmanager
    def kind_run(self, kind: str, name: str, tags: dict[str, str], same: tuple[str, ...] = ()) -> Iterator:
        """:meth:`open_kind_run` as a context: FINISHED on success, FAILED on an exception, KILLED on Ctrl-C."""
        rid = self.open_kind_run(kind, name, tags, same)
        try:
            yield self.client.get_run(rid)
        except BaseException as err:
            self.close_kind_run(rid, "KILLED" if isinstance(err, KeyboardInterrupt) else "FAILED", failure=err)
            raise
        self.close_kind_run(rid, "FINISHED")

    def log_metrics(self, run_id: str, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)  # when it was logged (the UI shows it); values are what results read
        # The headline first: the UI's Compare view opens on the first metric the store returns (their logged order).
        self._log_batches(run_id, [Metric(k, float(v), now, 0) for k, v in
                                   sorted(metrics.items(), key=lambda kv: (not kv[0].startswith(HEADLINE), kv[0]))])

    def log_series(self, run_id: str, series: dict[str, list[tuple[int, float]]]) -> None:
        """Log metric series (``name -> [(step, value), ...]``): a chart per name, its points by step."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._log_batches(run_id, [Metric(k, float(v), now, int(step))
                                   for k, points in sorted(series.items()) for step, v in points])

    def _log_batches(self, run_id: str, items: list) -> None:
        for i in range(0, len(items), 500):  # MLflow takes at most 1,000 metrics a batch
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
        """Read a parquet artifact of a run (without MLflow's download progress bar: the tables stage
        reads one per cell)."""
        with no_download_bars(), tempfile.TemporaryDirectory() as tmp:
            path = self.client.download_artifacts(run_id, rel, tmp)
            return pd.read_parquet(path)


def _provenance_json(claim: dict[str, str]) -> str:
    """The :data:`PROVENANCE` document: the numeric environment and the claim tags (sorted)."""
    return json.dumps({"numeric": numeric_environment(), "claim": claim}, indent=1, sort_keys=True) + "\n"


def _one_line(err: BaseException) -> str:
    """A failure's first line as the ``failure`` tag shows it (a stage's boundary re-tags it with its own line)."""
    if isinstance(err, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
