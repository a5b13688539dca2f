"""Convert ToolAlpaca's evaluation sets (a public folder, committed unchanged) into the task format.

The folder holds files of the public repository tangqiaoyu/ToolAlpaca at their paths:
``data/eval_simulated.json`` (10 APIs simulated by an LLM) and ``data/eval_real.json`` (11 real APIs),
each a JSON list of APIs. The converter reads these two files and nothing else; nothing is downloaded.
The training file (``data/train_data.json``, 400+ APIs) is not used: it is larger than the budget of a
committed source and was not obtainable as a snapshot (see ``SOURCE.md``).

- **Catalog**: every API's functions, i.e. the keys of its ``Function_Projection`` (function -> HTTP
  path and method; these are exactly the functions ToolAlpaca's agent is given), in file order
  (``eval_simulated`` first, APIs and functions in file order). The ``components`` entry of
  ``Function_Description`` (a note on output schemas) is not a function. Name ``<api>_<function>``
  (:func:`tool_name`: camelCase split into words, accents dropped, :func:`sources.slug`; a name over
  64 characters is cut and given a hash suffix, a clash gets ``_2``, ``_3`` in first-seen order).
  Description ``<API Name> (<Category>): <API Description>. <function summary>`` where the summary is
  the function's ``Function_Description`` text before its ``Parameters:`` line. JSON schema parsed
  from that ``Parameters:`` line (:func:`parameter_schema`: ToolAlpaca writes each argument as
  ``"[Required. ]<type>. <description>"``). Kind ``read`` for a ``get`` function, ``write`` for
  ``post``/``put``/``patch``/``delete`` (the domain makes both kinds acquirable: all 94 are ranked).
- **Tasks**: one per instruction: ``Instructions[i]`` is the text and ``Golden_Answers[i]`` (a list of
  ``{"Action", "Action_Input"}`` steps) its gold solution; ``required`` = the functions its steps call
  (deduplicated, in order). Steps calling the agent's own helpers (``getDetails``: ask the user;
  ``retrievalDataFromFile``) are not API functions: they are left out of ``required`` and kept in
  ``meta.agent_tools``. A step marked ``[Optional]<function>`` is not required: it goes to
  ``meta.optional`` (1 query). Id ``<file stem>-<api slug>-<i>``; ``group`` = the API's slug (the
  queries of one API share their tools, so they are never split across folds); ``meta`` keeps the
  file, the API name, its category, the instruction index ``i`` and ``category_group`` (APIs linked
  by sharing a category, :func:`sources.components`) for ``folds.group_by``.
- **Left out**: the 6 AviationAPI queries (eval_real.json, instructions 5-10) whose gold calls a
  function listed in :data:`UNLISTED`: its OpenAPI ``Documentation`` nests five paths inside
  ``/preferred-routes``, so they are in no ``Function_Projection`` (ToolAlpaca's agent never had them).
  Any other gold function missing from its API is an error. A query repeating an earlier query's text
  with the same gold set would be kept once (none in the public files).

Malformed input is refused as a whole, every problem listed as ``<file>: API <name>: ...`` (with the
instruction index where there is one), by :class:`SourceError`, before anything is written.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from camdf.data.model import Domain, Task, Tool
from camdf.integrations import sources

FILES = (Path("data", "eval_simulated.json"), Path("data", "eval_real.json"))
HOW_TO_GET = ("the files are committed under data/sources/toolalpaca; or git clone the public repository "
              "tangqiaoyu/ToolAlpaca and give its folder (domain.source)")
#: The agent's own helper tools (not API functions): never a member of G_x.
AGENT_TOOLS = ("getDetails", "retrievalDataFromFile")
#: Marks a gold step the instruction does not need.
OPTIONAL = "[Optional]"
#: Gold functions known to be in no Function_Projection (AviationAPI's Documentation nests these five
#: paths inside /preferred-routes): their queries are left out, any other unknown gold is an error.
UNLISTED = frozenset({("AviationAPI", f) for f in ("preferred-routes_search_get", "vatsim_pilots_get",
                                                     "vatsim_controllers_get", "weather_metar_get",
                                                     "weather_taf_get")})
#: HTTP methods -> tool kind.
KINDS = {"get": "read", "post": "write", "put": "write", "patch": "write", "delete": "write"}
#: ToolAlpaca's argument types -> JSON schema types (anything else: a string with the type in its description).
TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class SourceError(sources.SourceError):
    """The ToolAlpaca folder is missing or malformed: every problem, each naming its file, API and instruction."""


def _words(text: str) -> str:
    """``text`` without accents and with camelCase split (``checkIPReputation`` -> ``check_IP_Reputation``)."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return _CAMEL.sub("_", plain)


