"""Convert MetaTool's ToolE dataset (files committed under ``data/sources/metatool``) into the task format.

The folder holds three files of the public repository HowieHwong/MetaTool (MIT), unchanged, at their paths
in the repository: ``dataset/plugin_des.json`` (the tools), ``dataset/data/all_clean_data.csv`` (the
single-tool queries; committed gzip-compressed as ``all_clean_data.csv.gz``, and a clone's plain ``.csv`` is
read when present) and ``dataset/data/multi_tool_query_golden.json`` (the multi-tool queries). Nothing is
downloaded; a clone of the repository is a valid folder too.

- **Catalog**: every entry of ``plugin_des.json`` (a JSON object ``{tool: description}``; 199 tools: 153
  OpenAI plugins and 46 tools MetaTool merged from plugins of one function, e.g. ``FinanceTool``), in file
  order, all of them (not only the gold ones). Name: the source's name lower-cased to ``[a-z0-9_]``
  (:func:`tool_names`: ``PDF&URLTool`` -> ``pdf_urltool``), at most 64 characters, a clash taking ``_2``,
  ``_3`` in file order (none in the public file). Description: ``<source name>: <description>`` (the tool
  name and description MetaTool's own prompts show the model). No ``parameters``: the source gives no
  arguments (the plugins' OpenAPI specs are not in it). Kind ``read``; no cost (the cost regime prices it).
- **Single-tool tasks**: one per distinct query text of ``all_clean_data.csv`` (columns ``Query``,
  ``Tool``; text stripped of surrounding blanks), id ``single-<n>`` with ``n`` the CSV record number of its
  first row (1 = the first row under the header), ``required`` = that row's ``Tool``. A text repeated with
  the same tool is kept once (56 of the 20,614 public rows); a text repeated with another tool gets that tool
  as an alternative sufficient set (12 texts, 14 rows), ``meta.also_rows`` listing the merged rows. That
  leaves 20,544 tasks, too many for the pipeline (every task is scored by several rankers), so
  ``single_per_tool`` (default 5) keeps, for each tool, the tasks (by ``required``) whose
  ``sha256(id)`` hex digests are smallest: a stable, documented subset (never random), 995 tasks with every
  one of the 199 tools the gold of five; ``single_per_tool=None`` keeps all 20,544. ``group`` =
  ``single:<tool>`` (ToolE generated a tool's single-tool queries from its description: one template).
- **Multi-tool tasks**: one per entry of ``multi_tool_query_golden.json`` (``query``, ``tool``: the gold
  tools), id ``multi-<n>`` with ``n`` its 1-based position, ``required`` = ``tool`` (deduplicated, in
  order), all kept (497 queries, each needing 2 of 15 tools; no repeated text in the public file: a repeat
  is kept once with the same gold set and made an alternative with another). ``group`` =
  ``multi:<a>+<b>`` (the gold tools sorted: the queries generated for one combination).
- No ``candidates``: the whole catalog is ranked for every task. ``meta``: ``query_set`` (``single`` or
  ``multi``), ``row`` (``n``), ``tool_group`` (``tool:<name>``: a connected component of the task x tool
  graph over the kept tasks' gold and alternative tools, for ``folds.group_by: meta.tool_group``, under
  which no gold tool of a test task is a gold tool of a training task) and ``also_rows`` when rows merged.
- Texts are kept as the source writes them (only surrounding blanks stripped): 113 single-tool and 130
  multi-tool queries are wrapped in double quotes there, and stay so.

Default output: 199 tools, 1,492 tasks (995 single-tool with |G_x| = 1, 497 multi-tool with |G_x| = 2).
Malformed input is refused as a whole, every problem listed as ``<file>:<line>: row <n>: what is wrong``
(CSV) or ``<file>: query #<n>: what is wrong`` (JSON) (:class:`SourceError`), before anything is written.
The same files give the same Domain, byte for byte.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path
from typing import Any

from camdf.data.model import Domain, Task, Tool
from camdf.integrations import sources

CATALOG = Path("dataset", "plugin_des.json")
SINGLE = Path("dataset", "data", "all_clean_data.csv")
MULTI = Path("dataset", "data", "multi_tool_query_golden.json")
HEADER = ["Query", "Tool"]
#: OpenAI's limit on a function name (the tests import it here).
MAX_NAME = sources.MAX_NAME
#: A query row: (record number or 1-based position, text, gold tools).
Row = tuple[int, str, tuple[str, ...]]
HOW_TO_GET = ("the files are committed under data/sources/metatool; or git clone the public repository "
              "HowieHwong/MetaTool and give its folder (domain.source)")


class SourceError(sources.SourceError):
    """The MetaTool folder is missing or malformed: every problem, each naming its file and row."""


def tool_names(keys: list[str]) -> dict[str, str]:
    """Each source name -> a unique ``[a-z0-9_]`` name of at most :data:`MAX_NAME` characters.

    A clash (after lower-casing and cutting) takes ``_2``, ``_3``, ... in order, the stem cut to make room.
    """
    taken: set[str] = set()
    return {key: sources.unique_name(sources.slug(key)[:MAX_NAME].rstrip("_"), taken, strip=True) for key in keys}


def _read_catalog(path: Path, problems: list[str]) -> dict[str, str]:
    data = sources.read_json(path, "a JSON object {tool: description}", problems)
    if data is None:
        return {}
    if not isinstance(data, dict) or not data:
        problems.append(f"{path}: expected a non-empty JSON object {{tool: description}}, got "
                        f"{'an empty object' if isinstance(data, dict) else type(data).__name__}")
        return {}
    out = {}
    for key, desc in data.items():
        if not key.strip():
            problems.append(f"{path}: a tool with an empty name")
        elif not isinstance(desc, str):
            problems.append(f"{path}: tool {key!r}: description is {type(desc).__name__}, expected a string")
        else:
            out[key] = desc
    return out


def _single_path(root: Path) -> Path:
    """The single-tool CSV, plain or ``.gz``; when neither exists, the ``.gz`` (the committed form) for the problem."""
    path = sources.source_file(root, SINGLE)
    return path if path.exists() else path.with_name(SINGLE.name + ".gz")


def _read_single(path: Path, catalog: dict[str, str] | None, problems: list[str]) -> list[Row]:
    """``(record number, text, (tool,))`` for every well-formed row of the CSV; the rest are problems."""
    text = sources.read_text(path, "the single-tool queries (CSV: Query,Tool)", problems)
    if text is None:
        return []
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[Row] = []
    try:
        header = next(reader, None)
        if header != HEADER:
            problems.append(f"{path}:1: header is {header!r}, expected {HEADER!r}")
            return []
        for n, record in enumerate(reader, 1):
            where = f"{path}:{reader.line_num}: row {n}"
            if len(record) != 2:
                problems.append(f"{where}: {len(record)} field(s), expected 2 (Query, Tool)")
                continue
            query, tool = record[0].strip(), record[1]
            if not query:
                problems.append(f"{where}: `Query` is empty")
            if not tool.strip():
                problems.append(f"{where}: `Tool` is empty (no gold tool)")
            elif catalog is not None and tool not in catalog:
                problems.append(f"{where}: gold tool {tool!r} is not in {CATALOG.as_posix()}")
            elif query:
                rows.append((n, query, (tool,)))
    except csv.Error as err:
        problems.append(f"{path}:{reader.line_num}: not CSV ({err})")
        return []
    return rows


def _read_multi(path: Path, catalog: dict[str, str] | None, problems: list[str]) -> list[Row]:
    """``(position, text, gold tools)`` for every well-formed query of the JSON list; the rest are problems."""
    data = sources.read_json(path, "a JSON list of {query, tool} objects", problems)
    if data is None:
        return []
    if not isinstance(data, list):
        problems.append(f"{path}: expected a JSON list of queries, got {type(data).__name__}")
        return []
    rows = []
    for n, row in enumerate(data, 1):
        where = f"{path}: query #{n}"
        if not isinstance(row, dict):
            problems.append(f"{where}: is {type(row).__name__}, expected an object")
            continue
        mine = []
        query = row.get("query")
        if not isinstance(query, str) or not query.strip():
            mine.append("`query` missing or empty")
        gold = row.get("tool")
        if not isinstance(gold, list) or not gold:
            mine.append("`tool` missing or empty (expected a non-empty list of tool names)")
        else:
            for g in gold:
                if not isinstance(g, str) or not g:
                    mine.append(f"`tool` entry {g!r} is not a tool name")
                elif catalog is not None and g not in catalog:
                    mine.append(f"gold tool {g!r} is not in {CATALOG.as_posix()}")
        if mine:
            problems += [f"{where}: {m}" for m in mine]
        else:
            rows.append((n, query.strip(), tuple(dict.fromkeys(gold))))
    return rows


def _merge(rows: list[Row]) -> list[dict[str, Any]]:
    """One entry per distinct text: the first row's gold is required, another row's other gold an alternative."""
    by_text: dict[str, dict[str, Any]] = {}
    for n, text, gold in rows:
        entry = by_text.get(text)
        if entry is None:
            by_text[text] = {"row": n, "text": text, "gold": [gold], "also": []}
            continue
        entry["also"].append(n)
        if not any(set(gold) == set(g) for g in entry["gold"]):
            entry["gold"].append(gold)
    return list(by_text.values())


def _subset(entries: list[dict[str, Any]], per_tool: int | None) -> list[dict[str, Any]]:
    """The ``per_tool`` entries of each required tool with the smallest ``sha256(id)``, in source order."""
    if per_tool is None:
        return entries
    by_tool: dict[str, list[tuple[str, int]]] = {}
    for i, e in enumerate(entries):
        digest = hashlib.sha256(f"single-{e['row']}".encode()).hexdigest()
        by_tool.setdefault(e["gold"][0][0], []).append((digest, i))
    keep = {i for ranked in by_tool.values() for _, i in sorted(ranked)[:per_tool]}
    return [e for i, e in enumerate(entries) if i in keep]


def convert_metatool(source: str | Path, single_per_tool: int | None = 5) -> Domain:
    """Convert a MetaTool folder (``dataset/plugin_des.json`` and the two query files) into a :class:`Domain`.

    Parameters
    ----------
    source : path
        ``data/sources/metatool`` (the committed copy) or a clone of HowieHwong/MetaTool.
    single_per_tool : int or None
        Single-tool tasks kept per gold tool (those with the smallest ``sha256(id)``); None keeps all.

    Raises
    ------
    SourceError
        The folder or a file is missing or malformed (every problem listed, each with its file and row):
        the catalog not an object of string descriptions; a CSV without the ``Query,Tool`` header, a row
        without two fields, an empty query or tool; a multi-tool entry that is not an object, an empty
        ``query`` or ``tool``; a gold tool missing from the catalog.
    ValueError
        ``single_per_tool`` is neither None nor a positive integer.
    """
    if single_per_tool is not None and (isinstance(single_per_tool, bool) or not isinstance(single_per_tool, int)
                                        or single_per_tool < 1):
        raise ValueError(f"single_per_tool: expected a positive integer or None, got {single_per_tool!r}")
    root = Path(source)
    if not (root / CATALOG).is_file():
        raise SourceError(f"{root}: no {CATALOG.as_posix()} (the MetaTool tool descriptions); {HOW_TO_GET}")
    problems: list[str] = []
    catalog = _read_catalog(root / CATALOG, problems)
    single_path, multi_path = _single_path(root), root / MULTI
    known = catalog or None  # an unreadable catalog: the query files are still checked, their gold tools not
    single = _read_single(single_path, known, problems)
    multi = _read_multi(multi_path, known, problems)
    sources.raise_problems(root, problems, "the MetaTool files", SourceError)
    names = tool_names(list(catalog))
    tools = [Tool(name=names[key], description=f"{key}: {desc.strip()}" if desc.strip() else key, kind="read")
             for key, desc in catalog.items()]
    kept = [("single", e) for e in _subset(_merge(single), single_per_tool)] + [("multi", e) for e in _merge(multi)]
    sets = [[names[t] for gold in e["gold"] for t in gold] for _, e in kept]
    tool_groups = sources.components(sets)
    tasks = []
    for (query_set, e), tg in zip(kept, tool_groups):
        required, *alternatives = [tuple(names[t] for t in gold) for gold in e["gold"]]
        group = f"single:{required[0]}" if query_set == "single" else "multi:" + "+".join(sorted(required))
        meta: dict[str, Any] = {"query_set": query_set, "row": e["row"], "tool_group": f"tool:{tg}"}
        if e["also"]:
            meta["also_rows"] = e["also"]
        tasks.append(Task(id=f"{query_set}-{e['row']}", text=e["text"], required=required,
                          alternatives=tuple(alternatives), group=group, meta=meta))
    subset = "all single-tool queries" if single_per_tool is None else \
        f"{single_per_tool} single-tool queries per tool (smallest sha256 of the id)"
    return Domain(
        name="metatool",
        source=(f"MetaTool ToolE ({CATALOG.as_posix()}, {single_path.relative_to(root).as_posix()}, "
                f"{MULTI.as_posix()} of the public repository HowieHwong/MetaTool; {subset}, all multi-tool queries)"),
        tools=tools,
        tasks=tasks,
        acquirable_kinds=("read",),
    )
