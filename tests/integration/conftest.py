"""Integration fixtures: the retail domain, built once per session by the data stage."""

from pathlib import Path

import pytest

from camdf.common.fingerprint import hash_paths

from .test_pipeline import _run


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """A ``paths.data_dir`` holding ``retail/``, built by ``python -m pipelines.data domain=retail``.

    Built on first request (a session with no test asking for it never builds it) and shared by every test
    after that. The later stages only read ``paths.data_dir`` (their caches live under ``paths.output_dir``),
    so sharing is safe; a test that must write into the data folder takes a private copy
    (``shutil.copytree(data_dir, tmp_path / "data")``), and the check at the end of the session fails
    if the shared folder changed.
    """
    base = tmp_path_factory.mktemp("retail_data")
    data = base / "data"
    _run(["pipelines.data", "domain=retail"], base / "out", data)
    before = hash_paths([data])
    yield data
    assert hash_paths([data]) == before, f"{data} changed during the session: a test wrote into the shared data folder"
