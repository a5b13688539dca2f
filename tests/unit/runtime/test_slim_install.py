"""The slim runtime install: a fresh venv with `pip install camdf` only (no pipeline, no MLflow) reads an exported
policy and decides exactly as the full policy does on 100 requests, answers `camdf select` over 300 tools with the
default policy the wheel holds, and `camdf fit` fits and exports a policy on
a catalog and logged tasks there.

The venv installs from the package registry through pip's cache, at the versions of this environment (a
constraints file), so the comparison is of camdf's code, not of library versions. The package is built from a
copy of the checkout (a build writes into its source folder) and installed by this environment's pip into a
venv without pip of its own. Its size is printed (target: under 400 MB; about 380 MB once Python has written
the bytecode caches of every module, which a first import of each does).
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import version
from importlib.util import find_spec

from camdf.runtime.export import export_policy

from ..adapters.conftest import CATALOG, TOPICS
from ..core.test_theory import _family
from .test_fitting import _catalog, _write
from .test_runtime_policy_file import _requests

RUNTIME = ["numpy", "scipy", "scikit-learn", "pandas", "lightgbm", "bm25s", "pyyaml", "joblib", "threadpoolctl"]
HEAVY = ["mlflow", "hydra", "torch", "matplotlib", "statsmodels", "omegaconf", "sentence_transformers", "pyarrow"]

DECIDE = textwrap.dedent("""
    import json, sys
    from camdf.runtime import load_policy
    policy = load_policy(sys.argv[1])
    requests = json.load(open(sys.argv[2]))
    one = [policy.select_batch([r])[0].exposed for r in requests]
    batch = [s.exposed for s in policy.select_batch(requests)]
    heavy = [m for m in sys.argv[3].split(",") if m in sys.modules or __import__("importlib.util").util.find_spec(m)]
    print(json.dumps({"one": one, "batch": batch, "heavy": heavy}))
""")


def _size_mb(path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20


def test_a_fresh_slim_venv_decides_as_the_full_policy(tmp_path, root, capsys):
    from camdf.runtime import StopPolicy

    full = StopPolicy(method="camdf", lam=0.2).fit(_family(60, True), costs={"x": 6.0})
    folder = export_policy(full, tmp_path / "policy")
    queries = [f"{a} {b} for the customer" for a in TOPICS for b in TOPICS[::3]]
    requests = _requests(11, 70) + [{"tools": CATALOG, "query": q, "lam": 0.05} for q in queries[:30]]
    assert len(requests) == 100
    (tmp_path / "requests.json").write_text(json.dumps(requests))
    src = tmp_path / "src"
    shutil.copytree(root / "camdf", src / "camdf", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, src / name)
    (tmp_path / "constraints.txt").write_text("".join(f"{p}=={version(p)}\n" for p in RUNTIME))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)  # this pip installs
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    # The wheel with this environment's setuptools when it has one (no isolated build env to create).
    isolation = [] if find_spec("setuptools") is None else ["--no-build-isolation"]
    subprocess.run([*pip, "wheel", "--no-deps", *isolation, str(src), "-w", str(tmp_path / "wheel")], check=True,
                   env=env, cwd=tmp_path)
    wheel = next((tmp_path / "wheel").glob("camdf-*.whl"))
    # --no-compile: bytecode is written on first import instead (it is most of an install's time here).
    subprocess.run([*pip, "--python", str(py), "install", "--no-compile", str(wheel), "-c",
                    str(tmp_path / "constraints.txt")], check=True, env=env, cwd=tmp_path)
    (tmp_path / "decide.py").write_text(DECIDE)
    done = subprocess.run([str(py), str(tmp_path / "decide.py"), str(folder), str(tmp_path / "requests.json"),
                           ",".join(HEAVY)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    slim = json.loads(done.stdout)
    assert slim["heavy"] == []  # none of the pipeline's libraries is installed
    want = [full.select_batch([r])[0].exposed for r in requests]
    assert slim["one"] == want and slim["batch"] == [s.exposed for s in full.select_batch(requests)]
    assert len({len(w) for w in want}) > 2  # the requests tell decisions apart
    tools, tasks = _write(tmp_path / "mine", *_catalog())
    fit = subprocess.run([str(venv / "bin" / "camdf"), "fit", "--tools", str(tools), "--tasks", str(tasks), "--out",
                          str(tmp_path / "mine" / "policy"), "--base", str(folder), "--top-n", "20", "--task-value",
                          "1000"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert fit.returncode == 0 and "policy exported" in fit.stdout, fit.stderr
    assert json.loads((tmp_path / "mine" / "policy" / "manifest.json").read_text())["fit"]["tasks"] == 60
    # The wheel holds the default policy: a harness builder's 300 tools, no --policy, a handful exposed.
    apps = ("slack", "github", "jira", "notion", "hubspot", "zendesk", "stripe", "asana", "trello", "gmail")
    things = ("message", "issue", "page", "contact", "ticket", "payment", "task", "card", "email", "invoice")
    catalog = [{"name": f"{a}_{v}_{t}", "description": f"{v.capitalize()} a {t} in {a.capitalize()}.",
                "inputSchema": {"type": "object", "properties": {f"{t}_id": {"type": "string"}}}}
               for a in apps for v in ("create", "get", "update") for t in things]
    request = json.dumps({"query": "refund the stripe payment of this customer", "tools": catalog})
    select = subprocess.run([str(venv / "bin" / "camdf"), "select"], input=request, capture_output=True, text=True,
                            env=env, cwd=tmp_path)
    assert select.returncode == 0, select.stderr
    assert 1 <= len(json.loads(select.stdout)["exposed"]) <= 20 and len(catalog) == 300
    size = _size_mb(venv)
    with capsys.disabled():
        print(f"\nslim runtime venv: {size:.0f} MB (before bytecode caches)")
    assert size < 400
