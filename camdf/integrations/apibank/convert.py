"""Convert API-Bank's test dialogues (files committed under ``data/sources/apibank``) into the task format.

The folder holds files of the public repository AlibabaResearch/DAMO-ConvAI (folder ``api-bank/``,
Apache-2.0) at commit 5d5a2d40, unchanged, at their paths in the repository (see its SOURCE.md):
``api-bank/lv1-lv2-samples/level-1-given-desc/*.jsonl`` and ``.../level-2-toolsearcher/*.jsonl`` (one
dialogue per file, one JSON object per line: ``{"role": "User"|"AI", "text"}`` or ``{"role": "API",
"api_name", "param_dict", "result"}``), ``api-bank/test-data/level-1-api.json`` (the level-1 evaluation
prompts; committed gzip-compressed as ``level-1-api.json.gz``, and a clone's plain ``.json`` is read when
present) and ``api-bank/test-data/level-3.json`` (the level-3 dialogues: ``requirement``, ``response``,
``apis``). Nothing is downloaded; a clone of the repository at that commit is a valid folder too. The
repository defines its APIs as Python classes (``apis/``, ``lv3_apis/``); the converter reads none of that
code, only the definitions the benchmark shows its models, as JSON, inside these data files.

- **Catalog**: two pools, the union of their definitions (not only the gold ones): 69 tools, each the
  gold of some task. *Level-1/2 pool*: every ``{"name", "description", "input_parameters",
  "output_parameters"}`` line of the ``API descriptions:`` block of each ``level-1-api.json`` prompt,
  the first definition of a name in file order (the public file gives each API one definition): 49
  APIs, of the 53 classes of ``apis/`` (``ToolSearcher`` is left out, see below; ``AddScene``,
  ``ModifyScene`` and ``CheckToken`` have no definition in the test data and no dialogue calls them).
  *Level-3 pool*: every definition a ``ToolSearcher`` call returns in ``level-3.json``
  (``apis[i].output.output``, an object or a list of them): 21 APIs. A level-3 API whose definition
  equals the level-1/2 one of the same name is that tool (``Calculator``); one that differs is another
  tool (``AddMeeting``, ``QueryMeeting``: other parameters). ``ToolSearcher`` (the benchmark's retrieval
  API) is no tool of the catalog: ranking the catalog is what it did. Name: the API's CamelCase name in
  snake case (:func:`tool_name`: ``GetUserToken`` -> ``get_user_token``, ``DocumentQA`` ->
  ``document_qa``), at most 64 characters; a level-3 tool whose name is taken gets ``_lv3``
  (``add_meeting_lv3``), any other clash ``_2``, ``_3`` in catalog order. Description: ``<ApiName>
  (API-Bank): <description>``. ``parameters``: a JSON schema object from ``input_parameters``
  (:func:`parameter_schema`: ``str`` -> string, ``int`` -> integer, ``float`` -> number, ``bool`` ->
  boolean, ``list`` -> array, ``list(str)`` -> array of strings, any other type a string with the type
  in its description); no ``required`` list, as the source marks none. Kind ``read``; no cost (the cost
  regime prices the schema).
- **Level-1/2 tasks**: one per dialogue file, in folder order (given-desc, then toolsearcher) and file
  name order, id ``<folder>/<file stem>`` (``level-1-given-desc/AddAgenda-level-1-1``). ``required`` =
  the ``api_name`` of its ``API`` rows, ``ToolSearcher`` excepted, deduplicated in call order. Text (the
  ``text`` argument): ``"user_turns"`` (default) joins every non-blank ``User`` turn, stripped, in
  order, with newlines; ``"first_turn"`` takes the first alone. The default is the dialogue's whole
  request: in 89 of the 261 dialogues a gold API (GetUserToken aside) is first called after a user turn
  that follows an earlier call, mostly a follow-up request ("Can you also check the stock price of
  Tesla?"), so the first turn alone does not determine G_x. ``meta.first_turn`` keeps the first turn
  either way. Three files of the public folder have no ``API`` row and give no task
  (:data:`NO_API_ROWS`: one empty file, two whose calls are written only inside the AI's text); any
  other dialogue without one is refused.
  ``group`` = ``api:<APIs>``, the file name before ``-level-<n>-<k>`` (the API combination the dialogue
  was generated for, e.g. ``api:AddAgenda-AddAlarm-GetUserToken``; the given-desc and toolsearcher
  dialogues of one API share it): 89 groups.
- **Level-3 tasks**: one per entry of ``level-3.json``, id ``level-3/<n>`` (0-based position), text =
  ``requirement`` (stripped), ``required`` = its non-``ToolSearcher`` calls, deduplicated in call order.
  ``group`` = ``level-3:<tool>``: a connected component of the level-3 task x tool graph (tasks linked
  by a shared gold tool), so one scenario's rewordings stay together: 8 groups.
- A text repeated with the same gold set is kept once (the first; ``meta.merged`` lists the others'
  ids): none under ``user_turns``; 20 dialogues under ``first_turn`` (291 tasks left). No
  ``candidates`` (the whole catalog is ranked); no ``alternatives``. ``meta``: ``level`` (the paper's:
  1 = given-desc "Call", 2 = toolsearcher "Retrieve+Call", 3 = "Plan+Retrieve+Call"), ``file`` (the
  source file, relative to the folder), ``row`` (level 3), ``first_turn`` (levels 1/2), ``merged``, and
  ``tool_group`` (``tool:<name>``: a connected component of the task x tool graph over all tasks, for
  ``folds.group_by: meta.tool_group``; ``GetUserToken`` and ``AddAgenda`` join most account and
  calendar dialogues, so the largest component holds 131 of the 311 tasks).

Default output: 69 tools, 311 tasks (212 level-1, 49 level-2, 50 level-3; |G_x| 1-4, mean 1.81, 97 fold
groups). Malformed input is refused as a whole, every problem listed as ``<file>:<line>: what is wrong``
or ``<file>: entry #<n>: what is wrong`` (:class:`SourceError`), before anything is written. The same
files give the same Domain, byte for byte.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from camdf.data.model import Domain, Task, Tool
from camdf.integrations import sources

SAMPLES = Path("api-bank", "lv1-lv2-samples")
#: The dialogue folders and the paper's level of each.
FOLDERS = {"level-1-given-desc": 1, "level-2-toolsearcher": 2}
API_DESCRIPTIONS = Path("api-bank", "test-data", "level-1-api.json")
LEVEL3 = Path("api-bank", "test-data", "level-3.json")
SEARCHER = "ToolSearcher"
BLOCK = "API descriptions:\n"
TEXT_MODES = ("user_turns", "first_turn")
#: Dialogue files of the public folder with no ``API`` row (no gold): skipped, any other such file refused.
NO_API_ROWS = {
    "level-1-given-desc/SearchEngine-level-1-1.jsonl": "an empty file",
    "level-1-given-desc/RegisterUser-ForgotPassword-DeleteAccount-GetUserToken-level-2-1.jsonl":
        "its call is written inside the AI's text only",
    "level-2-toolsearcher/QueryReminder-level-3-3.jsonl": "its calls are written inside the AI's text only",
}
HOW_TO_GET = ("the files are committed under data/sources/apibank; or git clone the public repository "
              "AlibabaResearch/DAMO-ConvAI, check out 5d5a2d40 and give its folder (domain.source)")
#: The source's parameter types -> JSON schema (anything else: a string with the type in its description).
TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"}, "int": {"type": "integer"}, "float": {"type": "number"},
    "bool": {"type": "boolean"}, "list": {"type": "array"}, "dict": {"type": "object"},
    "list(str)": {"type": "array", "items": {"type": "string"}},
}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_STEM = re.compile(r"^(.+)-level-\d+-\d+$")


class SourceError(sources.SourceError):
    """The API-Bank folder is missing or malformed: every problem, each naming its file and line or entry."""


def tool_name(api: str) -> str:
    """``api`` (CamelCase) in snake case, ``[a-z0-9_]``, at most 64 characters (``DocumentQA`` -> ``document_qa``)."""
    return sources.slug(_CAMEL.sub("_", api))[:sources.MAX_NAME]


def parameter_schema(inputs: dict[str, dict]) -> dict[str, Any]:
    """A JSON schema (object) from a definition's ``input_parameters`` (no ``required``: the source marks none)."""
    props: dict[str, Any] = {}
    for name, spec in inputs.items():
        kind = str(spec.get("type") or "str")
        prop = dict(TYPES.get(kind, {"type": "string"}))
        desc = str(spec.get("description") or "").strip()
        if kind not in TYPES:
            desc = f"{desc} (type: {kind})".strip()
        if desc:
            prop["description"] = desc
        props[name] = prop
    return {"type": "object", "properties": props}


