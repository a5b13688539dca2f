"""One name, one owner (issue 37, acceptance 2): the dial ``alpha`` is named only by the rules that own it,
their configs and the statistics where alpha is the usual other thing; and a rule's name is compared or
assigned nowhere outside the registry (tests/unit/policies/test_registry_only.py checks that half)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

#: Where ``alpha`` may appear, and why.
OWNERS = {
    # The conformal risk rules that own the dial, their arithmetic and their configs.
    "camdf/core/conformal.py", "camdf/core/risk_sets.py", "camdf/policies/risk.py", "camdf/policies/sets.py",
    "camdf/policies/plain.py", "conf/method/risk.yaml", "conf/experiment/a26.yaml",
    "conf/experiment/a26_supervised.yaml",
    # The claims whose subject it is: A26 (the risk rule at each alpha), its headline, A20's note on risk_no_split.
    "camdf/reporting/tables/a26.py", "camdf/reporting/findings.py", "camdf/reporting/tables/a20.py",
    # A28's note on the risk rules' target miss rate at catalog scale (and a figure's grid opacity).
    "camdf/reporting/tables/a28.py",
    # Another meaning: a test's significance level, a ridge penalty (BoRDepth's Ridge), a matplotlib opacity.
    "camdf/evaluation/bootstrap.py", "camdf/evaluation/classical.py", "camdf/evaluation/permutation.py",
    "camdf/evaluation/power.py", "camdf/evaluation/proportions.py", "camdf/core/set_baselines.py",
    "camdf/policies/peers.py", "camdf/reporting/figures.py",
}


def test_alpha_is_named_only_by_its_owners():
    word = re.compile(r"\balpha\b")
    named = {str(p.relative_to(ROOT)) for top in ("camdf", "pipelines", "conf") for p in (ROOT / top).rglob("*")
             if p.suffix in (".py", ".yaml") and word.search(p.read_text(encoding="utf-8"))}
    assert named - OWNERS == set()  # the evaluate/train stages, StopPolicy, the served model and the CLI name none
    assert {"camdf/policies/risk.py", "conf/method/risk.yaml"} <= named  # the check sees what it looks for


def test_every_package_has_its_unit_test_folder():
    packages = {p.parent.name for p in (ROOT / "camdf").glob("*/__init__.py")}
    folders = {p.parent.name for p in (ROOT / "tests" / "unit").glob("*/test_*.py")}
    assert packages - folders == set()
