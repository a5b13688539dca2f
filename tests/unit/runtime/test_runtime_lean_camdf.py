"""The lean CAM-DF stopper: an exported camdf_transfer policy (and the package's default one) decides one request of
any length as the full StopPolicy does, without scikit-learn, pandas or LightGBM; a hostile booster is refused."""

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from camdf.runtime import StopPolicy, load_policy
from camdf.runtime.export import export_policy
from camdf.runtime.lean import LeanPolicy, lean_numbers

from ..core.test_features import _random_instances
from ..policies.test_trees import _resize

WORDS = ("order refund email weather flight hotel invoice payment ticket calendar meeting report customer issue "
         "message channel lead deal dashboard export schedule cancel search create update delete").split()
LAMS = (None, 0.02, 0.1, 0.4)


def _catalog(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"name": f"t{k}" if k < 24 else f"tool_{k}",
             "description": " ".join(rng.choice(WORDS, int(rng.integers(2, 8))))} for k in range(n)]


CATALOG = _catalog(2000)


def _requests(seed: int, count: int) -> list[dict]:
    """Single requests of 5-2,000 tools, with and without scores and costs, at several lambdas."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        if k % 4 == 0:  # the built-in bm25 ranker: a few catalog prefixes, so their indexes are kept
            tools = CATALOG[: int(rng.choice([5, 40, 300, 2000]))]
            req = {"tools": tools, "query": " ".join(rng.choice(WORDS, 3))}
        else:
            n = int(np.exp(rng.uniform(np.log(5), np.log(2000))))
            tools = [CATALOG[j] for j in rng.permutation(len(CATALOG))[:n]]
            req = {"tools": tools, "scores": np.round(rng.normal(0.4, 0.3, n), 2).tolist()}
        if rng.random() < 0.5:
            req["costs"] = np.round(rng.uniform(0.1, 5.0, len(req["tools"])), 2).tolist()
        lam = LAMS[k % len(LAMS)]
        if lam is not None:
            req["lam"] = lam
        out.append(req)
    return out


def _same(lean, full, requests: list[dict]) -> list:
    depths = []
    for k, req in enumerate(requests):
        got = lean.select_batch([req])
        assert got is not None, k  # decided by the lean form itself, not handed to the full policy
        want = full.select_batch([req])[0]
        assert (got[0].depth, got[0].ranked, got[0].tools) == (want.depth, want.ranked, want.tools), k
        depths.append(got[0].depth)
    return depths


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    inst = _random_instances(4, n_tasks=400, max_n=20, vocab=24)
    policy = StopPolicy(method="camdf_transfer", lam=0.1, lam_grid=[0.02, 0.1, 0.4], portable=True, top_n=50)
    policy.fit(inst)
    return export_policy(policy, tmp_path_factory.mktemp("export") / "policy")


def test_an_exported_camdf_policy_loads_lean_and_decides_as_the_full_one(exported):
    lean, full = load_policy(str(exported), lean=True), load_policy(str(exported))
    assert isinstance(lean, LeanPolicy) and isinstance(full, StopPolicy)
    depths = _same(lean, full, _requests(0, 100))
    assert len(set(depths)) > 2
    assert lean.full().method == full.method
    assert lean.select_batch([_requests(1, 1)[0]] * 2) is None  # a batch: the full policy's


def test_the_lean_json_of_a_non_portable_camdf_policy_decides_as_it():
    inst = _random_instances(6, n_tasks=200, max_n=20, vocab=24)
    policy = StopPolicy(method="camdf", lam=0.1).fit(inst)
    numbers = json.loads(json.dumps(lean_numbers(policy)))
    lean = LeanPolicy(numbers, full=lambda: policy)
    short = [r for r in _requests(2, 80) if len(r["tools"]) <= 64]
    assert len(short) > 10
    _same(lean, policy, short)


def test_the_default_policy_is_lean_and_decides_as_the_full_one():
    lean, full = load_policy(None, lean=True), load_policy(None)
    assert isinstance(lean, LeanPolicy) and lean.method == full.method == "camdf_transfer"
    _same(lean, full, _requests(3, 40))


def test_camdf_select_on_2000_tools_imports_no_scikit_learn_pandas_or_lightgbm(tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"tools": CATALOG, "query": "refund the payment of this order"}))
    code = ("import sys, contextlib, io\nfrom camdf.cli.commands import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    rc = main(['select', '--input', {str(path)!r}])\n"
            "import json; exposed = len(json.loads(out.getvalue())['exposed'])\n"
            "print(rc, exposed, sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'pandas', 'lightgbm'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(" ", 2)
    assert out[0] == "0" and int(out[1]) <= 50 and out[2].strip() == "[]"


def test_a_hostile_booster_in_an_export_is_one_line_and_exit_2(exported, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(exported, bad)
    booster = bad / "boosters" / "0.txt"
    text = booster.read_text()
    first = text.split("Tree=0\n")[1].split("\n")[0]
    assert first.startswith("num_leaves=")
    booster.write_text(_resize(text.replace(f"Tree=0\n{first}\n", "Tree=0\nnum_leaves=2000000000\n", 1)))
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["files"]["boosters/0.txt"] = hashlib.sha256(booster.read_bytes()).hexdigest()  # the checksum rewritten
    (bad / "manifest.json").write_text(json.dumps(manifest))
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"tools": CATALOG[:10], "scores": list(range(10))}))
    for lean in (True, False):
        with pytest.raises(ValueError, match="tree 0: num_leaves"):
            load_policy(str(bad), lean=lean)
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", str(bad), "--input", str(request)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "num_leaves" in proc.stderr
