"""Convert BFCL's multi-turn base tasks (package ``bfcl-eval``) into the task format.

The catalog is every function of every API class that the multi-turn tasks
involve, named ``Class.function``, with the package's own function docs. Each
task's ``candidates`` are the functions of its involved classes minus its
excluded functions; ``required`` are the class-qualified functions of its ground
truth. Every kind is acquirable (BFCL marks no read/write kinds: ``generic``).

A task's fold group (``Task.group``, for ``folds.protocol: group``) is its
``path``: the sequence of functions BFCL generated the task from
(:func:`path_group`). Tasks with one path are one template, and the variants of a
base question in the other multi-turn categories (``multi_turn_miss_func_12``
and the rest of question 12) carry the same path as ``multi_turn_base_12``, so
any mix of categories keeps a question and its variants in one fold.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.resources
import json

from camdf.data.model import TOOL_KINDS, Domain, Task, Tool

PACKAGE = "bfcl-eval"
CATEGORY = "multi_turn_base"


def package_version() -> str:
    return importlib.metadata.version(PACKAGE)


def _data_file(*parts: str):
    return importlib.resources.files("bfcl_eval").joinpath("data", *parts)


def _read_jsonl(*parts: str) -> list[dict]:
    text = _data_file(*parts).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _call_names(call: str, task_id: str) -> list[str]:
    """Function names called in one ground-truth call string such as ``cd(folder='x')``."""
    try:
        tree = ast.parse(call, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"bfcl task {task_id}: cannot parse ground-truth call {call!r}: {err.msg}") from err
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.append(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None))
    if not names or None in names:
        raise ValueError(f"bfcl task {task_id}: ground-truth entry {call!r} is not a plain function call")
    return names


def path_group(path: list[str]) -> str:
    """``path:<12 hex digits>``: the start of the SHA-1 of the JSON list of a task's ``path`` functions."""
    return "path:" + hashlib.sha1(json.dumps(list(path)).encode("utf-8")).hexdigest()[:12]


def _resolve(name: str, classes: list[str], functions: dict[str, list[str]], task_id: str) -> str:
    owners = [c for c in classes if name in functions[c]]
    if len(owners) != 1:
        what = "ambiguous" if owners else "unknown"
        raise ValueError(
            f"bfcl task {task_id}: {what} function `{name}` among involved classes {classes} "
            f"(found in {owners or 'none'}; expected exactly one)"
        )
    return f"{owners[0]}.{name}"


def convert_multi_turn(category: str = CATEGORY) -> Domain:
    """Convert ``BFCL_v4_<category>.json`` and its possible answers into a :class:`Domain`."""
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    version = package_version()
    rows = _read_jsonl(f"BFCL_v4_{category}.json")
    answers = {r["id"]: r["ground_truth"] for r in _read_jsonl("possible_answer", f"BFCL_v4_{category}.json")}
    classes = sorted({c for r in rows for c in r["involved_classes"]})
    tools: list[Tool] = []
    functions: dict[str, list[str]] = {}
    for cls in classes:
        docs = _read_jsonl("multi_turn_func_doc", MULTI_TURN_FUNC_DOC_FILE_MAPPING[cls])
        functions[cls] = [d["name"] for d in docs]
        tools += [
            Tool(name=f"{cls}.{d['name']}", description=d.get("description", ""), parameters=d.get("parameters"))
            for d in docs
        ]
    tasks = []
    for row in rows:
        tid = row["id"]
        if tid not in answers:
            raise ValueError(f"bfcl task {tid}: no ground truth in possible_answer/BFCL_v4_{category}.json")
        involved = list(row["involved_classes"])
        excluded = {_resolve(n, involved, functions, tid) for n in row.get("excluded_function", [])}
        candidates = [f"{c}.{f}" for c in involved for f in functions[c] if f"{c}.{f}" not in excluded]
        required = []
        for turn in answers[tid]:
            for call in turn:
                required += [_resolve(n, involved, functions, tid) for n in _call_names(call, tid)]
        text = "\n".join(
            msg["content"] for turn in row["question"] for msg in turn if msg.get("role") == "user" and msg.get("content")
        )
        tasks.append(
            Task(
                id=tid,
                text=text,
                required=tuple(dict.fromkeys(required)),
                candidates=tuple(candidates),
                group=path_group(row["path"]),
                meta={"involved_classes": involved, "excluded_function": list(row.get("excluded_function", []))},
            )
        )
    source = f"{PACKAGE}=={version} (bfcl_eval/data/BFCL_v4_{category}.json)"
    return Domain(name="bfcl_multi_turn", source=source, tools=tools, tasks=tasks, acquirable_kinds=TOOL_KINDS)
