"""A sweep's parent run and its progress display (a Hydra callback, :class:`SweepRun`).

Before the jobs of ``python -m pipelines.evaluate -m ...`` start, the callback opens
one MLflow run of kind ``sweep`` for the experiment at the checkout's code version
(reopened, not duplicated, when the same experiment is swept again at that version)
and hands its id to the jobs in ``CAMDF_SWEEP_RUN`` (launchers pass the environment
on to their workers). Each job records itself on that run: a cell it computes
becomes a child run (``mlflow.parentRunId``), and the parent's tag
``cell.<job number>`` says ``running <cell>``, then ``logged <run id>`` or
``reused <run id>`` (a cell some earlier sweep computed). A computed cell's run is named by
what the sweep varies (``lam=0.12 d=1.0 | retail/bm25``, :func:`sweep_run_name`). When the sweep
ends the parent logs ``cells.csv`` (one row per job; the ``cell.*`` tags are then removed), the sweep's table (``sweep.md``,
``sweep.csv``: one row per cell, CAM-DF against its cell's best baseline) and, for a
lambda x d grid, the A18 heatmap (``figures/heatmap.png``; one per value of every other key the
sweep varies, e.g. ``figures/heatmap_scorer.label=bm25.png``); the metrics ``sweep/n_cells``,
``sweep/n_logged``, ``sweep/n_reused``, ``sweep/n_camdf_above`` and ``sweep/n_camdf_below``
(cells where CAM-DF's CI against the best baseline lies above / below 0) and a
description (the report is :mod:`camdf.reporting.sweep_report`'s); it ends FINISHED. A sweep that dies ends its parent FAILED.

While the jobs run, a rich progress display in the launching process reads those
tags (cells done / total, elapsed, ETA, the cell being computed). It is off when
``CI`` is set (to anything but ``false`` or ``0``) or standard error is not a
terminal.
"""

from __future__ import annotations

import atexit
import csv
import io
import os
import threading
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from camdf.common.progress import quiet

#: The environment variable that carries the parent run's id to the jobs.
ENV = "CAMDF_SWEEP_RUN"
#: The environment variable that names the keys the sweep varies (comma-separated), for the cells' run names.
KEYS_ENV = "CAMDF_SWEEP_KEYS"
#: The kind tag of a sweep's parent run.
SWEEP = "sweep"


def record_job(tracker, job: int | None, status: str) -> None:
    """A job's line on its sweep's parent run (``cell.<job>``); nothing outside a sweep."""
    parent = os.environ.get(ENV)
    if parent and job is not None:
        key = f"cell.{int(job):04d}"
        if status.startswith("running ") and _done(tracker.client.get_run(parent).data.tags.get(key, "")):
            return  # a concurrent sweep of the same jobs logged this cell already: merged, never set back
        tracker.client.set_tag(parent, key, status[:5000])


def parent_tags() -> dict[str, str]:
    """The tag that makes a run a child of the current sweep's parent (empty outside a sweep)."""
    parent = os.environ.get(ENV)
    return {"mlflow.parentRunId": parent} if parent else {}


def sweep_domains(config: Any, jobs: list[list[str]]) -> str:
    """The domain (or the domains, comma-separated) a sweep's cells are of: the swept ``domain=`` values, else the
    config's ``domain.name``."""
    swept = sorted({o.split("=", 1)[1] for job in jobs for o in job if o.split("=", 1)[0].lstrip("+~") == "domain"})
    if swept:
        return ",".join(swept)
    return str(OmegaConf.select(config, "domain.name", default=None, throw_on_resolution_failure=False) or "no domain")


def sweep_run_name(cfg: dict[str, Any]) -> str | None:
    """A cell's run name inside a sweep: what varies first, then where (``lam=0.12 d=1.0 | retail/bm25``), so
    the UI's run list shows the values that tell the cells apart; None outside a sweep."""
    keys = [k for k in os.environ.get(KEYS_ENV, "").split(",") if k]
    if not keys:
        return None
    parts = []
    for key in keys:
        value: Any = cfg
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, dict):  # a config group (scorer=...): its label or name
            value = value.get("label", value.get("name"))
        parts.append(f"{key.rsplit('.', 1)[-1]}={value}")
    scorer = cfg["scorer"].get("label", cfg["scorer"]["name"])
    return f"{' '.join(parts)} | {cfg['domain']['name']}/{scorer}"