def tool_name(api: str, function: str) -> str:
    """``<api>_<function>`` in ``[a-z0-9_]``, at most 64 characters (a longer name: cut, plus a hash suffix)."""
    return sources.short_name(f"{sources.slug(_words(api))}_{sources.slug(_words(function))}", f"{api}\x00{function}")


def _split_type(spec: str) -> tuple[str, str]:
    """``"Array[Object{a: string. x.}]. rest"`` -> (``"Array[Object{a: string. x.}]"``, ``"rest"``)."""
    depth = 0
    for i, c in enumerate(spec):
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "." and depth <= 0:
            return spec[:i].strip(), spec[i + 1:].strip()
    return spec.strip(), ""


def _property(spec: str) -> tuple[dict[str, Any], bool]:
    """One argument's JSON schema and whether it is required, from ``"[Required. ]<type>. <description>"``."""
    required = spec.startswith("Required.")
    kind, desc = _split_type(spec[len("Required."):] if required else spec)
    low = kind.lower()
    prop: dict[str, Any]
    if low.startswith("array"):
        prop = {"type": "array"}
        inner = kind[len("array["):-1].strip().lower() if low.startswith("array[") and kind.endswith("]") else ""
        if inner in TYPES:
            prop["items"] = {"type": TYPES[inner]}
        elif inner:
            desc = f"{desc} ({kind})".strip()
    elif low.startswith("object"):
        prop = {"type": "object"}
        if low != "object":
            desc = f"{desc} ({kind})".strip()
    elif low in TYPES:
        prop = {"type": TYPES[low]}
    else:
        prop = {"type": "string"}
        if kind:
            desc = f"{desc} ({kind})".strip()
    if desc:
        prop["description"] = desc
    return prop, required


def parameter_schema(params: dict[str, str]) -> dict[str, Any]:
    """A JSON schema (object) from a function's ``Parameters:`` mapping (argument -> ToolAlpaca's spec text)."""
    props: dict[str, Any] = {}
    req: list[str] = []
    for name, spec in params.items():
        props[name], required = _property(spec.strip())
        if required:
            req.append(name)
    return {"type": "object", "properties": props, "required": req}


def _function(text: Any) -> tuple[str, dict[str, str] | None, str | None]:
    """(summary, parameters, problem) of one ``Function_Description`` entry."""
    if not isinstance(text, str):
        return "", None, f"is {type(text).__name__}, expected a string"
    lines = text.split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith("Parameters:")]
    if not at:
        return "", None, "has no `Parameters:` line"
    try:
        params = json.loads(lines[at[0]][len("Parameters:"):])
    except (json.JSONDecodeError, RecursionError):
        return "", None, "its `Parameters:` line is not JSON"
    if not isinstance(params, dict) or not all(isinstance(k, str) and k and isinstance(v, str)
                                               for k, v in params.items()):
        return "", None, "its `Parameters:` line is not an object of argument -> text"
    return " ".join(line.strip() for line in lines[:at[0]] if line.strip()), params, None


