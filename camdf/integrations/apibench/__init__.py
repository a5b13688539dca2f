"""Gorilla's APIBench (committed under data/sources/apibench): 1,081 Hugging Face, TF Hub and Torch Hub models."""

from camdf.integrations.base import Integration

#: What this package offers (read by :mod:`camdf.integrations.registry`).
INTEGRATION = Integration(converters=("convert:convert_apibench",))