def _cells(tags: dict[str, str]) -> dict[int, str]:
    """Job number -> its line (``running <cell>``, ``logged <run id>``, ``reused <run id>``)."""
    return {int(k.split(".", 1)[1]): v for k, v in tags.items() if k.startswith("cell.") and k[5:].isdigit()}


def _done(line: str) -> bool:
    """Whether a job's line says its cell has a run (computed now or by an earlier sweep)."""
    return line.startswith(("logged ", "reused "))


def summarise(tracker, run_id: str, experiment: str, run_ids: list[str]) -> None:
    """Log a sweep's table, heatmap, summary metrics, lambda curves and description
    (:mod:`camdf.reporting.sweep_report`) to its parent run."""
    from camdf.reporting.sweep_report import sweep_report

    files, metrics, curves, description = sweep_report(tracker, experiment, run_ids)
    tracker.log_files(run_id, files)
    tracker.log_metrics(run_id, metrics)
    tracker.log_series(run_id, curves)
    tracker.describe(run_id, description)


class _Progress(threading.Thread):
    """Polls the parent run's ``cell.*`` tags and renders cells done / total, ETA and the current cell."""

    def __init__(self, uri: str, run_id: str, total: int, title: str):
        super().__init__(daemon=True)
        self.uri, self.run_id, self.total, self.title = uri, run_id, total, title
        self._halt = threading.Event()

    def run(self) -> None:
        import mlflow
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
            TimeRemainingColumn

        client = mlflow.MlflowClient(tracking_uri=self.uri)
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("cells"),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[now]}"))
        with Progress(*columns, console=Console(stderr=True), refresh_per_second=2, redirect_stdout=False,
                      redirect_stderr=False) as progress:
            task = progress.add_task(self.title, total=self.total, now="")
            while True:
                stopping = self._halt.wait(1.0)
                try:
                    cells = _cells(client.get_run(self.run_id).data.tags)
                except Exception:  # noqa: BLE001  a busy store: look again next second
                    continue
                done = sum(map(_done, cells.values()))
                running = [v.split(" ", 1)[1] for _, v in sorted(cells.items()) if v.startswith("running ")]
                progress.update(task, completed=done, now=running[-1] if running else "")
                if stopping:
                    return

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)


