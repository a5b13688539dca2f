"""StableToolBench's solvable queries (a folder given as a setting): a real catalog of 2,479 APIs."""

from camdf.integrations.base import Integration

#: What this package offers (read by :mod:`camdf.integrations.registry`).
INTEGRATION = Integration(converters=("convert:convert_solvable_queries",))
