"""Convert Gorilla's APIBench (the API catalogs and their evaluation questions) into the task format.

The folder (``data/sources/apibench``, committed; or a clone of the public repository
ShishirPatil/gorilla) holds, at the repository's paths, three API catalogs and their three
evaluation files, each read plain or gzip-compressed (``<path>.gz``). Nothing is downloaded.

- ``huggingface``: ``data/api/huggingface_api.jsonl`` and ``data/apibench/huggingface_eval.json``
- ``tensorflowhub``: ``data/api/tensorflowhub_api.jsonl`` and ``data/apibench/tensorflow_eval.json``
- ``torchhub``: ``data/api/torchhub_api.jsonl`` and ``data/apibench/torchhub_eval.json``

Every file is JSON lines (the ``*_eval.json`` files too).

- **Catalog** (one domain, the three frameworks together): one tool per distinct API, in
  framework order then file order. An API is identified by its *model*: for Hugging Face the
  ``api_name`` (the Hub model id; its ``api_call`` is not one: 29 AutoTrain models share
  ``joblib.load('model.joblib')``), for TensorFlow Hub and Torch Hub the ``api_call`` (it
  names the model URL or the repository and model; ``api_name`` there is a free label such
  as ``model_id``). A key listed twice keeps its first row (29 Hugging Face names and 616
  TensorFlow Hub calls repeat in the public files: 907 + 80 + 94 = 1,081 tools). The name
  is ``hf_<model id>``, ``tfhub_<model path>`` (``tfhub_keras_<path>`` when the call wraps
  a ``hub.KerasLayer``) or ``torchhub_<repo>_<model>``, slugged to ``[a-z0-9_]`` by
  :func:`camdf.integrations.sources.slug` (:func:`model_id`); a name longer than 64
  characters keeps 55 and gets ``_`` + 8 hex digits of its SHA-1, and a clash gets ``_2``,
  ``_3`` in catalog order. The description is ``<framework>, <model id> (<domain>;
  <functionality>): <description> Call: <api_call>``; the JSON schema is built from
  ``api_arguments`` (:func:`argument_schema`: a dict's keys, a list's names, free text in
  the schema's description); kind ``read``; no cost.
- **Tasks**: one per evaluation question, id ``<framework>-<line>`` (the line of its eval
  file), text = the question of ``code`` without the answer: the text after
  ``###Instruction:`` up to ``###Output:``, with its ``###Input:`` (when given) appended as
  ``Input: ...`` (:func:`question`). ``required`` = the single API the question targets:
  for Hugging Face its ``api_data.api_name``, otherwise its ``api_call``, matched exactly
  to a catalog key. A question whose API matches no catalog entry is dropped and counted
  (none in the public files: all 911 + 688 + 186 match). A question repeating an earlier
  one's text with the same gold API is dropped (none in the public files: no text repeats).
  When more remain than ``max_tasks`` (1,500 by default; 1,785 in the public files), the
  ``max_tasks`` questions with the smallest SHA-256 of their id are kept, in file order (the
  subset is a function of the ids only: 767 Hugging Face, 578 TensorFlow Hub, 155 Torch Hub).
  ``group`` is the gold tool (questions about one API share a group: 657 groups); ``meta``
  keeps the ``framework``, ``line``, the question's own ``api_call``, and ``domain_group``
  (``<framework>:<domain>``, the catalog entry's domain: a coarser fold group, 56 of them).

Malformed input is refused as a whole, every problem listed as ``<file>:<line>: what is
wrong`` (:class:`SourceError`), before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from camdf.data.model import Domain, Task, Tool
from camdf.integrations import sources


@dataclass(frozen=True)
class Framework:
    """One of the three catalogs: its files, its name prefix and which field identifies an API."""

    key: str
    api_file: str
    eval_file: str
    prefix: str
    by: str  # "api_name" or "api_call": the field naming one model


FRAMEWORKS = (
    Framework("huggingface", "data/api/huggingface_api.jsonl", "data/apibench/huggingface_eval.json", "hf", "api_name"),
    Framework("tensorflowhub", "data/api/tensorflowhub_api.jsonl", "data/apibench/tensorflow_eval.json", "tfhub",
              "api_call"),
    Framework("torchhub", "data/api/torchhub_api.jsonl", "data/apibench/torchhub_eval.json", "torchhub", "api_call"),
)
HOW_TO_GET = ("the folder is committed as data/sources/apibench; or git clone the public repository "
              "ShishirPatil/gorilla and give its folder (domain.source)")
#: Default cap on the number of tasks (a deterministic subset by SHA-256 of the id above it).
MAX_TASKS = 1500
#: Parameter types of the source (``{"name", "type", "description"}`` lists) -> JSON schema types.
TYPES = {"str": "string", "string": "string", "int": "integer", "integer": "integer", "float": "number",
         "number": "number", "bool": "boolean", "boolean": "boolean", "list": "array", "array": "array",
         "dict": "object", "object": "object"}
_PLACEHOLDERS = {"", "n/a", "na", "none", "null", "[]", "{}"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NAMED = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)\s*:\s*(.+)", re.S)
_QUESTION = re.compile(r"\s*###\s*Instruction:\s*(.*?)\s*(?:###\s*Output:|\Z)", re.S)
_INPUT = re.compile(r"\s*###\s*Input:\s*")
_TFHUB = re.compile(r"https?://tfhub\.dev/([^'\"\s)]+)")
_REPO = re.compile(r"repo_or_dir\s*=\s*['\"]([^'\"]+)['\"]")
_MODEL = re.compile(r"\bmodel\s*=\s*['\"]([^'\"]+)['\"]")


class SourceError(sources.SourceError):
    """The APIBench folder is missing or malformed: every problem, each naming its file and line."""


def question(code: str) -> str:
    """An eval entry's question: the instruction of ``code`` (and ``Input: ...``), without the answer; "" if none."""
    m = _QUESTION.match(code)
    if not m:
        return ""
    head, *rest = _INPUT.split(m.group(1), maxsplit=1)
    text = head.strip()
    if text and rest and rest[0].strip():
        text = f"{text}\nInput: {rest[0].strip()}"
    return text


