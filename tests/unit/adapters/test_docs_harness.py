"""docs/harness.md and the harness pages (docs/harness/*.md): every Python block is a file the examples use
(`# file: NAME`) or an example (`# example: NAME`), and each example runs as it is, offline, beside an exported
policy in `policy/`."""

import re
import runpy

import agents.mcp  # noqa: F401
import mcp.client.stdio  # noqa: F401
import pytest

from ...conftest import ROOT

# Imported above, at collection: the MCP client's `errlog=sys.stderr` default is bound at import, and an import
# inside a test would bind the test's own capture stream, closed when that test ends.

BLOCK = re.compile(r"```python\n(.*?)```", re.S)
# What each example must print (its output otherwise depends on the policy in policy/).
SAYS = {
    "langchain": [r"the model sees: \[.*'get_order'.*\]", r"Your refund is on its way\. \(1 decision\)"],
    "mcp": [r"before the task: \['select_tools'\]", r"\d+ of 4 tools exposed for this task", r"after: \["],
    "openai_agents": [r"the model sees: \[", r"Your refund is on its way\. \(1 decision\)"],
    "anthropic": [r"\('camdf_tool_search', False\), \('get_order', True\)", r'"type": "tool_result"'],
    "scorer": [r"exposed: \['refund_order'", r"ranked: \['refund_order', ", r"warnings: \["],
    "mcp2026": [r"protocol: 2026-07-28", r"listed: \['search_tools', 'call_tool', 'get_order'\]",
                r"found: \['refund_order'", r"order W1: refunded",
                r"listed again: \['search_tools', 'call_tool', 'get_order'\]"],
    "openai_search": [r"\('tool_search', False\), \('get_order', False\), \('refund_order', True\)",
                      r"tool_search_output call_1 \['refund_order'"],
    "anthropic_search": [r"\('camdf_tool_search', False\), \('get_order', False\), \('refund_order', True\)",
                         r'"tool_reference", "tool_name": "refund_order"'],
    "langchain_search": [r"the model sees: \['camdf_search_tools', 'get_order'\]", r"'Loaded: refund_order",
                         r"'order W1: refunded'"],
    "fit": [r"minus base: [+-]\d", r"shipped: ", r"my_policy: \w+ policy exported", r"\['cancel_hotel'.*\] \[\]"],
}


PAGES = [ROOT / "docs" / "harness.md", *sorted((ROOT / "docs" / "harness").glob("*.md"))]


def _blocks():
    files, examples = {}, {}
    for page in PAGES:
        for code in BLOCK.findall(page.read_text(encoding="utf-8")):
            kind, _, name = code.splitlines()[0].partition(": ")
            where = page.relative_to(ROOT)
            assert kind in ("# file", "# example"), f"{where}: a Python block starts with {kind!r}"
            book = files if kind == "# file" else examples
            assert name.strip() not in book, f"{where}: a second block named {name.strip()!r}"
            book[name.strip()] = code
    return files, examples


FILES, EXAMPLES = _blocks()


def test_every_adapter_has_an_example():
    assert sorted(EXAMPLES) == sorted(SAYS)


@pytest.mark.parametrize("name", sorted(SAYS))
def test_the_example_runs(name, policy_dir, tmp_path, monkeypatch, capfd):
    (tmp_path / "policy").symlink_to(policy_dir, target_is_directory=True)
    for file, code in FILES.items():
        (tmp_path / file).write_text(code)
    (tmp_path / f"example_{name}.py").write_text(EXAMPLES[name])
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(tmp_path / f"example_{name}.py"), run_name="__main__")
    out = capfd.readouterr().out
    for says in SAYS[name]:
        assert re.search(says, out), (says, out)
