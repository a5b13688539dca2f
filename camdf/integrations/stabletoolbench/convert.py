"""Convert StableToolBench's solvable queries (a public folder, given as a setting) into the task format.

The folder is a checkout (or copy) of the public repository THUNLP-MT/StableToolBench; the
converter reads ``solvable_queries/test_instruction/*.json`` (one JSON list of queries per
test group: G1_instruction, G1_category, G1_tool, G2_instruction, G2_category,
G3_instruction) and nothing else. Nothing is downloaded.

- **Catalog**: the union of every query's ``api_list``: one tool per distinct
  ``(tool_name, api_name)``, named as ToolBench names its functions,
  ``<api>_for_<tool>`` with both parts lower-cased to ``[a-z0-9_]`` (:func:`tool_name`; a
  clash between two APIs gets ``_2``, ``_3`` in first-seen order). Its description is the
  API's own, prefixed by the tool and its category (``Vimeo (Media): Search for videos.``);
  its JSON schema is built from ``required_parameters`` and ``optional_parameters``
  (:func:`parameter_schema`); kind ``read``; no cost (the cost regime prices the schema).
  An API listed by several queries with different definitions (12 in the public files)
  takes its first definition in file order (files sorted by name, queries in file order).
- **Tasks**: one per query, id ``<group>-<query_id>``, text = ``query``, ``required`` =
  its ``relevant APIs``; no ``candidates`` (every task may be offered the whole catalog:
  the ranker ranks all of it and ``candidates.top_k`` cuts the list). ``meta`` keeps the
  query group (``query_group``), ``query_id``, the APIs the query was offered
  (``offered``) and two fold groups for ``folds.group_by``: ``tool_group`` (queries whose
  gold APIs share a tool, transitively: a connected component of the query x tool graph,
  so no gold tool of a test query is a gold tool of a training query) and
  ``category_group`` (the same over categories). ``group`` is the query's test group.

Malformed input is refused as a whole, every problem listed as ``<file>: query_id <id>:
what is wrong`` (:class:`SourceError`), before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from camdf.data.model import Domain, Task, Tool
from camdf.integrations import sources

QUERIES = Path("solvable_queries", "test_instruction")
GROUPS = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category", "G3_instruction")
HOW_TO_GET = ("git clone the public repository THUNLP-MT/StableToolBench and give its folder "
              "(domain.source, or make's STABLETOOLBENCH=<folder>)")
#: The source's parameter types -> JSON schema types (anything else: a string with the type in its description).
TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean",
         "enum": "string", "array": "array", "object": "object"}


class SourceError(sources.SourceError):
    """The StableToolBench folder is missing or malformed: every problem, each naming its file and query_id."""


def tool_name(tool: str, api: str) -> str:
    """``<api>_for_<tool>`` in ``[a-z0-9_]``: ToolBench's own function names (``searchvideos_for_vimeo``)."""
    return f"{sources.slug(api)}_for_{sources.slug(tool)}"


def parameter_schema(required: list[dict], optional: list[dict]) -> dict[str, Any]:
    """A JSON schema (object) from the source's parameter lists; a name listed twice keeps its first entry."""
    props: dict[str, Any] = {}
    names: list[str] = []
    for p in [*required, *optional]:
        if p["name"] in props:
            continue
        kind = str(p.get("type") or "string")
        prop: dict[str, Any] = {"type": TYPES.get(kind.lower(), "string")}
        desc = str(p.get("description") or "")
        if kind.lower() not in TYPES:  # e.g. "DATE (YYYY-MM-DD)": the format is worth telling the agent
            desc = f"{desc} ({kind})".strip()
        if desc:
            prop["description"] = desc
        default = p.get("default")
        if default not in (None, ""):
            prop["default"] = default
        props[p["name"]] = prop
        names.append(p["name"])
    req = list(dict.fromkeys(p["name"] for p in required))
    return {"type": "object", "properties": props, "required": req}


def _api_problems(api: Any) -> list[str]:
    if not isinstance(api, dict):
        return [f"an api_list entry is {type(api).__name__}, expected an object"]
    out = [f"api_list entry: `{k}` missing or not a non-empty string"
           for k in ("tool_name", "api_name", "category_name")
           if not isinstance(api.get(k), str) or not api.get(k).strip()]
    if not isinstance(api.get("api_description", ""), (str, type(None))):
        out.append("api_list entry: `api_description` is not a string")
    for k in ("required_parameters", "optional_parameters"):
        params = api.get(k, [])
        if not isinstance(params, list) or not all(
                isinstance(p, dict) and isinstance(p.get("name"), str) and p["name"] for p in params):
            out.append(f"api_list entry {api.get('tool_name')!r}/{api.get('api_name')!r}: `{k}` must be a list "
                       f"of objects with a non-empty `name`")
    return out


