"""Content keys for stage caches: resolved config + code version + upstream inputs.

A cache keyed on parameters alone goes stale when code or inputs change, so every
key here mixes three fingerprints: the config, the source of the code that
produces the output, and the bytes (or versions) of everything upstream.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterable


def hash_json(obj: Any) -> str:
    """SHA-256 of a JSON-serialisable object in canonical form."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def hash_paths(paths: Iterable[str | os.PathLike]) -> str:
    """SHA-256 over the relative names and bytes of files (folders are walked in sorted order).

    A path that is neither a folder nor a regular file (a FIFO, a device) counts by its name
    alone: reading it might never end, and what reads the input refuses it.
    """
    h = hashlib.sha256()
    for root in paths:
        root = Path(root)
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for f in files:
            if not f.exists():
                raise FileNotFoundError(f"input to fingerprint does not exist: {f}")
            h.update(str(f.relative_to(root) if root.is_dir() else f.name).encode())
            if not f.is_file():  # a FIFO or device would never end: its name only (the reader refuses it)
                h.update(b"\0not a regular file")
                continue
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def code_version(*modules: str) -> str:
    """Fingerprint of the source of the given modules or packages (every ``.py`` file under a package)."""
    paths = []
    for name in modules:
        mod = importlib.import_module(name)
        path = Path(mod.__file__)
        paths += sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
    return hash_paths(paths)


def defining_package(obj: Any) -> str:
    """The package whose modules define ``obj`` (a class, an instance, a function).

    ``camdf.integrations.tau2`` for tau2's ``Retail`` (defined in
    ``camdf.integrations.tau2.executable``): :func:`code_version` of it covers every module of
    the package, so a cache key over it needs no hand-written list. An object defined in a
    package's ``__init__`` gives that package; one in a top-level module gives the module.
    """
    module = obj.__module__
    file = getattr(sys.modules.get(module), "__file__", None) or ""
    if Path(file).name == "__init__.py" or "." not in module:
        return module
    return module.rpartition(".")[0]


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed versions of distribution packages, for cache keys and provenance."""
    return {name: importlib.metadata.version(name) for name in names}
