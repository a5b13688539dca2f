"""Bad config values through the real stages: exit 2, one line naming the key, nothing written, no run made."""

import time
from pathlib import Path

import pytest

from camdf.common.fingerprint import hash_paths

from .test_pipeline import _run

EVALUATE = [
    ("cost.lam=-1", "cost.lam"), ("cost.lam=nan", "cost.lam"), ("cost.lam=inf", "cost.lam"),
    ("cost.d=-0.5", "cost.d"), ("cost.d=abc", "cost.d"), ("folds.n_folds=0", "folds.n_folds"),
    ("folds.n_folds=1", "folds.n_folds"), ("folds.n_folds=1000", "folds.n_folds"), ("seed=-1", "seed"),
    ("seed=1.5", "seed"), ("stats.n_resamples=0", "stats.n_resamples"), ("payoff=nosuch", "payoff"),
    ("label_noise=2", "label_noise"), ("label_source=nosuch", "label_source"),
    ("folds.protocol=nosuch", "folds.protocol"), ("method.names=[camdf,nosuch]", "method.names[1]"),
    ("method.names=[]", "method.names"), ("lambda_grid=[0.1,-0.1]", "lambda_grid[1]"),
    ("stats.calibration=maybe", "stats.calibration"), ("search.rounds=0", "search.rounds"),
]
# make test runs one case per stage and kind of check; make test-full runs every case (about 4 s each).
QUICK = {"cost.d=abc", "stats.calibration=maybe", "folds.n_folds=1000", "method.names=[camdf,nosuch]", "-m cost.d=0,1,abc",
         "policy.method=nosuch", "folds.n_folds=1", "tracking.experiment=nosuch"}
CASES = (
    [(["pipelines.evaluate", o], key) for o, key in EVALUATE]
    + [
        (["pipelines.evaluate", "-m", "cost.d=0,1,abc"], "cost.d"),  # one bad job refuses the whole sweep
        (["pipelines.evaluate", "-m", "experiment=smoke", "cost.lam=0.1,-2"], "cost.lam"),
        (["pipelines.train", "policy.method=nosuch"], "policy.method"),
        (["pipelines.train", "policy.lam_grid=[0.1,abc]"], "policy.lam_grid[1]"),
        (["pipelines.scores", "cost.d=-1"], "cost.d"),
        (["pipelines.scores", "folds.n_folds=1"], "folds.n_folds"),
        (["pipelines.tables", "main.d=abc"], "main.d"),
        (["pipelines.tables", "experiments=[a18,nosuch]"], "experiments[1]"),
        (["pipelines.tables", "tracking.experiment=nosuch"], "tracking.experiment"),
    ]
)


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


@pytest.mark.parametrize("args, key", [
    pytest.param(args, key, id=" ".join(args[1:]), marks=[] if " ".join(args[1:]) in QUICK else [pytest.mark.slow])
    for args, key in CASES
])
def test_a_bad_value_is_refused_before_anything_is_written(args, key, data_dir, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    before = hash_paths([data_dir])
    tic = time.perf_counter()
    proc = _run(args, out, data_dir, check=False)
    seconds = time.perf_counter() - tic
    print(f"{' '.join(args)}: refused in {seconds:.1f} s")
    assert proc.returncode == 2, proc.stdout[-1000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {key}: expected "), proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert _listing(out) == [], "a refused stage wrote under outputs/ (or made a tracking store)"
    assert hash_paths([data_dir]) == before


@pytest.mark.parametrize("stage", ["pipelines.evaluate", "pipelines.tables"])
def test_an_unreachable_tracking_server_is_named_at_once(stage, data_dir, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    tic = time.perf_counter()
    proc = _run([stage], out, data_dir, uri="http://127.0.0.1:9", check=False)
    print(f"{stage}: unreachable server refused in {time.perf_counter() - tic:.1f} s")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: tracking.uri: cannot reach") and "127.0.0.1:9" in lines[0]
    assert _listing(out) == []
