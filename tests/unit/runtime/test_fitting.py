"""`camdf fit` (camdf.runtime.fitting): a policy fitted on your own tools and logged tasks, compared out of fold with
the base, exported in schema tokens, read back deciding the same; every bad file or flag one line, exit 2."""

import json
import logging

import numpy as np
import pytest

from camdf.cli.commands import main
from camdf.runtime import StopPolicy, load_policy
from camdf.runtime.export import export_policy
from camdf.runtime.fit_inputs import read_tasks, read_tools, tool_views
from camdf.runtime.fitting import PolicyFitter, catalog_instances
from camdf.runtime.builtin_ranker import tool_scores
from camdf.costs.units import TOKENS, schema_tokens

TOPICS = ["order", "refund", "flight", "hotel", "weather", "invoice", "coupon", "review", "address", "payment"]


def _catalog(seed: int = 0, prefix: str = "t", n_tasks: int = 60, random_use: bool = False):
    """60 MCP tools (6 per topic) and tasks that each used 1-2 tools of one topic, named in their text (with
    ``random_use``, 1-2 tools drawn at random: tasks the ranking does not tell apart)."""
    rng = np.random.default_rng(seed)
    tools = [{"name": f"{prefix}_{verb}_{topic}", "description": f"{verb.capitalize()} the {topic} of a customer "
              f"by its id, {rng.choice(['fast', 'safely', 'in bulk'])}",
              "inputSchema": {"type": "object", "properties": {f"{topic}_id": {"type": "string"}}}}
             for topic in TOPICS for verb in ("get", "update", "list", "cancel", "create", "search")]
    tasks = []
    for _ in range(n_tasks):
        topic = TOPICS[int(rng.integers(0, len(TOPICS)))]
        verbs = list(rng.choice(["get", "update", "list", "cancel", "create", "search"], int(rng.integers(1, 3)),
                                replace=False))
        used = [f"{prefix}_{v}_{topic}" for v in verbs]
        if random_use:
            used = [tools[j]["name"] for j in rng.choice(len(tools), len(verbs), replace=False)]
        tasks.append({"query": f"please {' and '.join(verbs)} my {topic}", "tools_used": used})
    return tools, tasks


def _write(folder, tools, tasks):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.json").write_text(json.dumps({"tools": tools}))
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return folder / "tools.json", folder / "tasks.jsonl"


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    """A base policy fitted on another catalog (other tool names) whose tasks the ranking did not tell apart, in
    tokens, exported: a default that does not fit this catalog."""
    tools, tasks = _catalog(seed=5, prefix="other", n_tasks=40, random_use=True)
    views = tool_views(tools)
    inst = catalog_instances(views, [t for t in read_tasks_list(tasks, views)], top_n=20)
    policy = StopPolicy(method="camdf_lite", lam=1e-3, top_n=20, n_jobs=1).fit(inst)
    policy.cost_unit_, policy.task_value_ = TOKENS, 1000.0
    return export_policy(policy, tmp_path_factory.mktemp("base") / "base")


def read_tasks_list(tasks, views):
    from camdf.runtime.fit_inputs import check_tasks

    return check_tasks(tasks, [v["name"] for v in views])


@pytest.fixture(scope="module")
def fitted(base_dir):
    tools, tasks = _catalog()
    return PolicyFitter(task_value=1000.0, base=base_dir, top_n=20, n_folds=3).fit(tools, tasks)


def test_the_fitted_policy_beats_a_base_from_another_catalog_and_reads_back_the_same(fitted, tmp_path):
    assert fitted.shipped_ == "fitted" and fitted.report_["difference"]["ci_low"] > 0
    folder = fitted.export(tmp_path / "policy")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["cost_unit"] == TOKENS and manifest["task_value"] == 1000.0
    assert manifest["fit"]["shipped"] == "fitted" and manifest["fit"]["base"]["method"] == "camdf_lite"
    back = load_policy(str(folder))
    tools, tasks = _catalog(seed=9)
    requests = [{"tools": tools, "query": t["query"], "task_value": 1000.0} for t in tasks[:20]]
    want = [s.to_json() for s in fitted.policy_.select_batch(requests)]
    assert [s.to_json() for s in back.select_batch(requests)] == want
    assert all(len(s["ranked"]) == 20 for s in want)  # the 60-tool request decided over its top 20, as fitted
    assert np.mean([set(t["tools_used"]) <= set(s["exposed"]) for t, s in zip(tasks, want)]) > 0.5


