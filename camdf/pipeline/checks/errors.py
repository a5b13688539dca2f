"""What every config check raises and shows: :class:`ConfigError`, the shown value, and the converter allow-list.

Kept apart from :mod:`camdf.pipeline.checks.values` so the gates (:mod:`camdf.pipeline.checks.gates`) and the
kind check (:mod:`camdf.pipeline.checks.kinds`), which the schema calls, need not import the schema.
"""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A config value the stage cannot run with: ``key: expected <what>, got <value>``."""

    def __init__(self, key: str, value: Any, expected: str):
        self.key, self.value, self.expected = key, value, expected
        super().__init__(f"{key}: expected {expected}, got {value!r}")


def _shown(value: Any) -> Any:
    """A value as an error message shows it: a very long number cut to its first digits and its length."""
    text = str(value)
    return f"{text[:20]}... ({len(text)} characters)" if isinstance(value, (int, float, str)) and len(text) > 40 \
        else value


#: The converters ``domain.converter._target_`` may name that are no integration's: the task-format reader
#: and the distractor builder. A config value never names code to run (Hydra would import and call whatever
#: it names): the allow-list is these plus every integration's declared converters (:func:`converters`).
BUILT_IN_CONVERTERS = (
    "camdf.data.io.read_domain",
    "camdf.data.distractors.with_distractors",
)


def converters() -> tuple[str, ...]:
    """The allow-list of ``converter._target_``: :data:`BUILT_IN_CONVERTERS` and the integrations' declared ones."""
    from camdf.integrations.registry import converters as declared

    return (*BUILT_IN_CONVERTERS, *declared())


#: What :func:`get_dotted` returns for an absent key unless told otherwise (a key may hold ``None``).
MISSING = object()


def get_dotted(cfg: dict, dotted: str, default: Any = MISSING) -> Any:
    """The value at ``dotted`` (``"paths.output_dir"``) in a plain nested dict, or ``default`` when absent."""
    node: Any = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node