def _api_problems(api: dict) -> list[str]:
    out = [f"`{k}` missing or not a non-empty string" for k in ("Name", "Category", "Description")
           if not isinstance(api.get(k), str) or not api[k].strip()]
    proj, desc = api.get("Function_Projection"), api.get("Function_Description")
    if not isinstance(proj, dict) or not proj:
        out.append("`Function_Projection` missing or empty (expected function -> [path, method])")
    else:
        for fn, target in proj.items():
            if not (isinstance(target, list) and len(target) == 2 and all(isinstance(x, str) for x in target)
                    and target[1].lower() in KINDS):
                out.append(f"function {fn!r}: `Function_Projection` entry {target!r} is not [path, method] "
                           f"with a method in {sorted(KINDS)}")
    if not isinstance(desc, dict):
        out.append("`Function_Description` missing or not an object")
    elif isinstance(proj, dict):
        out += [f"function {fn!r}: no `Function_Description`" for fn in proj if fn not in desc]
    for k in ("Instructions", "Golden_Answers"):
        if not isinstance(api.get(k), list):
            out.append(f"`{k}` missing or not a list")
    if not out and len(api["Instructions"]) != len(api["Golden_Answers"]):
        out.append(f"{len(api['Instructions'])} `Instructions` but {len(api['Golden_Answers'])} `Golden_Answers`")
    return out


def _gold(answer: Any) -> tuple[list[str], list[str], list[str], list[str]]:
    """(required functions, optional functions, agent tools, problems) of one ``Golden_Answers`` entry."""
    if not isinstance(answer, list) or not answer:
        return [], [], [], ["gold answer missing or empty (expected a list of {Action, Action_Input} steps)"]
    required, optional, agent, problems = [], [], [], []
    for step in answer:
        action = step.get("Action") if isinstance(step, dict) else None
        if not isinstance(action, str) or not action.strip():
            problems.append(f"gold step {step!r} has no `Action`")
        elif action in AGENT_TOOLS:
            agent.append(action)
        elif action.startswith(OPTIONAL):
            optional.append(action[len(OPTIONAL):].strip())
        else:
            required.append(action.strip())
    if not problems and not required:
        problems.append("gold answer calls no API function (only agent tools or [Optional] steps)")
    return required, optional, agent, problems


def _read(root: Path) -> tuple[list[tuple[Path, int, dict]], list[str]]:
    """Every API as (file, position, object), and the problems of files that are not lists of objects."""
    apis, problems = [], []
    for rel in FILES:
        path = root / rel
        data = sources.read_json(path, "a JSON list of APIs", problems)
        if data is None:
            continue
        if not isinstance(data, list):
            problems.append(f"{path}: expected a JSON list of APIs, got {type(data).__name__}")
            continue
        for i, api in enumerate(data):
            if isinstance(api, dict):
                apis.append((path, i, api))
            else:
                problems.append(f"{path}: API #{i} is {type(api).__name__}, expected an object")
    return apis, problems


def _tasks(rows: list[tuple[Path, dict, int, str, list[str], list[str], list[str]]],
           names: dict[tuple[str, str], str]) -> list[Task]:
    """One task per checked instruction row (an instruction repeated with the same gold kept once), grouped by its
    API; ``names`` maps (API, function) to the tool's name."""
    slugs: dict[str, str] = {}
    category_groups = sources.components([[api["Category"].strip()] for _, api, *_ in rows])
    tasks: list[Task] = []
    kept: set[tuple[str, tuple[str, ...]]] = set()
    for (path, api, i, text, required, optional, agent), cg in zip(rows, category_groups):
        gold = tuple(dict.fromkeys(names[(api["Name"], f)] for f in required))
        if (text, gold) in kept:
            continue
        kept.add((text, gold))
        group = slugs.setdefault(api["Name"],
                                 sources.unique_name(sources.slug(_words(api["Name"])), set(slugs.values())))
        meta: dict[str, Any] = {"file": path.name, "api": api["Name"], "category": api["Category"].strip(),
                                "instruction": i, "category_group": f"category:{cg}"}
        extra = [n for n in dict.fromkeys(names[(api["Name"], f)] for f in optional) if n not in gold]
        if extra:
            meta["optional"] = extra
        if agent:
            meta["agent_tools"] = list(dict.fromkeys(agent))
        tasks.append(Task(id=f"{path.stem}-{group}-{i}", text=text, required=gold, group=group, meta=meta))
    return tasks


