"""Read a cell run's artifacts for the tables: its outcomes (per task, method, repeat) and its tuned parameters.

:class:`CellArtifacts` reads through a ``fetch(run_id, relative_path) -> bytes`` function
(:meth:`CellArtifacts.from_tracker` for an MLflow store) and keeps what it read, so
every table and claim that needs a cell's outcomes downloads them once per build.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from camdf.common.progress import no_download_bars

#: The artifacts a cell run logs (camdf.pipeline.cell_job.run_cell) that the tables read.
OUTCOMES, TUNED, CALIBRATION = "outcomes.parquet", "tuned.csv", "calibration.csv"


class CellArtifacts:
    """Cached reader of cell runs' ``outcomes.parquet`` and ``tuned.csv``.

    Parameters
    ----------
    fetch : callable ``(run_id, relative_path) -> bytes``
        Returns an artifact's content; raises (any exception) when the run has no such artifact.
    """

    def __init__(self, fetch: Callable[[str, str], bytes]):
        self.fetch = fetch
        self._cache: dict[tuple[str, str], pd.DataFrame | None] = {}

    @classmethod
    def from_tracker(cls, tracker) -> CellArtifacts:
        """A reader of the runs of ``tracker`` (:class:`camdf.tracking.client.Tracker`)."""
        def fetch(run_id: str, rel: str) -> bytes:
            with tempfile.TemporaryDirectory() as tmp, no_download_bars():
                return Path(tracker.client.download_artifacts(run_id, rel, tmp)).read_bytes()
        return cls(fetch)

    def _read(self, run_id: str, rel: str) -> pd.DataFrame | None:
        key = (run_id, rel)
        if key not in self._cache:
            try:
                content = self.fetch(run_id, rel)
            except Exception:  # noqa: BLE001  a run without the artifact (an older cell): the tables say so
                self._cache[key] = None
            else:
                buf = io.BytesIO(content)
                self._cache[key] = pd.read_parquet(buf) if rel.endswith(".parquet") else pd.read_csv(buf)
        return self._cache[key]

    def outcomes(self, run_id: str) -> pd.DataFrame | None:
        """The run's outcomes (one row per task, method and repeat), or None when it logged none."""
        return self._read(run_id, OUTCOMES)

    def tuned(self, run_id: str) -> pd.DataFrame | None:
        """The run's tuned parameters per (repeat, fold, method), or None when it logged none."""
        return self._read(run_id, TUNED)

    def calibration(self, run_id: str) -> pd.DataFrame | None:
        """The run's out-of-fold calibration per repeat, source and tool, or None when it logged none."""
        return self._read(run_id, CALIBRATION)
