"""Machine facts that can change floating-point results (BLAS kernel and threads, CPU features), as flat run tags."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
from pathlib import Path
from typing import Any

PREFIX = "numeric"
MAX_VALUE = 500  # characters per tag value

# Environment variables that pick kernels or instruction sets (thread counts show up in num_threads instead).
ENV_VARS = ("OPENBLAS_CORETYPE", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE",
            "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES")
# Where numpy keeps its CPU dispatch tables: private, so tried in turn (numpy 2.x, then 1.x).
CPU_MODULES = ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath")
# threadpoolctl fields summarised per kind of library; num_threads is the process-wide default,
# not what a ``threadpool_limits`` block inside a computation sets.
FIELDS = {"blas": ("internal_api", "version", "architecture", "threading_layer", "num_threads"),
          "openmp": ("prefix", "version", "num_threads")}  # internal_api is always "openmp"; prefix: libgomp, libomp...


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 3] + "..."


def _joined(values) -> str:
    """Distinct values, sorted, comma-joined (one value when every library agrees)."""
    return ",".join(sorted({str(v) for v in values if v is not None})) or "unknown"


def _libraries() -> dict[str, str]:
    """``numeric.<blas|openmp>.<field>`` over the libraries loaded in this process, plus one line per library."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return {f"{PREFIX}.{api}.libraries": "unknown (threadpoolctl is not installed)" for api in FIELDS}
    info = threadpool_info()
    out: dict[str, str] = {}
    for api, fields in FIELDS.items():
        libs = [lib for lib in info if lib.get("user_api") == api]
        if not libs:
            out[f"{PREFIX}.{api}.libraries"] = "none loaded"
            continue
        for name in fields:
            if any(name in lib for lib in libs):
                out[f"{PREFIX}.{api}.{name}"] = _short(_joined(lib.get(name) for lib in libs))
        lines = []
        for lib in libs:
            where = Path(lib.get("filepath") or "?")
            parts = [lib.get("internal_api" if api == "blas" else "prefix"), lib.get("version"),
                     lib.get("architecture"), f"threads={lib.get('num_threads')}", lib.get("threading_layer")]
            lines.append(" ".join(str(p) for p in parts if p) + f" ({where.parent.name}/{where.name})")
        out[f"{PREFIX}.{api}.libraries"] = _short("; ".join(sorted(lines)))
    return out


def _numpy() -> dict[str, str]:
    """numpy's version and the CPU features it dispatches to (``unknown`` when its private tables moved)."""
    import numpy

    out = {f"{PREFIX}.numpy.version": numpy.__version__}
    tables = None
    for name in CPU_MODULES:
        try:
            tables = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(tables, "__cpu_features__"):
            break
        tables = None
    features = getattr(tables, "__cpu_features__", None)
    out[f"{PREFIX}.numpy.cpu_features"] = (
        _short(",".join(sorted(k for k, on in features.items() if on)) or "none")
        if isinstance(features, dict) else "unknown")
    for attr in ("baseline", "dispatch"):
        names = getattr(tables, f"__cpu_{attr}__", None)
        out[f"{PREFIX}.numpy.cpu_{attr}"] = "unknown" if names is None else _short(",".join(map(str, names)) or "none")
    return out


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def numeric_environment() -> dict[str, str]:
    """Flat string tags (``numeric.*``, at most 500 characters each) of what can change floating-point results.

    The BLAS and OpenMP libraries loaded in this process as threadpoolctl reports
    them (``numeric.blas.internal_api``, ``.version``, ``.architecture`` — the
    OpenBLAS kernel —, ``.threading_layer``, ``.num_threads``, ``.libraries``;
    ``numeric.openmp.prefix``, ``.version``, ``.num_threads``, ``.libraries``),
    kernel-selecting environment variables that are set
    (``numeric.env.OPENBLAS_CORETYPE`` ...), numpy's version and CPU features
    (``numeric.numpy.version``, ``.cpu_features`` — the enabled ones —,
    ``.cpu_baseline``, ``.cpu_dispatch``), ``numeric.lightgbm.version``,
    ``numeric.python.version`` and ``numeric.platform.machine``.

    numpy is imported (so its BLAS is loaded); libraries that other packages
    bring (scipy's OpenBLAS, LightGBM's OpenMP) show up once those are imported.
    When several libraries of a kind are loaded, a summary tag joins their
    distinct values with commas and ``.libraries`` lists each one.
    """
    out = _numpy()
    out.update(_libraries())
    out.update({f"{PREFIX}.env.{name}": _short(os.environ[name]) for name in ENV_VARS if name in os.environ})
    out[f"{PREFIX}.lightgbm.version"] = _version("lightgbm")
    out[f"{PREFIX}.python.version"] = platform.python_version()
    out[f"{PREFIX}.platform.machine"] = platform.machine() or "unknown"
    return dict(sorted(out.items()))