def _gold(row: dict) -> tuple[list[tuple[str, str]], list[str]]:
    gold = row.get("relevant APIs")
    if not isinstance(gold, list) or not gold:
        return [], ["`relevant APIs` missing or empty (expected a list of [tool_name, api_name] pairs)"]
    pairs, problems = [], []
    for g in gold:
        if isinstance(g, list) and len(g) == 2 and all(isinstance(x, str) and x for x in g):
            pairs.append((g[0], g[1]))
        else:
            problems.append(f"`relevant APIs` entry {g!r} is not a [tool_name, api_name] pair of strings")
    return pairs, problems


def _read_rows(folder: Path) -> tuple[list[tuple[str, dict]], list[str]]:
    """Every query row as (file stem, row), and the problems of files that are not lists of objects."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise SourceError(f"{folder}: no *.json query files; {HOW_TO_GET}")
    rows, problems = [], []
    for path in files:
        data = sources.read_json(path, "a JSON list of queries", problems)
        if data is None:
            continue
        if not isinstance(data, list):
            problems.append(f"{path}: expected a JSON list of queries, got {type(data).__name__}")
            continue
        for i, row in enumerate(data):
            if not isinstance(row, dict):
                problems.append(f"{path}: query #{i} is {type(row).__name__}, expected an object")
            else:
                rows.append((path.stem, row))
    return rows, problems


def convert_solvable_queries(source: str | Path) -> Domain:
    """Convert ``<source>/solvable_queries/test_instruction/*.json`` into a :class:`Domain`.

    Parameters
    ----------
    source : path
        The StableToolBench folder (a clone of the public repository, or a copy of the six
        query files at the same relative path).

    Raises
    ------
    SourceError
        The folder or its query files are missing, or any row is malformed (every problem
        listed, each with its file and ``query_id``): a row that is not an object, a missing
        or duplicate ``query_id``, an empty ``query``, an ``api_list`` entry without its
        names or with malformed parameters, a gold API that is not a [tool, api] pair or is
        missing from every query's ``api_list``.
    """
    root = Path(source)
    folder = root / QUERIES
    if not folder.is_dir():
        raise SourceError(f"{root}: no {QUERIES}/ folder (the StableToolBench queries); {HOW_TO_GET}")
    rows, problems = _read_rows(folder)
    apis: dict[tuple[str, str], dict] = {}
    seen_ids: dict[Any, str] = {}
    parsed = []
    for stem, row in rows:
        qid = row.get("query_id")
        where = f"{folder / stem}.json: query_id {qid!r}"
        mine = []
        if isinstance(qid, bool) or not isinstance(qid, (int, str)) or qid == "":
            mine.append("`query_id` missing or not an integer or string")
        elif qid in seen_ids:
            mine.append(f"duplicate query_id (also in {seen_ids[qid]})")
        else:
            seen_ids[qid] = f"{stem}.json"
        if not isinstance(row.get("query"), str) or not row["query"].strip():
            mine.append("`query` missing or empty")
        offered = row.get("api_list")
        if not isinstance(offered, list) or not offered:
            mine.append("`api_list` missing or empty")
            offered = []
        for api in offered:
            mine += _api_problems(api)
        gold, gold_problems = _gold(row)
        mine += gold_problems
        if mine:
            problems += [f"{where}: {m}" for m in mine]
            continue
        for api in offered:
            apis.setdefault((api["tool_name"], api["api_name"]), api)
        parsed.append((stem, row, where, gold))
    for _, _, where, gold in parsed:
        problems += [f"{where}: gold API {list(g)} is in no query's api_list" for g in gold if g not in apis]
    sources.raise_problems(root, problems, "the StableToolBench queries", SourceError)
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    tools = []
    for (tool, api), entry in apis.items():
        base = name = tool_name(tool, api)
        k = 2
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        names[(tool, api)] = name
        desc = str(entry.get("api_description") or "").strip()
        tools.append(Tool(
            name=name,
            description=f"{tool} ({entry['category_name']}): {desc}".strip(),
            parameters=parameter_schema(entry.get("required_parameters") or [], entry.get("optional_parameters") or []),
            kind="read",
        ))
    category = {key: entry["category_name"] for key, entry in apis.items()}
    tool_groups = sources.components([[g[0] for g in gold] for *_, gold in parsed])
    category_groups = sources.components([[category[g] for g in gold] for *_, gold in parsed])
    tasks = []
    for (stem, row, _, gold), tg, cg in zip(parsed, tool_groups, category_groups):
        tasks.append(Task(
            id=f"{stem}-{row['query_id']}",
            text=row["query"].strip(),
            required=tuple(dict.fromkeys(names[g] for g in gold)),
            group=stem,
            meta={"query_group": stem, "query_id": row["query_id"],
                  "offered": [names[(a["tool_name"], a["api_name"])] for a in row["api_list"]],
                  "tool_group": f"tool:{tg}", "category_group": f"category:{cg}"},
        ))
    return Domain(
        name="stabletoolbench",
        source=f"StableToolBench solvable queries ({QUERIES.as_posix()}/, public repository THUNLP-MT/StableToolBench)",
        tools=tools,
        tasks=tasks,
        acquirable_kinds=("read",),
    )