def model_id(framework: Framework, row: dict) -> str:
    """The model an API row loads: the Hub id, the tfhub.dev path, or ``<repo> <model>`` (else the call itself)."""
    call = row["api_call"]
    if framework.by == "api_name":
        return row["api_name"]
    if framework.key == "tensorflowhub":
        m = _TFHUB.search(call)
        return m.group(1).strip("/") if m else call
    repo, model = _REPO.search(call), _MODEL.search(call)
    return " ".join(m.group(1) for m in (repo, model) if m) if repo else call


def tool_name(framework: Framework, row: dict) -> str:
    """``<prefix>_<model id>`` in ``[a-z0-9_]`` (``tfhub_keras_`` for a KerasLayer), at most 64 characters."""
    tag = "keras " if framework.key == "tensorflowhub" and "KerasLayer" in row["api_call"] else ""
    name = sources.slug(f"{framework.prefix} {tag}{model_id(framework, row)}")
    return sources.short_name(name, name)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    for kind, name in ((int, "integer"), (float, "number"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return "string"


def argument_schema(args: Any) -> dict[str, Any]:
    """A JSON schema (object) from a row's ``api_arguments``, which the source gives in four shapes.

    A dict: each key a property typed by its value, the value as its example. A list: each
    ``{"name", "type", "description"[, "default"]}`` object or one-key ``{name: description}`` a
    property, each string as free text. Free text (a string): comma-separated identifiers are
    properties, ``name: description`` is one, anything else joins the schema's ``description``.
    Placeholders (``N/A``, empty) give nothing. No property is required (the source does not say).
    """
    props: dict[str, Any] = {}
    notes: list[str] = []

    def text(value: str) -> None:
        value = value.strip()
        if value.lower() in _PLACEHOLDERS:
            return
        pieces = [p.strip() for p in value.split(",")]
        if all(_IDENT.fullmatch(p) for p in pieces):
            for p in pieces:
                props.setdefault(p, {"type": "string"})
        elif m := _NAMED.fullmatch(value):
            props.setdefault(m.group(1), {"type": "string", "description": m.group(2).strip()})
        elif value not in notes:
            notes.append(value)

    if isinstance(args, dict):
        for key, value in args.items():
            prop: dict[str, Any] = {"type": _json_type(value)}
            if value not in (None, "", [], {}):
                prop["examples"] = [value]
            props.setdefault(str(key), prop)
    elif isinstance(args, list):
        for item in args:
            if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"].strip():
                kind = str(item.get("type") or "string")
                prop = {"type": TYPES.get(kind.lower(), "string")}
                desc = str(item.get("description") or "").strip()
                if kind.lower() not in TYPES:
                    desc = f"{desc} ({kind})".strip()
                if desc:
                    prop["description"] = desc
                if item.get("default") not in (None, ""):
                    prop["default"] = item["default"]
                props.setdefault(item["name"].strip(), prop)
            elif isinstance(item, dict) and len(item) == 1:
                (key, value), = item.items()
                props.setdefault(str(key), {"type": "string", "description": str(value)})
            elif isinstance(item, str):
                text(item)
            elif item is not None:
                text(json.dumps(item, ensure_ascii=False))
    elif isinstance(args, str):
        text(args)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if notes:
        schema["description"] = "; ".join(notes)
    return schema


def _str(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v).strip() for v in value)
    return str(value).strip()


def _api_problems(fw: Framework, row: Any) -> list[str]:
    if not isinstance(row, dict):
        return [f"is {type(row).__name__}, expected an object"]
    out = [f"`{k}` missing or not a non-empty string" for k in ("api_call", "api_name")
           if not isinstance(row.get(k), str) or not row[k].strip()]
    out += [f"`{k}` is not a string" for k in ("framework", "domain", "description")
            if not isinstance(row.get(k, ""), str)]
    func = row.get("functionality", "")
    if not (isinstance(func, str) or isinstance(func, list) and all(isinstance(f, str) for f in func)):
        out.append("`functionality` is not a string or a list of strings")
    return out


def _read_catalog(root: Path, problems: list[str]) -> tuple[list[tuple[Framework, dict]], dict[tuple[str, str], str]]:
    """The catalog rows (first row per key) and each ``(framework, key)``'s tool name."""
    rows: list[tuple[Framework, dict]] = []
    keys: dict[tuple[str, str], int] = {}
    for fw in FRAMEWORKS:
        path = sources.source_file(root, fw.api_file)
        if not path.is_file():
            problems.append(f"{root / fw.api_file}: missing (the {fw.key} API catalog)")
            continue
        for line, row in sources.read_jsonl(path, "JSON lines of API entries", problems) or []:
            mine = _api_problems(fw, row)
            if mine:
                problems += [f"{path}:{line}: {m}" for m in mine]
            elif (fw.key, row[fw.by]) not in keys:
                keys[(fw.key, row[fw.by])] = len(rows)
                rows.append((fw, row))
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for (fw_key, key), i in keys.items():
        fw, row = rows[i]
        names[(fw_key, key)] = sources.unique_name(tool_name(fw, row), taken)
    return rows, names


def _read_questions(root: Path, names: dict[tuple[str, str], str], problems: list[str]) -> tuple[list[dict], int]:
    """Every well-formed eval question with its gold tool, and how many matched no catalog entry."""
    out, unmatched = [], 0
    for fw in FRAMEWORKS:
        path = sources.source_file(root, fw.eval_file)
        if not path.is_file():
            problems.append(f"{root / fw.eval_file}: missing (the {fw.key} evaluation questions)")
            continue
        for line, row in sources.read_jsonl(path, "JSON lines of evaluation questions", problems) or []:
            where = f"{path}:{line}"
            if not isinstance(row, dict):
                problems.append(f"{where}: is {type(row).__name__}, expected an object")
                continue
            mine = []
            text = question(row["code"]) if isinstance(row.get("code"), str) else ""
            if not text:
                mine.append("`code` has no ###Instruction: question")
            if not isinstance(row.get("api_call"), str) or not row["api_call"].strip():
                mine.append("no gold API: `api_call` missing or empty")
            data = row.get("api_data")
            if fw.by == "api_name" and (not isinstance(data, dict) or not isinstance(data.get("api_name"), str)
                                        or not data["api_name"].strip()):
                mine.append("no gold API: `api_data.api_name` missing or empty")
            if mine:
                problems += [f"{where}: {m}" for m in mine]
                continue
            key = data["api_name"] if fw.by == "api_name" else row["api_call"]
            gold = names.get((fw.key, key))
            if gold is None:
                unmatched += 1
                continue
            out.append({"framework": fw, "line": line, "text": text, "gold": gold, "api_call": row["api_call"]})
    return out, unmatched


def convert_apibench(source: str | Path, max_tasks: int | None = MAX_TASKS) -> Domain:
    """Convert the APIBench folder into a :class:`Domain` (the module docstring says how).

    Parameters
    ----------
    source : path
        The folder holding ``data/api/*_api.jsonl`` and ``data/apibench/*_eval.json`` (plain
        or ``.gz``): ``data/sources/apibench`` or a clone of ShishirPatil/gorilla.
    max_tasks : int or None
        Keep at most this many questions (those with the smallest SHA-256 of their id);
        None keeps all.

    Raises
    ------
    SourceError
        The folder or a file is missing, or any row is malformed (every problem listed, each
        with its file and line): a line that is not JSON or not an object, an API without
        ``api_call`` or ``api_name`` or with non-string texts, a question without an
        instruction or without its gold API (``api_call``; ``api_data.api_name`` for
        Hugging Face).
    """
    root = Path(source)
    if not root.is_dir():
        raise SourceError(f"{root}: no such folder (the APIBench files); {HOW_TO_GET}")
    if max_tasks is not None and max_tasks < 1:
        raise ValueError(f"max_tasks must be a positive integer or None, got {max_tasks!r}")
    problems: list[str] = []
    rows, names = _read_catalog(root, problems)
    found, unmatched = _read_questions(root, names, problems)
    sources.raise_problems(root, problems, "the APIBench files", SourceError)
    seen: set[tuple[str, str]] = set()
    kept = []
    for q in found:
        if (q["text"], q["gold"]) not in seen:
            seen.add((q["text"], q["gold"]))
            kept.append(q)
    duplicates = len(found) - len(kept)
    total = len(kept)
    if max_tasks is not None and total > max_tasks:
        ids = [f"{q['framework'].key}-{q['line']}" for q in kept]
        chosen = set(sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())[:max_tasks])
        kept = [q for q, i in zip(kept, ids) if i in chosen]
    tools, domain_of = [], {}
    for fw, row in rows:
        name = names[(fw.key, row[fw.by])]
        domain = _str(row.get("domain", ""))
        domain_of[name] = f"{fw.key}:{domain}"
        head = f"{_str(row.get('framework', '')) or fw.key}, {model_id(fw, row)}"
        kinds = "; ".join(x for x in (domain, _str(row.get("functionality", ""))) if x)
        text = " ".join(x for x in (_str(row.get("description", "")), f"Call: {row['api_call'].strip()}") if x)
        tools.append(Tool(
            name=name,
            description=f"{head}{f' ({kinds})' if kinds else ''}: {text}",
            parameters=argument_schema(row.get("api_arguments")),
            kind="read",
        ))
    tasks = [Task(
        id=f"{q['framework'].key}-{q['line']}",
        text=q["text"],
        required=(q["gold"],),
        group=q["gold"],
        meta={"framework": q["framework"].key, "line": q["line"], "api_call": q["api_call"],
              "domain_group": domain_of[q["gold"]]},
    ) for q in kept]
    note = (f"{unmatched} unmatched and {duplicates} duplicate questions dropped; "
            + (f"{len(kept)} of {total} kept by SHA-256 of the id" if len(kept) < total else f"all {total} kept"))
    return Domain(
        name="apibench",
        source=f"Gorilla APIBench (public repository ShishirPatil/gorilla, data/api/, data/apibench/; {note})",
        tools=tools,
        tasks=tasks,
        acquirable_kinds=("read",),
    )
