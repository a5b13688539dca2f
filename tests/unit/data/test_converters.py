"""The converters over the installed tau2 and BFCL packages (real files, real tool kits)."""

import importlib.resources
import json

import pytest

from camdf.integrations.bfcl.convert import convert_multi_turn
from camdf.data.io import read_domain, write_domain
from camdf.integrations.tau2.convert import DEVICE_PREFIX, convert_customer_service, convert_telecom, get_environment

RETAIL_ACQUIRABLE = {
    "calculate", "find_user_id_by_email", "find_user_id_by_name_zip", "get_order_details",
    "get_product_details", "get_user_details", "list_all_product_types",
}


@pytest.fixture(scope="module")
def domains():
    return {
        "retail": convert_customer_service("retail"),
        "airline": convert_customer_service("airline"),
        "telecom": convert_telecom(),
        "bfcl_multi_turn": convert_multi_turn(),
    }


def _splits(dom):
    out = {}
    for t in dom.tasks:
        out[t.split] = out.get(t.split, 0) + 1
    return out


def test_task_counts_and_splits(domains):
    assert len(domains["retail"].tasks) == 114
    assert _splits(domains["retail"]) == {"train": 74, "test": 40}
    assert len(domains["airline"].tasks) == 50
    assert _splits(domains["airline"]) == {"train": 30, "test": 20}
    assert len(domains["telecom"].tasks) == 2285
    assert len(domains["bfcl_multi_turn"].tasks) == 200


def test_retail_has_exactly_the_seven_acquirable_tools(domains):
    assert set(domains["retail"].acquirable) == RETAIL_ACQUIRABLE
    assert "transfer_to_human_agents" not in domains["airline"].acquirable
    assert len(domains["airline"].acquirable) == 7


@pytest.mark.parametrize("name", ["retail", "airline", "telecom", "bfcl_multi_turn"])
def test_required_tools_are_acquirable_candidates_and_round_trip(name, domains, tmp_path):
    dom = domains[name]
    acq = set(dom.acquirable)
    for task in dom.tasks:
        assert set(task.required) <= acq, task.id
        assert set(task.required) <= set(dom.candidates_of(task)), task.id
        assert task.text.strip(), task.id
    again = read_domain(write_domain(dom, tmp_path / name), dom.acquirable_kinds, dom.never_acquirable)
    assert again.tasks == dom.tasks and again.tools == dom.tools


def test_tau2_descriptions_and_schemas_are_the_packages_own(domains):
    env = get_environment("retail")
    schemas = {t.name: t.openai_schema["function"] for t in env.get_tools()}
    for tool in domains["retail"].tools:
        assert tool.description == schemas[tool.name]["description"]
        assert tool.parameters == schemas[tool.name]["parameters"]
    tel = get_environment("telecom")
    device = {t.name: t.openai_schema["function"] for t in tel.get_user_tools()}
    for tool in domains["telecom"].tools:
        if tool.name.startswith(DEVICE_PREFIX):
            assert tool.description == device[tool.name[len(DEVICE_PREFIX):]]["description"]


def test_tau2_gold_actions_kept_and_read_free_tasks_flagged(domains):
    retail = domains["retail"]
    raw = json.loads((importlib.resources.files("tau2") / "data/tau2/domains/retail/tasks.json").read_text())
    first = retail.tasks[0]
    assert [a["name"] for a in first.meta["gold_actions"]] == [
        a["name"] for a in raw[0]["evaluation_criteria"]["actions"]
    ]
    flagged = [t for t in retail.tasks if t.meta["gold_lists_no_read"]]
    # Recomputed independently from the raw file: gold actions with no read-kind tool.
    reads = {t.name for t in retail.tools if t.kind == "read"}
    expected = [r for r in raw if not any(a["name"] in reads for a in r["evaluation_criteria"]["actions"] or [])]
    assert len(flagged) == len(expected) == 48


def test_telecom_namespaces_device_tools_and_makes_every_kind_acquirable(domains):
    tel = domains["telecom"]
    names = [t.name for t in tel.tools]
    assert len(names) == len(set(names))
    assert any(n.startswith(DEVICE_PREFIX) for n in tel.acquirable)
    assert {t.kind for t in tel.tools} <= set(tel.acquirable_kinds)
    assert len(tel.acquirable) == len(tel.tools)
    assert any(any(r.startswith(DEVICE_PREFIX) for r in t.required) for t in tel.tasks)


def test_bfcl_candidates_follow_involved_classes_and_exclusions(domains):
    bfcl = domains["bfcl_multi_turn"]
    assert all("." in t.name for t in bfcl.tools)
    task = next(t for t in bfcl.tasks if t.id == "multi_turn_base_0")
    assert set(task.meta["involved_classes"]) == {c.split(".")[0] for c in task.candidates}
    assert "GorillaFileSystem.cp" not in task.candidates  # listed in its excluded_function
    assert "GorillaFileSystem.mv" in task.required
    doc = importlib.resources.files("bfcl_eval") / "data/multi_turn_func_doc/gorilla_file_system.json"
    first = json.loads(doc.read_text().splitlines()[0])
    assert bfcl.tool_by_name[f"GorillaFileSystem.{first['name']}"].description == first["description"]
