"""Shared fixtures: retail and airline converted once, derived once from a cold cache (session scope).

The cold derivation is timed here (acceptance: at most 3 minutes for both
domains); every other test reads the cached results or the shared call memo.
"""

import time

import pytest

from camdf.integrations.tau2.convert import convert_customer_service
from camdf.sufficiency import derive
from camdf.sufficiency.closure import CallMemo, Explorer
from camdf.sufficiency.derive import task_info
from camdf.integrations.tau2.executable import Airline, Retail

DOMAINS = ("retail", "airline")


@pytest.fixture(scope="session")
def converted():
    return {name: convert_customer_service(name) for name in DOMAINS}


@pytest.fixture(scope="session")
def suff_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("suff_cache")


@pytest.fixture(scope="session")
def cold(converted, suff_cache):
    """Derivations from an empty cache with fresh executable domains, and their wall time (s)."""
    t0 = time.perf_counter()
    out = {"retail": derive(converted["retail"], Retail(), suff_cache),
           "airline": derive(converted["airline"], Airline(), suff_cache)}
    return out, time.perf_counter() - t0


@pytest.fixture(scope="session")
def derivations(cold):
    return cold[0]


@pytest.fixture(scope="session")
def results(derivations):
    """Task id -> TaskResult over both domains."""
    return {r.task_id: r for der in derivations.values() for r in der.results}


@pytest.fixture(scope="session")
def tasks(converted):
    return {t.id: t for dom in converted.values() for t in dom.tasks}


class Probe:
    """Closures of single tasks on demand (a reference path next to the derivation's pruned one)."""

    def __init__(self, converted):
        self.exes = {"retail": Retail(), "airline": Airline()}
        self.memos = {k: CallMemo(v) for k, v in self.exes.items()}
        self.tasks = {t.id: (name, t) for name, dom in converted.items() for t in dom.tasks}
        self._explorers = {}

    def explorer(self, task_id) -> Explorer:
        if task_id not in self._explorers:
            name, task = self.tasks[task_id]
            self._explorers[task_id] = Explorer(self.exes[name], task_info(self.exes[name], task), self.memos[name])
        return self._explorers[task_id]

    def missing(self, task_id, tools):
        ex = self.explorer(task_id)
        return ex.missing(ex.closure(tools))


@pytest.fixture(scope="session")
def probe(converted):
    return Probe(converted)