def test_a_request_without_costs_is_priced_in_schema_tokens_and_task_value_is_lambda(fitted):
    tools, tasks = _catalog(seed=9)
    policy = fitted.policy_
    plain = policy.select(tools, query=tasks[0]["query"], task_value=1000.0)
    priced = policy.select(tools, query=tasks[0]["query"], costs=schema_tokens(tool_views(tools)).tolist(),
                           lam=1e-3)
    assert plain.to_json() == priced.to_json()
    with pytest.raises(ValueError, match="task_value: give lam or task_value, not both"):
        policy.select_batch([{"tools": tools, "query": "x order", "lam": 0.1, "task_value": 10}])
    with pytest.raises(ValueError, match="task_value: give lam or task_value, not both"):
        policy.select(tools, query="my order", lam=0.1, task_value=10)
    with pytest.raises(ValueError, match="task_value: expected the tokens one solved task is worth"):
        policy.select(tools, query="my order", task_value=-1)


def test_the_base_is_kept_where_the_tasks_cannot_beat_it(fitted, tmp_path):
    tools, tasks = _catalog()
    same = export_policy(fitted.policy_, tmp_path / "same")  # fitted on these very tasks: nothing beats it
    kept = PolicyFitter(task_value=1000.0, base=same, top_n=20, n_folds=3).fit(tools, tasks)
    assert kept.shipped_ == "base" and kept.report_["difference"]["ci_low"] <= 0
    folder = kept.export(tmp_path / "kept")
    assert json.loads((folder / "manifest.json").read_text())["fit"]["shipped"] == "base"
    assert load_policy(str(folder)).select(tools, query="cancel my order", task_value=1000.0).exposed == \
        fitted.policy_.select(tools, query="cancel my order", task_value=1000.0).exposed


def test_fitting_ranks_as_the_runtime_ranks_the_whole_catalog():
    tools, tasks = _catalog()
    views = tool_views(tools)
    inst = catalog_instances(views, read_tasks_list(tasks, views), top_n=None)
    for i in (0, 7):
        runtime = tool_scores(tasks[i]["query"], views)  # the built-in ranker (crosscat), one request at a time
        order = np.argsort(-runtime, kind="stable")
        assert np.allclose(inst.scores[i], runtime[order]) and list(inst.tools[i]) == [views[j]["name"] for j in order]