def _definition_problems(d: Any) -> list[str]:
    if not isinstance(d, dict):
        return [f"an API definition is {type(d).__name__}, expected an object"]
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        return ["an API definition has no `name` (a non-empty string)"]
    out = []
    if not isinstance(d.get("description"), str):
        out.append(f"API definition {name!r}: `description` missing or not a string")
    params = d.get("input_parameters")
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and k and isinstance(v, dict) and isinstance(v.get("type", ""), str)
            and isinstance(v.get("description", ""), str) for k, v in params.items()):
        out.append(f"API definition {name!r}: `input_parameters` must be an object of "
                   "{name: {type, description}} objects")
    return out


def _first_definitions(found: list[tuple[str, dict]], problems: list[str]) -> dict[str, dict]:
    """The first definition of each API name (``ToolSearcher`` left out), the malformed ones as problems."""
    defs: dict[str, dict] = {}
    for where, d in found:
        bad = _definition_problems(d)
        if bad:
            problems += [f"{where}: {b}" for b in bad]
        elif d["name"] != SEARCHER:
            defs.setdefault(d["name"], d)
    return defs


def _read_level1_definitions(root: Path, problems: list[str]) -> dict[str, dict]:
    path = sources.source_file(root, API_DESCRIPTIONS)
    data = sources.read_json(path, "a JSON list of level-1 prompts", problems)
    if data is None:
        return {}
    if not isinstance(data, list):
        problems.append(f"{path}: expected a JSON list of prompts, got {type(data).__name__}")
        return {}
    found = []
    for i, row in enumerate(data):
        where = f"{path}: entry #{i}"
        text = row.get("instruction") if isinstance(row, dict) else None
        if not isinstance(text, str) or BLOCK not in text:
            problems.append(f"{where}: no `instruction` with an `{BLOCK.strip()}` block")
            continue
        for line in text.split(BLOCK, 1)[1].splitlines():
            if not line.strip():
                continue
            try:
                found.append((where, json.loads(line)))
            except (json.JSONDecodeError, RecursionError):
                problems.append(f"{where}: an API description line is not JSON: {line[:60]!r}")
    return _first_definitions(found, problems)


