"""Benchmark of the derivation of G_x by execution (:mod:`camdf.sufficiency`).

Workload: every task of tau2 retail (114) and airline (50), the sufficiency of
all 128 subsets of their 7 acquirable tools. Target: at most 180 s from a cold
cache for both domains (acceptance 4 of the issue); a warm run reads the cache.

*Cold* uses a temporary cache folder and fresh executable domains (database
loaded, no call memoised); conversion of the tau2 files is timed separately.
*Warm* repeats the derivation on the same cache folder.

Run as ``python benchmarks/bench_sufficiency.py`` (``PYTHONPATH`` must reach
``camdf``) or call :func:`run`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

if __package__ in (None, ""):  # allow `python benchmarks/bench_sufficiency.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import print_figures  # noqa: E402

from camdf.integrations.tau2.convert import convert_customer_service  # noqa: E402
from camdf.sufficiency import derive, summary  # noqa: E402
from camdf.integrations.registry import get_executable  # noqa: E402
from camdf.integrations.tau2.executable import Airline, Retail  # noqa: E402

DOMAINS = {"retail": Retail, "airline": Airline}
TARGET_COLD_S = 180.0


def run() -> dict:
    """Time the cold and warm derivations; return the figures (seconds and counts)."""
    figures: dict = {}
    t0 = time.perf_counter()
    converted = {name: convert_customer_service(name) for name in DOMAINS}
    figures["convert_s"] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="bench_sufficiency_") as cache:
        cold_total = 0.0
        for name, cls in DOMAINS.items():
            t = time.perf_counter()
            der = derive(converted[name], cls(), cache)
            cold = time.perf_counter() - t
            cold_total += cold
            s = summary(der)
            figures[f"{name}_tasks"] = s["n_tasks"]
            figures[f"{name}_cold_s"] = cold
            figures[f"{name}_tool_calls"] = der.n_calls
            figures[f"{name}_share_executable_sufficient_all"] = s["share_executable_sufficient_all"]
            figures[f"{name}_empty_derived"] = s["n_empty"]
        warm_total = 0.0
        for name in DOMAINS:
            t = time.perf_counter()
            der = derive(converted[name], get_executable(name), cache)
            warm_total += time.perf_counter() - t
            assert der.n_cached == len(der.results)
    figures["cold_total_s"] = cold_total
    figures["warm_total_s"] = warm_total
    figures["target_cold_s"] = TARGET_COLD_S
    figures["meets_target"] = cold_total <= TARGET_COLD_S
    return figures


def main() -> None:
    print_figures(run())


if __name__ == "__main__":
    main()
