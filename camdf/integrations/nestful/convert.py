"""Convert NESTFUL's v1 nested API-call sequences (a folder, given as a setting) into the task format.

The folder holds files of the public repository TathagataChakraborti/NESTFUL (Apache-2.0) at their paths
in it: ``data_v1/executable/executable-{spec,data}.json`` (RapidAPI APIs),
``data_v1/non-executable/non-executable-glaive-{spec,data}.json`` (Glaive function-calling functions) and
``data_v1/non-executable/non-executable-sgd-{spec,data}.json`` (Schema-Guided Dialogue service intents),
committed unchanged under ``data/sources/nestful/``. The converter reads these six files (each may also be
given as ``<file>.gz``) and nothing else; nothing is downloaded. The repository's v2 set
(``data_v2/nestful_data.jsonl``) and its ComplexFuncBench copy are not among them (see SOURCE.md).

- **Catalog**: the union of the three ``*-spec.json`` files, in the order executable, glaive, sgd and each
  file's own order: one tool per distinct source ``name`` (a name defined twice keeps its first definition;
  the clashes are counted and logged; 0 in the public files). Its name is :func:`tool_name`: the source
  name lower-cased to ``[a-z0-9_]`` (``RentalCars.GetCarsAvailable`` -> ``rentalcars_getcarsavailable``),
  cut to 64 characters, a clash between two source names getting ``_2``, ``_3`` in catalog order. Its
  description is the source's, prefixed by its API family and collection (:func:`description`:
  ``sky-scrapper (RapidAPI): ...`` from the RapidAPI host, ``RentalCars (SGD): ...`` from the SGD service,
  ``Glaive: ...``). Its JSON schema is built from ``query_parameters`` (:func:`parameter_schema`; a
  parameter is required only when it says ``"required": true``). kind ``read`` (the spec marks no tool as a
  write: the RapidAPI ones are all GET), no cost (the cost regime prices the schema).
- **Tasks**: one per query row of the three ``*-data.json`` files, id ``<collection>-<row>`` (row: the
  0-based position in its file), text = ``input``, ``required`` = the tools its ``output`` sequence calls, in
  call order, each once (the final ``var_result`` step, which calls no tool, is left out). No
  ``candidates``: the whole catalog is ranked. A query whose text and gold set repeat an earlier one's is
  kept once (the repeats counted and logged; 0 in the public files). ``group`` is the query's tool group:
  queries whose gold tools are shared, transitively (a connected component of the query x tool graph,
  :func:`sources.components`), are one group ``tool:<smallest tool name>``, so a group fold never puts a
  gold tool of a test query among a training query's. ``meta`` keeps ``collection``, ``row``, ``calls`` (the
  called tools in step order, repeats included), ``tool_group`` (= ``group``) and ``api_group`` (the same
  over API families: RapidAPI host, SGD service; a Glaive function is its own family).

Malformed input is refused as a whole, every problem listed as ``<file>: query #<row>: ...`` or
``<file>: tool #<i>: ...`` (:class:`SourceError`), before anything is written.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from camdf.data.model import Domain, Task, Tool
from camdf.integrations import sources

log = logging.getLogger(__name__)

#: (collection, path of its files without ``-spec.json`` / ``-data.json``, label in descriptions), in catalog order.
COLLECTIONS = (
    ("executable", Path("data_v1", "executable", "executable"), "RapidAPI"),
    ("glaive", Path("data_v1", "non-executable", "non-executable-glaive"), "Glaive"),
    ("sgd", Path("data_v1", "non-executable", "non-executable-sgd"), "SGD"),
)
#: The closing step of every sequence: it assembles the answer and calls no tool.
RESULT_STEP = "var_result"
RAPIDAPI_HOST = ".p.rapidapi.com"
HOW_TO_GET = ("the files are committed under data/sources/nestful (or git clone the public repository "
              "TathagataChakraborti/NESTFUL and give its folder as domain.source)")
#: The source's parameter types -> JSON schema types (anything else: a string with the type in its description).
TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean",
         "array": "array", "object": "object"}


class SourceError(sources.SourceError):
    """The NESTFUL folder is missing or malformed: every problem, each naming its file and row."""


def tool_name(name: str, taken: set[str] | None = None) -> str:
    """``name`` in ``[a-z0-9_]``, at most 64 characters, ``_2``, ``_3``... when ``taken`` has it (then added to it)."""
    return sources.unique_name(sources.slug(name)[:sources.MAX_NAME], set() if taken is None else taken)


def family(collection: str, entry: dict) -> str:
    """The tool's API family: its RapidAPI host (``sky-scrapper``), its SGD service (``RentalCars``) or itself."""
    if collection == "executable" and isinstance(entry.get("host"), str) and entry["host"].strip():
        return entry["host"].strip().removesuffix(RAPIDAPI_HOST)
    if collection == "sgd" and "." in entry["name"]:
        return entry["name"].split(".", 1)[0]
    return entry["name"]


