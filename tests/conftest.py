"""Shared fixtures: the checkout root and the fixture domains."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


#: The longest tests (a minute or more each on 2 cores), longest first, moved to the front of the collection:
#: pytest-xdist hands tests out in collection order, so a long test collected late ran alone at the end while the
#: other worker idled (the README walkthrough, 230 s, held the last 2 minutes of make test).
LONG_FIRST = (
    "tests/integration/test_readme_walkthrough.py::test_readme_walkthrough_prints_what_the_readme_shows",
    "tests/integration/test_pipeline.py::test_sigkill",
    "tests/integration/test_scale_out.py",
    "tests/integration/test_one_file_additions.py",
    "tests/integration/test_user_tables.py",
    "tests/integration/test_mlflow_server.py",
    "tests/integration/hostile/test_boundary_hostile.py::test_a_value_that_failed_late_is_refused_at_the_boundary",
    "tests/integration/test_runtime_e2e.py",
    "tests/integration/test_store_layout.py",
    "tests/unit/rankers/test_scorers.py::test_label_and_lexical_scorers_cover_every_candidate",
)


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        return next((i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)), len(LONG_FIRST))
    items.sort(key=rank)  # stable: every other test keeps its place, and every xdist worker sorts alike


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def fixture_domains() -> Path:
    return FIXTURES / "domains"


_MLFLOW_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_EXPERIMENT_ID")


def _mlflow_globals() -> tuple:
    """MLflow's process-wide tracking and registry URIs, or Nones before MLflow is imported."""
    import sys

    if "mlflow" not in sys.modules:
        return None, None
    from mlflow.tracking._model_registry import utils as registry
    from mlflow.tracking._tracking_service import utils as tracking

    return tracking._tracking_uri, registry._registry_uri


@pytest.fixture(autouse=True)
def _mlflow_uris_restored():
    """MLflow's tracking and registry URIs (its globals and their environment variables) after each test as they
    were before it (after the module's fixtures).

    A test, or the code it runs (load_policy, the policy job), that calls ``mlflow.set_tracking_uri`` would
    otherwise leave it set for every later test of its worker; clearing it later with ``set_tracking_uri(None)``
    also unsets ``MLFLOW_TRACKING_URI``, which once made a later fixture's store silently ``./mlflow.db``.
    """
    import os

    env = {k: os.environ.get(k) for k in _MLFLOW_ENV}
    before = _mlflow_globals()
    yield
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    if _mlflow_globals() == before:
        return
    from mlflow.tracking._model_registry import utils as registry
    from mlflow.tracking._tracking_service import utils as tracking

    # Not set_tracking_uri: it would also set or unset the variable restored above.
    tracking._tracking_uri, registry._registry_uri = before
    tracking.reset()  # the tracer provider keeps the URI it exported to