def _calls(apis: Any) -> list[str] | None:
    """The gold APIs of a level-3 entry's ``apis`` (``ToolSearcher`` left out, in call order), None if malformed."""
    if not isinstance(apis, list) or not all(
            isinstance(a, dict) and isinstance(a.get("api_name"), str) and a["api_name"] for a in apis):
        return None
    return list(dict.fromkeys(a["api_name"] for a in apis if a["api_name"] != SEARCHER))


def _read_level3(root: Path, problems: list[str]) -> tuple[dict[str, dict], list[tuple[int, str, list[str]]]]:
    path = root / LEVEL3
    data = sources.read_json(path, "a JSON list of level-3 dialogues", problems)
    if data is None:
        return {}, []
    if not isinstance(data, list):
        problems.append(f"{path}: expected a JSON list of dialogues, got {type(data).__name__}")
        return {}, []
    found, rows = [], []
    for i, row in enumerate(data):
        where = f"{path}: entry #{i}"
        if not isinstance(row, dict):
            problems.append(f"{where}: is {type(row).__name__}, expected an object")
            continue
        mine = []
        text = row.get("requirement")
        if not isinstance(text, str) or not text.strip():
            mine.append("`requirement` missing or empty")
        gold = _calls(row.get("apis"))
        if gold is None:
            mine.append("`apis` missing or not a list of objects with an `api_name`")
        elif not gold:
            mine.append("no API call besides ToolSearcher (no gold tool)")
        else:
            for a in row["apis"]:
                if a["api_name"] != SEARCHER:
                    continue
                result = a.get("output")
                out = result.get("output") if isinstance(result, dict) else None
                for d in (out if isinstance(out, list) else [out] if out is not None else []):
                    found.append((where, d))
        if mine:
            problems += [f"{where}: {m}" for m in mine]
        else:
            rows.append((i, text.strip(), gold))
    return _first_definitions(found, problems), rows