def description(collection: str, label: str, entry: dict) -> str:
    """The source's description prefixed by the API family and collection (``sky-scrapper (RapidAPI): ...``)."""
    desc = str(entry.get("description") or "").strip()
    prefix = f"{label}:" if collection == "glaive" else f"{family(collection, entry)} ({label}):"
    return f"{prefix} {desc}".strip()


def parameter_schema(params: dict[str, dict]) -> dict[str, Any]:
    """A JSON schema (object) from a spec's ``query_parameters``.

    Each property keeps the source's ``type`` (SGD gives none: ``string``), ``description``, ``default`` (or
    ``default_value``), ``enum`` (or a non-empty ``allowed_values``), ``items``, ``properties``, ``minimum``,
    ``maximum`` and a string's ``format``; a parameter is required when it says ``"required": true``.
    """
    props: dict[str, Any] = {}
    required: list[str] = []
    for pname, p in params.items():
        kind = p.get("type")
        prop: dict[str, Any] = {"type": TYPES.get(str(kind).lower(), "string") if kind is not None else "string"}
        desc = str(p.get("description") or "").strip()
        if kind is not None and str(kind).lower() not in TYPES:  # e.g. "Date (yyyy-mm-dd)": worth telling the agent
            desc = f"{desc} ({kind})".strip()
        if desc:
            prop["description"] = desc
        default = p["default"] if "default" in p else p.get("default_value")
        if default not in (None, ""):
            prop["default"] = default
        enum = p.get("enum") or p.get("allowed_values")
        if isinstance(enum, list) and enum:
            prop["enum"] = enum
        for k in ("items", "properties"):
            if isinstance(p.get(k), dict):
                prop[k] = p[k]
        for k in ("minimum", "maximum"):
            if isinstance(p.get(k), (int, float)) and not isinstance(p.get(k), bool):
                prop[k] = p[k]
        if prop["type"] == "string" and isinstance(p.get("format"), str):
            prop["format"] = p["format"]
        props[pname] = prop
        if p.get("required") is True:
            required.append(pname)
    return {"type": "object", "properties": props, "required": required}


def _read_list(path: Path, expected: str, what: str, problems: list[str]) -> list[tuple[int, dict]]:
    """``(position, row)`` of every object of the JSON list in ``path``; other rows and files are problems."""
    data = sources.read_json(path, expected, problems)
    if data is None:
        return []
    if not isinstance(data, list):
        problems.append(f"{path}: expected {expected}, got {type(data).__name__}")
        return []
    rows = []
    for i, row in enumerate(data):
        if isinstance(row, dict):
            rows.append((i, row))
        else:
            problems.append(f"{path}: {what} #{i} is {type(row).__name__}, expected an object")
    return rows


def _spec_problems(entry: dict) -> list[str]:
    out = []
    if not isinstance(entry.get("name"), str) or not entry["name"].strip():
        out.append("`name` missing or not a non-empty string")
    if not isinstance(entry.get("description", ""), (str, type(None))):
        out.append("`description` is not a string")
    params = entry.get("query_parameters", {})
    if not isinstance(params, dict):
        return [*out, "`query_parameters` is not an object"]
    for pname, p in params.items():
        if not pname or not isinstance(p, dict):
            out.append(f"parameter {pname!r} is not a named object")
        elif not isinstance(p.get("type", ""), str) or not isinstance(p.get("required", False), bool):
            out.append(f"parameter {pname!r}: `type` must be a string and `required` a boolean")
    return out


