"""MLflow tracking: one run per cell, found again by its cell key.

The default store is an embedded SQLite database under ``outputs/`` with artifacts
beside it; ``MLFLOW_TRACKING_URI`` overrides it (a shared ``mlflow server``, say).
A cell whose key already has a FINISHED run is skipped; a FAILED, KILLED or
unfinished one is run again.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

CELL_KEY = "cell_key"


def _quiet() -> None:
    for name in ("mlflow", "alembic", "sqlalchemy"):
        logging.getLogger(name).setLevel(logging.WARNING)


def store_uri(output_dir: str | os.PathLike) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else ``sqlite:///<output_dir>/mlflow.db``."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(output_dir).resolve()}/mlflow.db"


def is_local(uri: str) -> bool:
    return uri.startswith("sqlite:") or uri.startswith("file:") or "://" not in uri


def git_commit(root: str | os.PathLike) -> str:
    """HEAD's commit (suffixed ``-dirty`` when tracked files differ), or ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def flatten(cfg: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> flat ``a.b.c -> str(value)`` params (MLflow caps values at 6000 chars)."""
    out: dict[str, str] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = str(value)[:6000]
    return out


class Tracker:
    """A thin wrapper over :class:`mlflow.MlflowClient` for cell runs of one experiment.

    Parameters
    ----------
    uri : str
        Tracking URI.
    experiment : str
        MLflow experiment name (created if missing).
    artifact_root : str or None
        Where a new experiment stores artifacts when the store is local; None lets
        a tracking server decide.
    """

    def __init__(self, uri: str, experiment: str, artifact_root: str | None = None):
        import mlflow

        _quiet()
        self.uri = uri
        self.client = mlflow.MlflowClient(tracking_uri=uri)
        exp = self.client.get_experiment_by_name(experiment)
        if exp is None:
            location = None
            if artifact_root is not None and is_local(uri):
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
        """The latest FINISHED run with this cell key, or None."""
        runs = self.runs(f"tags.{CELL_KEY} = '{key}'")
        return runs[-1] if runs else None

    @contextmanager
    def cell_run(self, key: str, name: str, params: dict[str, str], tags: dict[str, str]) -> Iterator:
        """Start a run for a cell; it ends FINISHED on success and FAILED on an exception."""
        run = self.client.create_run(self.experiment_id, run_name=name, tags={CELL_KEY: key, **tags})
        rid = run.info.run_id
        try:
            items = list(params.items())
            from mlflow.entities import Param

            for i in range(0, len(items), 100):
                self.client.log_batch(rid, params=[Param(k, v) for k, v in items[i:i + 100]])
            yield run
        except BaseException:
            self.client.set_terminated(rid, status="FAILED")
            raise
        else:
            self.client.set_terminated(rid, status="FINISHED")

    def log_metrics(self, run_id: str, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        items = [Metric(k, float(v), 0, 0) for k, v in sorted(metrics.items())]
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