def _read_dialogue(path: Path, problems: list[str]) -> tuple[list[str], list[str]] | None:
    """(the user turns' texts, the gold APIs) of one dialogue file, or None (its problems listed)."""
    before = len(problems)
    rows = sources.read_jsonl(path, "a JSON-lines dialogue", problems)
    if rows is None or len(problems) > before:  # a line that is not JSON: the dialogue is not judged further
        return None
    users, gold, ok = [], [], True
    for line, r in rows:
        role = r.get("role") if isinstance(r, dict) else None
        if role in ("User", "AI"):
            if not isinstance(r.get("text"), str):
                problems.append(f"{path}:{line}: a {role} turn without a `text` string")
                ok = False
            elif role == "User" and r["text"].strip():
                users.append(r["text"].strip())
        elif role == "API":
            if not isinstance(r.get("api_name"), str) or not r["api_name"]:
                problems.append(f"{path}:{line}: an API row without an `api_name`")
                ok = False
            elif r["api_name"] != SEARCHER:
                gold.append(r["api_name"])
        else:
            problems.append(f"{path}:{line}: not an object with `role` User, AI or API")
            ok = False
    return (users, list(dict.fromkeys(gold))) if ok else None


def _unique(base: str, taken: set[str], tag: str | None) -> str:
    """``base``, or (taken) ``<base>_<tag>``, or ``<base>_2``, ``_3``...: the first free one, at most 64 characters."""
    if tag and base in taken:
        tagged = f"{base[:sources.MAX_NAME - len(tag) - 1]}_{tag}"
        if tagged not in taken:
            taken.add(tagged)
            return tagged
    return sources.unique_name(base, taken)


def _tool(name: str, d: dict) -> Tool:
    desc = d["description"].strip()
    return Tool(name=name, description=f"{d['name']} (API-Bank): {desc}".strip(),
                parameters=parameter_schema(d["input_parameters"]), kind="read")


def _dialogues(root: Path, pool12: dict[str, dict], problems: list[str]) -> list[tuple]:
    """``(folder, level, path, user turns, gold APIs)`` of every level 1/2 dialogue with a gold API defined in
    ``pool12``; the problems of the others appended to ``problems``."""
    dialogues = []
    for folder, level in FOLDERS.items():
        files = sorted((root / SAMPLES / folder).glob("*.jsonl"))
        if not files:
            problems.append(f"{root / SAMPLES / folder}: no *.jsonl dialogue files")
        for path in files:
            rel = f"{folder}/{path.name}"
            got = _read_dialogue(path, problems)
            if got is None:
                continue
            users, gold = got
            if not gold:
                if rel not in NO_API_ROWS:
                    problems.append(f"{path}: no API call besides ToolSearcher (no gold tool)")
                continue
            if not users:
                problems.append(f"{path}: no user turn with text")
                continue
            unknown = [g for g in gold if g not in pool12]
            problems += [f"{path}: gold API {g!r} has no definition in {API_DESCRIPTIONS}(.gz)" for g in unknown]
            if not unknown:
                dialogues.append((folder, level, path, users, gold))
    return dialogues


def _merged(tasks: list[Task]) -> list[Task]:
    """``tasks`` with a (text, G_x) repeat kept once (``meta.merged`` lists the repeats' ids), each with its
    ``meta.tool_group`` (tasks linked by a shared gold tool)."""
    kept: dict[tuple[str, tuple[str, ...]], Task] = {}
    merged: dict[str, list[str]] = {}
    for t in tasks:
        first = kept.setdefault((t.text, t.required), t)
        if first is not t:
            merged.setdefault(first.id, []).append(t.id)
    unique = list(kept.values())
    tool_groups = sources.components([list(t.required) for t in unique])
    out = [Task(id=t.id, text=t.text, required=t.required, group=t.group,
                meta={**t.meta, **({"merged": merged[t.id]} if t.id in merged else {}), "tool_group": f"tool:{tg}"})
           for t, tg in zip(unique, tool_groups)]
    return out