def test_mcp_openai_and_langchain_tools_are_one_catalog():
    from langchain_core.tools import tool

    @tool
    def get_order(order_id: str) -> str:
        """Get the status and details of an order."""
        return order_id

    mcp = {"tools": [{"name": "get_order", "description": "Get the status and details of an order.",
                      "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]}
    openai = [{"type": "function", "function": {"name": "get_order", "description": "Get the status and details "
               "of an order.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]
    names = [[v["name"] for v in tool_views(t)] for t in (mcp, openai, [get_order], {"result": mcp})]
    assert names == [["get_order"]] * 4
    assert tool_views([get_order])[0]["parameters"]["properties"] == {"order_id": {"type": "string"}}


def test_a_decision_outside_the_fitted_range_warns_in_the_selection_and_one_log_line(fitted, caplog):
    tools, _ = _catalog(seed=9)
    policy = fitted.policy_
    with caplog.at_level(logging.WARNING, logger="camdf"):
        odd = policy.select(tools[:3], scores=[3.0, 2.0, 1.0], costs=[1e6, 1e6, 1e6], lam=5.0)
    kinds = " | ".join(odd.warnings)
    for what in ("list length 3", "tool costs", "mean tool cost", "lam 5", "nothing exposed"):
        assert what in kinds, kinds
    assert odd.to_json()["warnings"] == odd.warnings
    assert [r.message for r in caplog.records if r.name == "camdf"] == [f"camdf decision: {'; '.join(odd.warnings)}"]
    fine = policy.select(tools, query="cancel my order", task_value=1000.0)
    assert fine.warnings == [] and fine.exposed


def test_a_legacy_policy_without_a_range_warns_only_when_nothing_is_exposed(tmp_path):
    from camdf.runtime.policy_file import policy_from_numbers, policy_numbers

    from ..core.test_theory import _family

    numbers = policy_numbers(StopPolicy(method="camdf_lite", lam=0.2).fit(_family(40, True)))
    del numbers["fit_range"], numbers["params"]["top_n"]  # as written before either existed
    old = policy_from_numbers(json.loads(json.dumps(numbers)))
    tools = [{"name": n, "description": f"tool {n}"} for n in "abcdefgh"]
    assert old.select(tools, scores=list(range(8)), costs=[0.5] * 8, lam=0.01).warnings == []
    assert old.select(tools, scores=list(range(8)), costs=[50.0] * 8, lam=1.0).warnings[-1].startswith("nothing")


def _cli(tmp_path, capsys, *extra, tools=None, tasks=None, base=None):
    args = ["fit", "--tools", str(tools), "--tasks", str(tasks), "--out", str(tmp_path / "out"), "--top-n", "20",
            "--folds", "3", "--task-value", "1000", *(["--base", str(base)] if base else []), *extra]
    try:
        code = main(args)
    except SystemExit as stop:  # argparse's refusal of a flag: one line, exit 2
        code = stop.code
    return code, capsys.readouterr()


def test_the_cli_prints_the_comparison_and_exports(base_dir, tmp_path, capsys):
    tools_path, tasks_path = _write(tmp_path / "in", *_catalog())
    code, out = _cli(tmp_path, capsys, tools=tools_path, tasks=tasks_path, base=base_dir)
    assert code == 0, out.err
    base = load_policy(str(base_dir)).method  # no --method: the candidate is the base's own rule, refitted
    assert "minus base:" in out.out and f"shipped: {base} fitted on every task" in out.out
    assert load_policy(str(tmp_path / "out")).method == base


@pytest.mark.parametrize("edit, says", [
    (lambda lines: lines.insert(2, ""), r"tasks.jsonl:3: empty line"),
    (lambda lines: lines.insert(1, '{"query": "x", '), r"tasks.jsonl:2: not JSON"),
    (lambda lines: lines.insert(3, '{"query": "cancel", "tools_used": ["t_get_order", "nope"]}'),
     r"tasks.jsonl:4: tools_used: unknown tool 'nope' \(not in the tools file\)"),
    (lambda lines: lines.insert(0, '{"query": "", "tools": []}'), r"tasks.jsonl:1: query: expected the task's text"),
    (lambda lines: lines.insert(0, '["a"]'), r"tasks.jsonl:1: expected a JSON object"),
    (lambda lines: lines.insert(0, '{"query": "the of", "tools": []}'), r"tasks.jsonl:1: query: no word"),
    (lambda lines: lines.insert(0, '{"query": "a b", "tools": [], "tools_used": []}'), r"tasks.jsonl:1: tools: give"),
    (lambda lines: lines.__delitem__(slice(5, None)), r"tasks.jsonl: 5 tasks; camdf fit needs at least 10"),
])
def test_a_bad_task_line_is_one_line_naming_file_and_line(base_dir, tmp_path, capsys, edit, says):
    tools, tasks = _catalog()
    tools_path, tasks_path = _write(tmp_path / "in", tools, tasks)
    lines = tasks_path.read_text().splitlines()
    edit(lines)
    tasks_path.write_text("\n".join(lines) + "\n")
    code, out = _cli(tmp_path, capsys, tools=tools_path, tasks=tasks_path, base=base_dir)
    assert code == 2 and out.out == "" and len(out.err.splitlines()) == 1, out.err
    assert __import__("re").search(says, out.err), out.err
    assert not (tmp_path / "out").exists() and [p.name for p in tmp_path.iterdir()] == ["in"]


@pytest.mark.parametrize("change, says", [
    ({"tools": '{"tools": [{"name": "a"}, {"name": "a"}]}'}, r"tools.json: tools\[1\].name: duplicate tool name"),
    ({"tools": '{"tool": []}'}, r"tools.json: expected an MCP tools/list result"),
    ({"tools": "[1, 2]"}, r"tools.json: tools\[0\]: expected an object"),
    ({"tools": "{"}, r"tools.json: line 1 column 2: invalid JSON"),
    ({"flags": ["--task-value", "-3"]}, r"--task-value: expected a finite number > 0"),
    ({"flags": ["--method", "full"]}, r"method: expected one of"),
    ({"flags": ["--top-n", "0"]}, r"--top-n: expected an integer >= 1"),
    ({"base": "nowhere"}, r"base|no such model folder"),
    ({"out": "used"}, r"--out .*: exists and is not an empty folder"),
])
def test_bad_files_and_flags_are_one_line_exit_2(base_dir, tmp_path, capsys, change, says):
    tools_path, tasks_path = _write(tmp_path / "in", *_catalog())
    if "tools" in change:
        tools_path.write_text(change["tools"])
    if change.get("out"):
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "x").write_text("")
    base = tmp_path / change["base"] if "base" in change else base_dir
    code, out = _cli(tmp_path, capsys, *change.get("flags", []), tools=tools_path, tasks=tasks_path, base=base)
    assert code == 2 and len(out.err.splitlines()) == 1 and "Traceback" not in out.err, out.err
    assert __import__("re").search(says, out.err), out.err
    assert change.get("out") or not (tmp_path / "out").exists()
