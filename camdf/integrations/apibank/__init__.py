"""API-Bank's test dialogues (files committed under data/sources/apibank): 69 APIs, 311 tasks over three levels."""

from camdf.integrations.base import Integration

#: What this package offers (read by :mod:`camdf.integrations.registry`).
INTEGRATION = Integration(converters=("convert:convert_apibank",))
