"""MLflow tracking: one run per cell, found again by its cell key, claimed before it is computed.

The package sits below :mod:`camdf.pipeline` and :mod:`camdf.reporting` (both read and write
runs through it) and imports nothing of camdf above :mod:`camdf.common`. By job:

- :mod:`camdf.tracking.runs`: what a cell run is (its ``kind`` and ``cell_key`` tags);
- :mod:`camdf.tracking.probe`: asking a tracking server once, quickly, before MLflow's retries;
- :mod:`camdf.tracking.locations`: where a store and its artifacts live, relocating a moved SQLite
  store, and values written without the machine's paths;
- :mod:`camdf.tracking.leases`: claims and heartbeats, so one worker computes each cell;
- :mod:`camdf.tracking.client`: the run client (:class:`~camdf.tracking.client.Tracker`).
"""