class SweepRun(Callback):
    """Hydra callback: a parent MLflow run per evaluate sweep, child runs for its cells, a progress display."""

    def __init__(self) -> None:
        self.tracker = None
        self.run_id: str | None = None
        self.progress: _Progress | None = None

    def __getstate__(self) -> dict[str, Any]:
        """What a launcher's worker gets when it pickles the callbacks with a job (joblib does): no live state.

        The parent run, its heartbeat thread and the progress display belong to the process that
        opened them (only it calls :meth:`on_multirun_start` / :meth:`on_multirun_end`); a worker
        finds the parent by ``CAMDF_SWEEP_RUN`` in its environment.
        """
        return {**self.__dict__, "tracker": None, "run_id": None, "progress": None}

    def on_multirun_start(self, config: DictConfig, config_name: str | None = None, **kwargs: Any) -> None:
        from camdf.pipeline.identity import code_stamp
        from camdf.pipeline.sweeps import expand, sweep_params, varying_keys
        from camdf.pipeline.provenance import NOT_PARAMS
        from camdf.tracking.client import Tracker

        if config_name != "evaluate":
            return
        task = list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
        jobs = expand([*sweep_params(config), *task])
        total = len(jobs)
        experiment = OmegaConf.select(config, "hydra.runtime.choices.experiment", default=None) or "ad hoc"
        domain = sweep_domains(config, jobs)
        t = OmegaConf.to_container(config.tracking, resolve=True)
        root = OmegaConf.select(config, "paths.root_dir", default=None)
        self.tracker = Tracker(t["uri"], t["experiment"], t.get("artifact_root"), roots=(root,) if root else ())
        stamp = code_stamp()
        swept = [o for o in task if o.split("=", 1)[0].lstrip("+~") not in NOT_PARAMS]  # no machine paths
        tags = {"experiment": experiment, "domain": domain, "code_version": stamp,
                "sweep.overrides": " ".join(swept)[:5000], "sweep.n_cells": str(total)}
        self.tracker.end_stale(SWEEP)
        live = self.tracker.runs(f"tags.kind = '{SWEEP}' and tags.experiment = '{experiment}' and "
                                 f"tags.domain = '{domain}' and tags.code_version = '{stamp}'", status="RUNNING")
        # One parent per experiment, domain and code version: an airline grid of a18 is not retail's a18.
        self.run_id = self.tracker.open_kind_run(SWEEP, f"sweep {experiment} ({domain})", tags,
                                                 same=("experiment", "domain", "code_version"))
        # A reopened parent starts its job lines afresh, unless another sweep of it is running now: then the
        # two sweeps' lines are merged (same experiment and code version, same jobs), never overwritten.
        if not any(r.info.run_id == self.run_id for r in live):
            for key in _cells(self.tracker.client.get_run(self.run_id).data.tags):
                self.tracker.client.delete_tag(self.run_id, f"cell.{key:04d}")
        os.environ[ENV] = self.run_id
        os.environ[KEYS_ENV] = ",".join(k for k in varying_keys(jobs) if k.split(".", 1)[0] not in ("paths", "hydra"))
        atexit.register(self._abandon)
        if not quiet():
            self.progress = _Progress(t["uri"], self.run_id, total, f"{experiment}")
            self.progress.start()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.run_id is None:
            return
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
        client = self.tracker.client
        cells = _cells(client.get_run(self.run_id).data.tags)
        table = io.StringIO()
        writer = csv.writer(table, lineterminator="\n")
        writer.writerow(["job", "status", "run_id"])
        for job, line in sorted(cells.items()):
            status, _, rest = line.partition(" ")
            writer.writerow([job, status, rest if _done(line) else ""])
        logged = sum(v.startswith("logged ") for v in cells.values())
        reused = sum(v.startswith("reused ") for v in cells.values())
        self.tracker.log_files(self.run_id, {"cells.csv": table.getvalue()})
        for job in cells:  # the job lines are bookkeeping: cells.csv keeps them, the parent's tags do not
            client.delete_tag(self.run_id, f"cell.{job:04d}")
        self.tracker.log_metrics(self.run_id, {"sweep/n_cells": len(cells), "sweep/n_logged": logged,
                                               "sweep/n_reused": reused})
        experiment = self.tracker.client.get_run(self.run_id).data.tags.get("experiment", "ad hoc")
        summarise(self.tracker, self.run_id, experiment,
                  [line.partition(" ")[2] for _, line in sorted(cells.items()) if _done(line)])
        self.tracker.close_kind_run(self.run_id, "FINISHED")
        self.run_id = None
        os.environ.pop(ENV, None)
        os.environ.pop(KEYS_ENV, None)

    def _abandon(self) -> None:
        """At exit after a sweep that did not end (a job raised): its parent ends FAILED."""
        if self.run_id is not None:
            if self.progress is not None:
                self.progress.stop()
            try:
                self.tracker.close_kind_run(self.run_id, "FAILED", failure="a job of the sweep failed or the sweep "
                                                                          "stopped before its end (see the jobs' lines)")
            except Exception:  # noqa: BLE001  the store is gone as well: nothing left to mark
                pass
            self.run_id = None


class PrintQualityTable(Callback):
    """Hydra callback of the scores stage (``conf/scores.yaml``): print the scorer x domain quality table of a
    multirun's jobs at its end (:func:`camdf.pipeline.scores_stage.run_scores` returns each job's record)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def on_job_end(self, config, job_return, **kwargs) -> None:
        try:
            value = job_return.return_value
        except Exception:  # a failed job: Hydra reports it; the table shows the jobs that finished
            return
        if isinstance(value, dict) and "scorer" in value:
            self.records.append(value)

    def on_multirun_end(self, config, **kwargs) -> None:
        if self.records:
            import pandas as pd

            from camdf.rankers import quality_table

            print("\n" + quality_table(pd.DataFrame(self.records)))
