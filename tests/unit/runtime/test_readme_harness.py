"""The README's harness example, run as written with the package's default policy, prints what the README shows;
and the default policy is there, decides on a catalog it was never fitted on and says where it came from."""

import json
import subprocess
import sys
from pathlib import Path

from camdf.runtime import load_policy
from camdf.runtime.defaults import default_policy_dir

ROOT = Path(__file__).resolve().parents[3]


def test_readme_harness_example_prints_what_the_readme_shows():
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- example:harness -->", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    shown = text.split("<!-- example:harness-output -->", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == shown.strip()


def test_the_default_policy_ships_in_the_package_with_its_provenance():
    folder = default_policy_dir()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["cost_unit"] == "tokens" and manifest["task_value"] > 0
    source = manifest["source"]
    assert source["stage"] == "default_policy" and source["cost_regime"] == "runtime_tokens"
    assert set(source["domains"]) >= {"retail", "airline", "telecom", "bfcl_multi_turn", "stabletoolbench"}
    policy = load_policy()
    assert policy.portable and policy.vocab_ == [] and policy.top_n == source["top_k"]


def test_the_default_policy_exposes_a_handful_of_an_unseen_catalog_and_moves_with_the_dial():
    """A catalog of SaaS-style tools none of the built-in domains has: some tools, not none and not all."""
    apps = ("slack", "github", "jira", "notion", "hubspot", "zendesk", "stripe", "asana", "trello", "gmail")
    things = ("message", "issue", "page", "contact", "ticket", "payment", "task", "card", "email", "invoice")
    tools = [{"name": f"{a}_{v}_{t}", "description": f"{v.capitalize()} a {t} in {a.capitalize()}: its id, owner, "
              f"status and history.", "parameters": {"type": "object", "properties": {
                  f"{t}_id": {"type": "string", "description": f"The {t}'s id"},
                  "workspace": {"type": "string", "description": "The workspace"}}}}
             for a in apps for v in ("create", "get", "update") for t in things]  # 300 tools
    policy = load_policy()
    for query in ("refund the stripe payment of this customer", "create a jira issue for the login bug",
                  "send a slack message to the team"):
        shown = policy.select(tools, query=query).exposed
        assert 1 <= len(shown) <= 20, (query, len(shown))
        more = policy.select(tools, query=query, task_value=100_000).exposed
        fewer = policy.select(tools, query=query, task_value=200).exposed
        assert len(fewer) <= len(shown) <= len(more)