def _calls(row: dict) -> tuple[list[str], list[str]]:
    """The tool names the row's ``output`` steps call, in order (``var_result`` left out), and the problems."""
    if not isinstance(row.get("input"), str) or not row["input"].strip():
        return [], ["`input` (the query) missing or empty"]
    steps = row.get("output")
    if not isinstance(steps, list) or not steps:
        return [], ["`output` (the call sequence) missing or empty"]
    calls, problems = [], []
    for j, step in enumerate(steps):
        name = step.get("name") if isinstance(step, dict) else None
        if not isinstance(name, str) or not name.strip():
            problems.append(f"output step #{j} has no `name`")
        elif name != RESULT_STEP:
            calls.append(name)
    if not calls and not problems:
        problems.append("`output` calls no tool (no gold set)")
    return calls, problems


def convert_nestful(source: str | Path) -> Domain:
    """Convert the NESTFUL v1 files under ``source`` into a :class:`Domain`.

    Parameters
    ----------
    source : path
        A folder holding the six files at their repository paths (``data/sources/nestful``, or a clone).

    Raises
    ------
    SourceError
        The folder or a file is missing, or any row is malformed (every problem listed, each with its file
        and row): not JSON, not a list of objects, a tool without a name or with malformed parameters, a
        query without text, without a call sequence or calling no tool, a called tool in no spec.
    """
    root = Path(source)
    if not root.is_dir():
        raise SourceError(f"{root}: no such folder (the NESTFUL files); {HOW_TO_GET}")
    problems: list[str] = []
    entries: dict[str, tuple[str, str, dict]] = {}  # source name -> (collection, label, first definition)
    clashes = 0
    queries = []
    for collection, stem, label in COLLECTIONS:
        spec_path = sources.source_file(root, f"{stem}-spec.json")
        for i, entry in _read_list(spec_path, "a JSON list of tool definitions", "tool", problems):
            mine = _spec_problems(entry)
            if mine:
                problems += [f"{spec_path}: tool #{i}: {m}" for m in mine]
            elif entry["name"] in entries:
                clashes += 1
            else:
                entries[entry["name"]] = (collection, label, entry)
        data_path = sources.source_file(root, f"{stem}-data.json")
        for i, row in _read_list(data_path, "a JSON list of queries", "query", problems):
            calls, mine = _calls(row)
            problems += [f"{data_path}: query #{i}: {m}" for m in mine]
            if not mine:
                queries.append((collection, i, row["input"].strip(), calls, f"{data_path}: query #{i}"))
    for *_, calls, where in queries:
        problems += [f"{where}: called tool {c!r} is in no *-spec.json" for c in dict.fromkeys(calls)
                     if c not in entries]
    sources.raise_problems(root, problems, "the NESTFUL files", SourceError)
    if clashes:
        log.warning("%s: %d tool definition(s) repeat an earlier name; the first definition is kept", root, clashes)
    names: dict[str, str] = {}
    taken: set[str] = set()
    tools = []
    for source_name, (collection, label, entry) in entries.items():
        names[source_name] = tool_name(source_name, taken)
        tools.append(Tool(name=names[source_name], description=description(collection, label, entry),
                          parameters=parameter_schema(entry.get("query_parameters") or {}), kind="read"))
    seen: set[tuple[str, frozenset[str]]] = set()
    kept = []
    for collection, i, text, calls, _ in queries:
        gold = tuple(dict.fromkeys(names[c] for c in calls))
        if (text, frozenset(gold)) in seen:  # the same query and gold set (in any call order)
            continue
        seen.add((text, frozenset(gold)))
        kept.append((collection, i, text, calls, gold))
    if len(kept) < len(queries):
        log.warning("%s: %d query(ies) repeat an earlier one's text and gold set; kept once",
                    root, len(queries) - len(kept))
    fam = {names[n]: family(c, e) for n, (c, _, e) in entries.items()}
    tool_groups = sources.components([list(gold) for *_, gold in kept])
    api_groups = sources.components([[fam[g] for g in gold] for *_, gold in kept])
    tasks = [
        Task(id=f"{collection}-{i}", text=text, required=gold, group=f"tool:{tg}",
             meta={"collection": collection, "row": i, "calls": [names[c] for c in calls],
                   "tool_group": f"tool:{tg}", "api_group": f"api:{ag}"})
        for (collection, i, text, calls, gold), tg, ag in zip(kept, tool_groups, api_groups)
    ]
    return Domain(
        name="nestful",
        source="NESTFUL data_v1 (executable, glaive, sgd; public repository TathagataChakraborti/NESTFUL, Apache-2.0)",
        tools=tools,
        tasks=tasks,
        acquirable_kinds=("read",),
    )
