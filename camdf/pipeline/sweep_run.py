"""A sweep's parent run and its progress display (a Hydra callback, :class:`SweepRun`).

Before the jobs of ``python -m pipelines.evaluate -m ...`` start, the callback opens
one MLflow run of kind ``sweep`` for the experiment at the checkout's code version
(reopened, not duplicated, when the same experiment is swept again at that version)
and hands its id to the jobs in ``CAMDF_SWEEP_RUN`` (launchers pass the environment
on to their workers). Each job records itself on that run: a cell it computes
becomes a child run (``mlflow.parentRunId``), and the parent's tag
``cell.<job number>`` says ``running <cell>``, then ``logged <run id>`` or
``reused <run id>`` (a cell some earlier sweep computed). When the sweep ends the
parent logs ``cells.csv`` (one row per job) and the metrics ``sweep/n_cells``,
``sweep/n_logged`` and ``sweep/n_reused``, and ends FINISHED; a sweep that dies ends
its parent FAILED.

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
#: The kind tag of a sweep's parent run.
SWEEP = "sweep"


def record_job(tracker, job: int | None, status: str) -> None:
    """A job's line on its sweep's parent run (``cell.<job>``); nothing outside a sweep."""
    parent = os.environ.get(ENV)
    if parent and job is not None:
        tracker.client.set_tag(parent, f"cell.{int(job):04d}", status[:5000])


def parent_tags() -> dict[str, str]:
    """The tag that makes a run a child of the current sweep's parent (empty outside a sweep)."""
    parent = os.environ.get(ENV)
    return {"mlflow.parentRunId": parent} if parent else {}


def _cells(tags: dict[str, str]) -> dict[int, str]:
    """Job number -> its line (``running <cell>``, ``logged <run id>``, ``reused <run id>``)."""
    return {int(k.split(".", 1)[1]): v for k, v in tags.items() if k.startswith("cell.") and k[5:].isdigit()}


def _done(line: str) -> bool:
    """Whether a job's line says its cell has a run (computed now or by an earlier sweep)."""
    return line.startswith(("logged ", "reused "))


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

    def on_multirun_start(self, config: DictConfig, config_name: str | None = None, **kwargs: Any) -> None:
        from camdf.pipeline.identity import code_stamp
        from camdf.pipeline.sweeps import expand, sweep_params
        from camdf.pipeline.provenance import NOT_PARAMS
        from camdf.tracking.client import Tracker

        if config_name != "evaluate":
            return
        task = list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
        total = len(expand([*sweep_params(config), *task]))
        experiment = OmegaConf.select(config, "hydra.runtime.choices.experiment", default=None) or "ad hoc"
        t = OmegaConf.to_container(config.tracking, resolve=True)
        root = OmegaConf.select(config, "paths.root_dir", default=None)
        self.tracker = Tracker(t["uri"], t["experiment"], t.get("artifact_root"), roots=(root,) if root else ())
        stamp = code_stamp()
        swept = [o for o in task if o.split("=", 1)[0].lstrip("+~") not in NOT_PARAMS]  # no machine paths
        tags = {"experiment": experiment, "code_version": stamp, "sweep.overrides": " ".join(swept)[:5000],
                "sweep.n_cells": str(total)}
        self.run_id = self.tracker.open_kind_run(SWEEP, f"sweep {experiment}", tags, same=("experiment", "code_version"))
        # A reopened parent starts its job lines afresh.
        for key in _cells(self.tracker.client.get_run(self.run_id).data.tags):
            self.tracker.client.delete_tag(self.run_id, f"cell.{key:04d}")
        os.environ[ENV] = self.run_id
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
        self.tracker.log_metrics(self.run_id, {"sweep/n_cells": len(cells), "sweep/n_logged": logged,
                                               "sweep/n_reused": reused})
        self.tracker.close_kind_run(self.run_id, "FINISHED")
        self.run_id = None
        os.environ.pop(ENV, None)

    def _abandon(self) -> None:
        """At exit after a sweep that did not end (a job raised): its parent ends FAILED."""
        if self.run_id is not None:
            if self.progress is not None:
                self.progress.stop()
            try:
                self.tracker.close_kind_run(self.run_id, "FAILED")
            except Exception:  # noqa: BLE001  the store is gone as well: nothing left to mark
                pass
            self.run_id = None
