"""``folds.protocol: group``: no group is split across folds, on every built-in domain and a user's folder."""

import json

import numpy as np
import pytest

from camdf.core.folds import assign_folds
from camdf.data.io import DomainFormatError, read_domain
from camdf.data.model import Task
from camdf.data.overview import summarize
from camdf.integrations.bfcl.convert import convert_multi_turn

NEVER = ("transfer_to_human_agents",)
# Distinct groups per built-in domain at the pinned package versions (docs/task-format.md).
N_GROUPS = {"retail": 53, "airline": 34, "telecom": 3, "bfcl_multi_turn": 197, "retail_d100": 53}


@pytest.fixture(scope="module")
def built(builtin):
    """The built-in domains written as the data stage writes them (tests/unit/conftest.py), read back."""
    data, _ = builtin
    kinds = {"telecom": ("read", "write", "generic"), "bfcl_multi_turn": ("read", "write", "generic")}
    never = {"retail": NEVER, "airline": NEVER, "retail_d100": NEVER}
    return {
        name: read_domain(data / name, kinds.get(name, ("read", "generic")), never.get(name, ()))
        for name in N_GROUPS
    }


def _folds(dom, n_folds, random_state=0):
    return assign_folds([t.id for t in dom.tasks], [t.split for t in dom.tasks], n_folds=n_folds,
                        protocol="group", random_state=random_state, groups=[t.group for t in dom.tasks])


def _assert_no_group_split(groups, folds, n_folds):
    fold_of = {}
    for g, f in zip(groups, folds):
        if g is not None:
            assert fold_of.setdefault(g, f) == f, f"group {g} is in folds {fold_of[g]} and {f}"
    assert sorted(np.unique(folds)) == list(range(n_folds))


@pytest.mark.parametrize("name", sorted(N_GROUPS))
def test_no_group_is_split_across_folds_on_the_builtin_domains(built, name):
    dom = built[name]
    assert all(t.group for t in dom.tasks)  # every built-in task has a group, read back from tasks.jsonl
    assert summarize(dom)["n_groups"] == N_GROUPS[name] < len(dom.tasks)
    n_folds = min(5, N_GROUPS[name])
    for seed in (0, 1):
        _assert_no_group_split([t.group for t in dom.tasks], _folds(dom, n_folds, seed), n_folds)


def test_retail_d100_keeps_retails_groups(built):
    assert [(t.id, t.group) for t in built["retail_d100"].tasks] == [(t.id, t.group) for t in built["retail"].tasks]


def test_bfcl_variants_share_their_base_questions_group():
    base, miss_func = convert_multi_turn("multi_turn_base"), convert_multi_turn("multi_turn_miss_func")
    by_index = {t.id.rsplit("_", 1)[1]: t.group for t in base.tasks}
    assert all(t.group == by_index[t.id.rsplit("_", 1)[1]] for t in miss_func.tasks)


def test_different_random_states_give_different_partitions_and_the_same_one_repeats(built):
    dom = built["retail"]
    groups = [t.group for t in dom.tasks]

    def partition(seed):
        folds = _folds(dom, 5, seed)
        return frozenset(frozenset(g for g, f in zip(groups, folds) if f == k) for k in range(5))

    assert len({partition(seed) for seed in range(5)}) == 5
    assert np.array_equal(_folds(dom, 5, 3), _folds(dom, 5, 3))
    sizes = np.bincount(_folds(dom, 5, 0))
    assert sizes.max() - sizes.min() <= 5  # balanced within one largest group (5 tasks)


def _write_user_domain(folder, task_lines):
    folder.mkdir()
    tools = [{"name": n, "description": n, "kind": "read"} for n in ("lookup", "search", "convert")]
    (folder / "catalog.json").write_text(json.dumps({"domain": folder.name, "tools": tools}))
    (folder / "tasks.jsonl").write_text("".join(line + "\n" for line in task_lines))


def test_no_group_is_split_on_a_user_domain_with_groups(tmp_path):
    groups = ["acct", "acct", "acct", "help", "help", None, None, "fx", "fx", "fx", "fx", None]
    lines = [
        json.dumps({"id": f"t{i}", "text": f"task {i}", "required": ["lookup"], **({"group": g} if g else {})})
        for i, g in enumerate(groups)
    ]
    _write_user_domain(tmp_path / "mine", lines)
    dom = read_domain(tmp_path / "mine")
    assert [t.group for t in dom.tasks] == groups
    assert summarize(dom)["n_groups"] == 6 and summarize(dom)["n_ungrouped"] == 3  # 3 named + 3 singletons
    for seed in range(5):
        _assert_no_group_split(groups, _folds(dom, 3, seed), 3)


def test_group_is_written_only_when_set():
    assert "group" not in Task("a", "x", ()).to_json()
    assert Task("a", "x", (), group="g").to_json()["group"] == "g"


def test_fewer_groups_than_folds_is_a_clear_error(built):
    with pytest.raises(ValueError, match=r"folds\.n_folds.*5 folds needs at least 5 distinct groups, the tasks have 3"):
        _folds(built["telecom"], 5)
    with pytest.raises(ValueError, match=r"folds\.n_folds.*have 2"):
        assign_folds(["a", "b", "c"], n_folds=3, protocol="group", groups=["x", "x", None])


def test_group_protocol_needs_one_group_label_per_task():
    with pytest.raises(ValueError, match="groups: .*3 tasks, got 2"):
        assign_folds(["a", "b", "c"], n_folds=2, protocol="group", groups=["x", "y"])
    with pytest.raises(ValueError, match="groups: .*got none"):
        assign_folds(["a", "b", "c"], n_folds=2, protocol="group")


def test_reader_rejects_a_bad_group_with_file_and_line(tmp_path):
    lines = [
        json.dumps({"id": "ok", "text": "x", "required": ["lookup"], "group": "g"}),
        json.dumps({"id": "num", "text": "x", "required": ["lookup"], "group": 3}),
        json.dumps({"id": "empty", "text": "x", "required": ["lookup"], "group": " "}),
    ]
    _write_user_domain(tmp_path / "bad", lines)
    with pytest.raises(DomainFormatError) as err:
        read_domain(tmp_path / "bad")
    assert err.value.problems == [
        "bad/tasks.jsonl:2: task `num`: field `group` must be a non-empty string, got 3",
        "bad/tasks.jsonl:3: task `empty`: field `group` must be a non-empty string, got ' '",
    ]