def convert_toolalpaca(source: str | Path) -> Domain:
    """Convert ``<source>/data/eval_simulated.json`` and ``<source>/data/eval_real.json`` into a :class:`Domain`.

    Parameters
    ----------
    source : path
        The ToolAlpaca folder (``data/sources/toolalpaca``, or a clone of the public repository).

    Raises
    ------
    SourceError
        The folder or a file is missing, or anything is malformed (every problem listed, each with its
        file, API and instruction index): an API that is not an object or lacks its name, category,
        description, functions or function descriptions; a function whose method is unknown or whose
        ``Parameters:`` line is not a JSON object; a duplicate API name; instructions and gold answers
        of different lengths; an empty instruction; a gold answer that is empty, has a step without
        ``Action`` or calls no API function; a gold function that is not one of its API's functions
        (except the known :data:`UNLISTED`).
    """
    root = Path(source)
    if not (root / "data").is_dir():
        raise SourceError(f"{root}: no data/ folder (the ToolAlpaca evaluation sets); {HOW_TO_GET}")
    apis, problems = _read(root)
    seen: dict[str, str] = {}
    tools: list[Tool] = []
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    rows: list[tuple[Path, dict, int, str, list[str], list[str], list[str]]] = []
    for path, pos, api in apis:
        where = f"{path}: API {api.get('Name', f'#{pos}')!r}"
        mine = _api_problems(api)
        if not mine and api["Name"] in seen:
            mine.append(f"duplicate API name (also in {seen[api['Name']]})")
        functions = {}
        for fn in (api.get("Function_Projection") or {}) if not mine else ():
            summary, params, problem = _function(api["Function_Description"][fn])
            if problem:
                mine.append(f"function {fn!r}: `Function_Description` {problem}")
            functions[fn] = (summary, params)
        if mine:
            problems += [f"{where}: {m}" for m in mine]
            continue
        seen[api["Name"]] = path.name
        name, category, about = api["Name"].strip(), api["Category"].strip(), api["Description"].strip()
        about = about if about.endswith((".", "!", "?")) else f"{about}."
        for fn, (summary, params) in functions.items():
            new = sources.unique_name(tool_name(name, fn), taken)
            names[(api["Name"], fn)] = new
            tools.append(Tool(name=new, description=f"{name} ({category}): {about} {summary}".strip(),
                              parameters=parameter_schema(params),
                              kind=KINDS[api["Function_Projection"][fn][1].lower()]))
        for i, (text, answer) in enumerate(zip(api["Instructions"], api["Golden_Answers"])):
            at = f"{where}: instruction {i}"
            required, optional, agent, mine = _gold(answer)
            if not isinstance(text, str) or not text.strip():
                mine.append("instruction missing or empty")
            unlisted = [f for f in required + optional if (api["Name"], f) in UNLISTED]
            unknown = [f for f in required + optional if (api["Name"], f) not in names and f not in unlisted]
            mine += [f"gold function {f!r} is not a function of {api['Name']!r}" for f in unknown]
            if mine:
                problems += [f"{at}: {m}" for m in mine]
            elif not unlisted:
                rows.append((path, api, i, text.strip(), required, optional, agent))
    sources.raise_problems(root, problems, "the ToolAlpaca files", SourceError)
    tasks = _tasks(rows, names)
    return Domain(
        name="toolalpaca",
        source="ToolAlpaca evaluation sets (data/eval_simulated.json, data/eval_real.json; public repository "
               "tangqiaoyu/ToolAlpaca)",
        tools=tools,
        tasks=tasks,
        acquirable_kinds=("read", "write"),
    )
