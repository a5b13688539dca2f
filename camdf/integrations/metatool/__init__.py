"""MetaTool's ToolE dataset (files committed under ``data/sources/metatool``): 199 OpenAI-plugin tools."""

from camdf.integrations.base import Integration

#: What this package offers (read by :mod:`camdf.integrations.registry`).
INTEGRATION = Integration(converters=("convert:convert_metatool",))
