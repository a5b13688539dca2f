"""The whole composed config type-checked, against a schema generated from the shipped configs.

:func:`schema` reads the stage's primary config composed with its defaults and every file of
every config group under ``conf/`` (experiments included, at their ``@package``): each dotted
key gets the kinds of value it has anywhere (a node, a list and its items' kinds, a number, a
boolean, a string, null). :func:`check_kinds` then walks a resolved config: every key must be
in the schema (or under a free-form node: a scorer's or cost regime's ``params``, a domain's
task filter and converter arguments), every value of a kind the key has somewhere (so
``candidates=5`` is refused naming ``candidates``, a boolean key takes only ``true``/``false``,
not ``2`` or ``[1]``), a string non-empty and short, a list not huge (:data:`MAX_TEXT`, :data:`MAX_ITEMS`), every
number finite and inside :data:`DEFAULT_RANGE` unless the stage's
schema (:data:`camdf.pipeline.checks.values.SCHEMAS`) bounds that key more tightly. The explicit
checks of the schema then run as before.
"""

from __future__ import annotations

import functools
import math
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Iterator

from camdf.pipeline.identity import CONF_DIR
from camdf.pipeline.checks.errors import ConfigError, _shown

#: Nodes whose keys are free-form (passed to a scorer, a cost regime, a converter, a task filter): their own
#: checks name what is wrong; only the node itself must be a node (or null).
FREE = ("scorer.params", "cost.params", "domain.where", "domain.converter", "domain.meta", "hydra",
        "transfer.domains")  # transfer.domains: whole domain configs (the domain group's files), checked by name
#: Keys a config may add with ``+`` (camdf.pipeline.checks.choices.OPTIONAL_KEYS) that no shipped file sets.
ADDABLE = ("domain.label_source", "domain.executable", "domain.keep_non_executable",
           "domain.report_execution_costs", "domain.environment", "tracking.claim_timeout", "cost.random_state",
           "scorer.label")
#: The range of a number no explicit check bounds: finite, and no larger in size than this.
DEFAULT_RANGE = 1e9
#: The longest string and list a config value may be (no shipped value comes near).
MAX_TEXT, MAX_ITEMS = 4096, 10_000

NODE, LIST, NUMBER, BOOL, STR, NULL, ANY = "a node", "a list", "a number", "a boolean (true or false)", "a string", \
    "null", "any value"


def kind(value: Any) -> str:
    """The kind of a config value (ints and floats are one kind: numbers)."""
    if isinstance(value, dict):
        return NODE
    if isinstance(value, (list, tuple)):
        return LIST
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, str):
        return ANY if "${" in value else STR
    return NULL if value is None else type(value).__name__


def _walk(node: Any, prefix: str = "", into_free: bool = False) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every entry; a list's items as ``key[]``; not inside :data:`FREE` nodes unless asked."""
    if isinstance(node, dict):
        for key, value in node.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            yield name, value
            if into_free or not any(name == f or name.startswith(f"{f}.") for f in FREE):
                yield from _walk(value, name, into_free)
    elif isinstance(node, (list, tuple)):
        for value in node:
            yield f"{prefix}[]", value
            yield from _walk(value, f"{prefix}[]", into_free)


def _package(path: Path, group: str) -> str:
    head = path.read_text(encoding="utf-8").splitlines()[:3]
    for line in head:
        if line.startswith("# @package"):
            pkg = line.split(None, 2)[2].strip()
            return "" if pkg == "_global_" else pkg
    return group.replace("/", ".")


@functools.lru_cache(maxsize=None)
def schema(stage: str, conf_dir: Path = CONF_DIR) -> dict[str, frozenset[str]]:
    """Dotted key -> the kinds its value has in ``stage``'s composed defaults or any group file of ``conf/``."""
    import yaml
    from omegaconf import OmegaConf

    from camdf.pipeline.checks.choices import compose

    kinds: dict[str, set[str]] = {}

    def add(tree: Any, prefix: str = "") -> None:
        for key, value in _walk(tree, prefix):
            kinds.setdefault(key, set()).add(kind(value))

    cfg = compose(stage, [])
    try:
        add(OmegaConf.to_container(cfg, resolve=True))
    except Exception:  # noqa: BLE001  an interpolation that needs the environment: the unresolved values
        add(OmegaConf.to_container(cfg, resolve=False))
    for path in sorted(conf_dir.rglob("*.yaml")):
        group = path.parent.relative_to(conf_dir).as_posix()
        if group == "." or group.startswith("hydra"):
            continue
        tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        tree = {k: v for k, v in tree.items() if k not in ("defaults", "hydra")}
        pkg = _package(path, group)
        add(tree, pkg)
        if pkg:
            kinds.setdefault(pkg, set()).add(NODE)
    return {k: frozenset(v) for k, v in kinds.items()}


def _parents(key: str) -> Iterator[str]:
    parts = key.split(".")
    for i in range(1, len(parts)):
        yield ".".join(parts[:i])


def check_kinds(cfg: dict[str, Any], stage: str, bounded: Any = ()) -> None:
    """Refuse a key that no config has, a value of a kind its key never has, a non-finite or far-out number.

    ``bounded`` holds the keys the stage's schema (:data:`camdf.pipeline.checks.values.SCHEMAS`) checks
    itself with bounds of their own; any other number must lie within :data:`DEFAULT_RANGE`.
    """
    known = schema(stage)
    for key, value in _walk(cfg):
        if key.split("[")[0] == "hydra" or key.startswith("hydra."):
            continue
        if key in FREE and isinstance(value, (dict, list)):  # free-form, but its numbers are finite and bounded
            for inner, leaf in _walk(value, key, into_free=True):
                if kind(leaf) == NUMBER and (not math.isfinite(leaf) or abs(leaf) > DEFAULT_RANGE):
                    raise ConfigError(inner, _shown(leaf), f"a finite number of size at most {DEFAULT_RANGE:g}")
        allowed = known.get(key)
        if allowed is None:
            if key in FREE or key.endswith("[]") or any(fnmatchcase(key, p) for p in ADDABLE) or \
                    any(p in FREE for p in _parents(key)):
                continue
            import difflib

            close = difflib.get_close_matches(key, sorted(k for k in known if "[" not in k), n=1, cutoff=0.6)
            raise ConfigError(key, _shown(value), "no value: no config has this key"
                              + (f" (closest known key: {close[0]})" if close else ""))
        if key in bounded:
            continue  # the stage's explicit check (camdf.pipeline.checks.values.SCHEMAS) decides, more tightly
        got = kind(value)
        if ANY not in allowed and got not in allowed and got != ANY:
            expected = " or ".join(sorted(allowed - {ANY}))
            if got == NUMBER and BOOL in allowed:
                expected += " (a boolean is true or false, not a number)"
            raise ConfigError(key, _shown(value), expected)
        if got == STR and (not value or len(value) > MAX_TEXT or "\x00" in value):
            raise ConfigError(key, _shown(value), f"a non-empty string of at most {MAX_TEXT} characters")
        if got == LIST and len(value) > MAX_ITEMS:
            raise ConfigError(key, f"a list of {len(value)} items", f"a list of at most {MAX_ITEMS} items")
        if got == NUMBER and key.removesuffix("[]") not in bounded:
            if not (math.isfinite(value) if isinstance(value, float) else True) or abs(value) > DEFAULT_RANGE:
                raise ConfigError(key, _shown(value), f"a finite number of size at most {DEFAULT_RANGE:g}")