def convert_apibank(source: str | Path, text: str = "user_turns") -> Domain:
    """Convert the API-Bank folder (``api-bank/lv1-lv2-samples``, ``api-bank/test-data``) into a :class:`Domain`.

    Parameters
    ----------
    source : path
        The folder (``data/sources/apibank``, or a clone of AlibabaResearch/DAMO-ConvAI at 5d5a2d40).
    text : {"user_turns", "first_turn"}
        A level 1/2 task's text: every user turn of the dialogue (joined by newlines), or the first alone.

    Raises
    ------
    SourceError
        A file or folder is missing, or any row is malformed (every problem listed, with its file and
        line or entry): a dialogue line that is not a User/AI/API object, a dialogue without a user turn or
        without an API row (besides :data:`NO_API_ROWS`), an API definition without a name, description or
        well-formed ``input_parameters``, a level-3 entry without ``requirement`` or calls, a gold API with
        no definition in its pool.
    """
    if text not in TEXT_MODES:
        raise ValueError(f"text must be one of {TEXT_MODES}, got {text!r}")
    root = Path(source)
    missing = [p for p in (SAMPLES, *(SAMPLES / f for f in FOLDERS), LEVEL3)
               if not (root / p).exists()]
    if not (root / API_DESCRIPTIONS).is_file() and not (root / f"{API_DESCRIPTIONS}.gz").exists():
        missing.append(Path(f"{API_DESCRIPTIONS}(.gz)"))
    if missing:
        raise SourceError(f"{root}: missing {', '.join(p.as_posix() for p in missing)}; {HOW_TO_GET}")
    problems: list[str] = []
    pool12 = _read_level1_definitions(root, problems)
    pool3, level3 = _read_level3(root, problems)
    dialogues = _dialogues(root, pool12, problems)
    for i, _, gold in level3:
        problems += [f"{root / LEVEL3}: entry #{i}: gold API {g!r} is returned by no ToolSearcher call"
                     for g in gold if g not in pool3]
    sources.raise_problems(root, problems, "the API-Bank files", SourceError)

    taken: set[str] = set()
    tools: list[Tool] = []
    names12 = {}
    for api, d in pool12.items():
        names12[api] = _unique(tool_name(api), taken, None)
        tools.append(_tool(names12[api], d))
    names3 = {}
    for api, d in pool3.items():
        if api in pool12 and pool12[api] == d:
            names3[api] = names12[api]
            continue
        names3[api] = _unique(tool_name(api), taken, "lv3")
        tools.append(_tool(names3[api], d))

    tasks: list[Task] = []
    for folder, level, path, users, gold in dialogues:
        m = _STEM.match(path.stem)
        tasks.append(Task(
            id=f"{folder}/{path.stem}",
            text="\n".join(users) if text == "user_turns" else users[0],
            required=tuple(names12[g] for g in gold),
            group=f"api:{m.group(1) if m else path.stem}",
            meta={"level": level, "file": (SAMPLES / folder / path.name).as_posix(), "first_turn": users[0]},
        ))
    components = sources.components([[names3[g] for g in gold] for *_, gold in level3])
    for (i, requirement, gold), comp in zip(level3, components):
        tasks.append(Task(
            id=f"level-3/{i}", text=requirement, required=tuple(names3[g] for g in gold),
            group=f"level-3:{comp}", meta={"level": 3, "file": LEVEL3.as_posix(), "row": i},
        ))
    out = _merged(tasks)
    return Domain(
        name="apibank",
        source=("API-Bank test dialogues (AlibabaResearch/DAMO-ConvAI api-bank/ at 5d5a2d40: "
                "lv1-lv2-samples/, test-data/level-1-api.json, test-data/level-3.json)"),
        tools=tools,
        tasks=out,
        acquirable_kinds=("read",),
    )
