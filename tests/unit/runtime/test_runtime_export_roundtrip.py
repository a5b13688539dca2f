"""Whatever export_policy writes, load_policy reads (issue 49): every shippable rule, fitted on tasks some of whose
tools fall outside the ranked list (a risk rule's -inf calibration scores), decides the same once loaded."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from camdf.core.instances import build_instances
from camdf.runtime import StopPolicy, load_policy
from camdf.runtime.export import export_policy
from camdf.runtime.lean import LeanPolicy, lean_numbers
from camdf.runtime.policy import policy_methods

from .test_runtime_policy_file import _requests

CASES = [(m, None) for m in policy_methods()] + [("camdf", [0.05, 0.2, 0.5])]


def _unlisted(T: int = 80, seed: int = 0):
    """Tasks over 5 ranked tools; every 4th needs a tool that is not on its list ("zz"), every 11th none."""
    rng = np.random.default_rng(seed)
    rows, required = [], {}
    for i in range(T):
        scores = np.sort(rng.random(5))[::-1]
        rows += [(f"q{i}", name, s, r + 1, i % 5) for r, (name, s) in enumerate(zip("abcde", scores))]
        required[f"q{i}"] = ["a", "zz"] if i % 4 == 0 else [] if i % 11 == 0 else ["b"] if i % 7 == 0 else ["a", "c"]
    df = pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"])
    return build_instances(df, required, {"a": 1.0, "b": 2.0, "c": 1.0, "d": 3.0, "e": 1.0})


@pytest.mark.parametrize("method,grid", CASES, ids=[f"{m}{'-lam_grid' if g else ''}" for m, g in CASES])
def test_every_shippable_rule_exports_a_folder_load_policy_reads(method, grid, tmp_path):
    fitted = StopPolicy(method=method, lam=0.2, lam_grid=grid).fit(_unlisted())
    back = load_policy(str(export_policy(fitted, tmp_path / "policy")))
    requests = _requests(5, 120)
    assert [s.to_json() for s in back.select_batch(requests)] == [s.to_json() for s in fitted.select_batch(requests)]
    for r in requests[:40]:  # the one-request path
        assert back.select_batch([r])[0].to_json() == fitted.select_batch([r])[0].to_json()
    if "alpha" in fitted.door.dials:  # a risk rule: the kept calibration scores give every alpha's threshold
        assert np.isneginf(fitted.rule_.threshold(0.01)) or fitted.method == "risk_set"
        for alpha in (0.05, 0.3, 0.6):
            assert ([s.exposed for s in back.select_batch(requests, alpha=alpha)]
                    == [s.exposed for s in fitted.select_batch(requests, alpha=alpha)])
    numbers = lean_numbers(fitted)
    if numbers is not None:  # the lean form (camdf select) reads the same numbers through JSON
        lean = LeanPolicy(json.loads(json.dumps(numbers)), full=lambda: fitted)
        for r in requests[:40]:
            got = lean.select_batch([r])
            assert got is None or got[0].to_json() == fitted.select_batch([r])[0].to_json()


def test_a_risk_rule_keeps_its_unlisted_tasks_as_documented_sentinels(tmp_path):
    from camdf.core.conformal import LIST_MISS

    fitted = StopPolicy(method="camdf_risk", lam=0.2).fit(_unlisted())
    assert np.isneginf(fitted.rule_.scores_).any()
    folder = export_policy(fitted, tmp_path / "policy")
    scores = json.loads((folder / "policy.json").read_text())["rule"]["calibration_scores"]
    assert LIST_MISS in scores and all(np.isfinite(scores))
    back = load_policy(str(folder))
    assert np.array_equal(back.rule_.scores_, fitted.rule_.scores_)
    assert back.rule_.list_miss_ == fitted.rule_.list_miss_ > 0


def test_each_listed_file_is_read_once_so_the_bytes_checked_are_the_bytes_parsed(tmp_path, monkeypatch):
    """A file swapped after its checksum was checked is never read: read_export parses the bytes it checked."""
    import camdf.runtime.export as export
    from camdf.runtime.export import read_export

    fitted = StopPolicy(method="camdf", lam=0.2).fit(_unlisted())
    folder = export_policy(fitted, tmp_path / "policy")
    listed = json.loads((folder / "manifest.json").read_text())["files"]
    assert any(rel.startswith("boosters/") for rel in listed)
    reads: list[str] = []
    real = export.read_regular

    def read_then_swap(path, *args, **kwargs):  # the real read; then the file on disk is replaced by another
        data = real(path, *args, **kwargs)
        rel = Path(path).relative_to(folder).as_posix()
        reads.append(rel)
        if rel in listed:
            Path(path).write_bytes(b"swapped after the check")
        return data

    monkeypatch.setattr(export, "read_regular", read_then_swap)
    back = read_export(folder)
    assert sorted(r for r in reads if r in listed) == sorted(listed)  # each listed file once, no other read of it
    requests = _requests(5, 40)
    assert [s.to_json() for s in back.select_batch(requests)] == [s.to_json() for s in fitted.select_batch(requests)]
