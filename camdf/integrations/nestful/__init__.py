"""NESTFUL's v1 nested API-call sequences (committed under ``data/sources/nestful``): 133 tools, 300 queries."""

from camdf.integrations.base import Integration

#: What this package offers (read by :mod:`camdf.integrations.registry`).
INTEGRATION = Integration(converters=("convert:convert_nestful",))
