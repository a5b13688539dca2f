"""Cache keys from the integration's own modules: editing a derivation rule rebuilds the derived labels.

The edit is made in a temporary copy of the ``camdf`` package, run in a subprocess that
imports the copy; the checkout is never touched.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from camdf.common.fingerprint import defining_package
from camdf.integrations.registry import executable_code, executable_domains, get_executable, measure_code, measured_regimes
from camdf.pipeline.data_stage import stage_code

PACKAGE = Path(__file__).resolve().parents[3] / "camdf"

# One data-stage build of three airline tasks with derived labels; prints what it did.
BUILD = """
import dataclasses, json, sys
from pathlib import Path
import camdf
from camdf.integrations.tau2.convert import convert_customer_service
from camdf.pipeline.data_stage import build_domain

out, cache = Path(sys.argv[1]), Path(sys.argv[2])
dom = convert_customer_service("airline")
small = dataclasses.replace(dom, tasks=dom.tasks[:3])
config = {"name": "airline", "label_source": "derived", "executable": "airline", "keep_non_executable": True,
          "acquirable_kinds": ["read", "generic"]}
build = build_domain(lambda: small, out, config, cache_dir=cache)
print(json.dumps({"package": camdf.__file__, "cached": build.cached, "key": build.key,
                  "derivations": sorted(p.name for p in (cache / "sufficiency").glob("*.json"))}))
"""


def test_the_registry_names_each_integrations_package():
    for name in executable_domains():
        assert executable_code(name) == ("camdf.integrations.tau2",)
        assert defining_package(get_executable(name)) == executable_code(name)[0]  # what derive's cache hashes
    assert {r: measure_code(r) for r in measured_regimes()} == {"execution": ("camdf.integrations.tau2",)}
    assert stage_code("airline", True, {"converter": {"_target_": "camdf.integrations.bfcl.convert.convert_multi_turn"}}) == (
        "camdf.data", "camdf.common.fingerprint", "camdf.integrations.bfcl", "camdf.sufficiency",
        "camdf.integrations.tau2", "camdf.costs")
    assert stage_code(None, False, {"converter": {"_target_": "no.such.module"}}) == ("camdf.data", "camdf.common.fingerprint")


def test_editing_a_derivation_rule_rebuilds_the_derived_labels(tmp_path):
    root = tmp_path / "checkout"
    shutil.copytree(PACKAGE, root / "camdf", ignore=shutil.ignore_patterns("__pycache__"))
    out, cache = tmp_path / "data" / "airline", tmp_path / "cache"

    def build() -> dict:
        done = subprocess.run([sys.executable, "-c", BUILD, str(out), str(cache)], cwd=root, check=True,
                              capture_output=True, text=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = build()
    assert first["package"].startswith(str(root)) and not first["cached"]
    assert build()["cached"]  # nothing changed: the labels are reused
    rules = root / "camdf" / "integrations" / "tau2" / "executable.py"  # where the derivation's rules live
    assert "def rules(" in rules.read_text()
    rules.write_text(rules.read_text() + "\n# an edit to the derivation's rules\n")
    edited = build()
    assert not edited["cached"] and edited["key"] != first["key"]  # the data stage rebuilt the labels ...
    assert len(edited["derivations"]) == 2 and set(first["derivations"]) < set(edited["derivations"])  # ... afresh
    assert (PACKAGE / "integrations" / "tau2" / "executable.py").read_text() != rules.read_text()  # checkout untouched
