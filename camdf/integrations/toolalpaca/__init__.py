"""ToolAlpaca's evaluation sets (committed under data/sources/toolalpaca): 21 public APIs, 94 functions, 208 queries."""

from camdf.integrations.base import Integration

#: What this package offers (read by :mod:`camdf.integrations.registry`).
INTEGRATION = Integration(converters=("convert:convert_toolalpaca",))
