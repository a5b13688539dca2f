"""What a cell run is in the tracking store: the ``kind`` tag that marks it and the ``cell_key`` tag that finds it."""

from __future__ import annotations

CELL_KEY = "cell_key"
#: The ``kind`` tag of a cell run; policies, sweeps and tables carry their own kind.
CELL = "cell"


def is_cell(run) -> bool:
    """Whether a run is a cell's (tagged ``kind=cell``, or untagged as stores older than the tag have them)."""
    return run.data.tags.get("kind", CELL) == CELL
