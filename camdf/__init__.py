"""camdf: cost-aware tool acquisition (CAM-DF) for LLM agent harnesses."""

__version__ = "0.1.0"
