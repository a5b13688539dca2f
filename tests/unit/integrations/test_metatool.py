"""The MetaTool converter: a folder the test writes in the repository's layout (hostile files included), and
the committed folder ``data/sources/metatool`` with the counts its SOURCE.md states."""

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from camdf.data.io import read_domain, write_domain
from camdf.integrations.metatool.convert import (
    CATALOG, MAX_NAME, MULTI, SINGLE, SourceError, convert_metatool, tool_names,
)

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "data" / "sources" / "metatool"

PLUGINS = {"FinanceTool": "Stay informed with financial updates.", "PDF&URLTool": " Read PDFs and web pages. ",
           "vio_com": "A better deal on your next hotel.", "quiet": ""}
CSV = ("Query,Tool\n"
       "What is AAPL trading at?,FinanceTool\n"                        # row 1
       "\"Summarize this PDF, please\",PDF&URLTool\n"                 # row 2: a comma inside quotes
       " What is AAPL trading at? ,FinanceTool\n"                     # row 3: row 1 again (blanks stripped)
       "Find me a hotel,vio_com\n"                                    # row 4
       "What is AAPL trading at?,PDF&URLTool\n"                       # row 5: row 1's text, another tool
       "\"Two\nlines\",quiet\n")                                      # row 6: a newline inside quotes (line 7)
MULTI_ROWS = [{"query": "Stock news and a hotel.", "tool": ["FinanceTool", "vio_com"]},
              {"query": "\"Read my PDF\" and price it.", "tool": ["PDF&URLTool", "FinanceTool", "PDF&URLTool"]}]


def _write(root: Path, plugins=PLUGINS, csv_text=CSV, multi=MULTI_ROWS, gz: bool = False) -> Path:
    for rel, body in ((CATALOG, plugins), (MULTI, multi)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
    if gz:
        (root / SINGLE).with_name(SINGLE.name + ".gz").write_bytes(gzip.compress(csv_text.encode(), mtime=0))
    else:
        (root / SINGLE).write_text(csv_text, encoding="utf-8", newline="")
    return root


@pytest.mark.parametrize("gz", [False, True])
def test_fixture_converts_to_the_task_format(tmp_path, gz):
    dom = convert_metatool(_write(tmp_path / "mt", gz=gz), single_per_tool=None)
    assert [t.name for t in dom.tools] == ["financetool", "pdf_urltool", "vio_com", "quiet"]
    assert [t.description for t in dom.tools] == [
        "FinanceTool: Stay informed with financial updates.", "PDF&URLTool: Read PDFs and web pages.",
        "vio_com: A better deal on your next hotel.", "quiet"]
    assert all(t.kind == "read" and t.parameters is None and t.cost is None for t in dom.tools)
    assert dom.acquirable_kinds == ("read",) and dom.acquirable == [t.name for t in dom.tools]
    got = [(t.id, t.text, t.required, t.alternatives, t.group) for t in dom.tasks]
    assert got == [
        ("single-1", "What is AAPL trading at?", ("financetool",), (("pdf_urltool",),), "single:financetool"),
        ("single-2", "Summarize this PDF, please", ("pdf_urltool",), (), "single:pdf_urltool"),
        ("single-4", "Find me a hotel", ("vio_com",), (), "single:vio_com"),
        ("single-6", "Two\nlines", ("quiet",), (), "single:quiet"),
        ("multi-1", "Stock news and a hotel.", ("financetool", "vio_com"), (), "multi:financetool+vio_com"),
        # a gold tool listed twice is one member of G_x; the source's quotes are kept
        ("multi-2", "\"Read my PDF\" and price it.", ("pdf_urltool", "financetool"), (),
         "multi:financetool+pdf_urltool"),
    ]
    assert all(t.candidates is None for t in dom.tasks)
    meta = {t.id: t.meta for t in dom.tasks}
    assert meta["single-1"] == {"query_set": "single", "row": 1, "tool_group": "tool:financetool",
                                "also_rows": [3, 5]}
    assert meta["multi-2"] == {"query_set": "multi", "row": 2, "tool_group": "tool:financetool"}
    # fold groups over gold and alternative tools: finance, pdf and vio_com are linked; quiet stands alone
    assert {m["tool_group"] for m in meta.values()} == {"tool:financetool", "tool:quiet"}
    assert meta["single-6"]["tool_group"] == "tool:quiet"
    # the written folder passes the task-format validator and reads back the same
    write_domain(dom, tmp_path / "out")
    back = read_domain(tmp_path / "out", ["read"])
    assert [t.to_json() for t in back.tasks] == [t.to_json() for t in dom.tasks]
    assert [t.to_json() for t in back.tools] == [t.to_json() for t in dom.tools]


def test_single_per_tool_keeps_the_smallest_hashes(tmp_path):
    rows = "".join(f"finance question {i},FinanceTool\n" for i in range(1, 7)) + "a hotel,vio_com\n"
    root = _write(tmp_path, csv_text="Query,Tool\n" + rows, multi=[])
    # sha256("single-<n>") order among rows 1-6: hand-checked with hashlib
    kept = [t.id for t in convert_metatool(root, single_per_tool=2).tasks]
    assert kept == ["single-2", "single-4", "single-7"]
    assert len(convert_metatool(root, single_per_tool=1).tasks) == 2
    assert len(convert_metatool(root, single_per_tool=None).tasks) == 7
    for bad in (0, -1, True, 2.5, "5"):
        with pytest.raises(ValueError, match="single_per_tool"):
            convert_metatool(root, single_per_tool=bad)


def test_tool_names_are_unique_and_short():
    long = "A" * 80
    names = tool_names(["Now", "now", "NOW!", long, long.lower() + "?", "👋"])
    assert list(names.values()) == ["now", "now_2", "now_3", "a" * 64, "a" * 62 + "_2", "x"]
    assert all(len(n) <= MAX_NAME for n in names.values())


def test_a_missing_folder_says_how_to_get_it(tmp_path):
    with pytest.raises(SourceError, match="HowieHwong/MetaTool") as err:
        convert_metatool(tmp_path / "nowhere")
    assert "plugin_des.json" in str(err.value)


def test_missing_query_files_are_named(tmp_path):
    root = _write(tmp_path)
    (root / SINGLE).unlink()
    (root / MULTI).unlink()
    with pytest.raises(SourceError) as err:
        convert_metatool(root)
    msg = str(err.value)
    assert "2 problem(s)" in msg and "all_clean_data.csv.gz" in msg and "multi_tool_query_golden.json" in msg


def test_hostile_rows_are_refused_naming_file_and_row(tmp_path):
    csv_text = ("Query,Tool\n"
                "fine,FinanceTool\n"          # row 1
                ",FinanceTool\n"              # row 2: no query
                "no gold,\n"                  # row 3: no gold tool
                "unknown,NoSuchTool\n"        # row 4: gold not in the catalog
                "three,FinanceTool,extra\n")  # row 5: three fields
    multi = [{"query": "ok", "tool": ["FinanceTool", "vio_com"]},
             {"query": "no gold", "tool": []},
             {"query": "unknown", "tool": ["FinanceTool", "Ghost"]},
             {"tool": ["FinanceTool"]},
             "not an object"]
    root = _write(tmp_path, csv_text=csv_text, multi=multi)
    with pytest.raises(SourceError) as err:
        convert_metatool(root)
    msg = str(err.value)
    single, mj = root / SINGLE, root / MULTI
    for expected in (f"{single}:3: row 2: `Query` is empty",
                     f"{single}:4: row 3: `Tool` is empty (no gold tool)",
                     f"{single}:5: row 4: gold tool 'NoSuchTool' is not in dataset/plugin_des.json",
                     f"{single}:6: row 5: 3 field(s), expected 2",
                     f"{mj}: query #2: `tool` missing or empty",
                     f"{mj}: query #3: gold tool 'Ghost' is not in dataset/plugin_des.json",
                     f"{mj}: query #4: `query` missing or empty",
                     f"{mj}: query #5: is str, expected an object"):
        assert expected in msg, expected
    assert "8 problem(s)" in msg


@pytest.mark.parametrize("what, body, expected", [
    ("catalog", "{\n  \"a\": oops", "plugin_des.json:2: not JSON"),
    ("catalog", "[\"FinanceTool\"]", "plugin_des.json: expected a non-empty JSON object"),
    ("catalog", "{\"FinanceTool\": 3}", "plugin_des.json: tool 'FinanceTool': description is int"),
    ("multi", "[{\"query\": ", "multi_tool_query_golden.json:1: not JSON"),
    ("multi", "{\"query\": \"q\"}", "multi_tool_query_golden.json: expected a JSON list of queries, got dict"),
    ("single", "Tool,Query\nq,FinanceTool\n", "all_clean_data.csv:1: header is ['Tool', 'Query']"),
    ("single", "", "all_clean_data.csv:1: header is None"),
    ("gz", b"not gzip", "all_clean_data.csv.gz: cannot decompress"),
])
def test_malformed_files_are_refused_naming_the_file(tmp_path, what, body, expected):
    root = _write(tmp_path, gz=what == "gz")
    path = {"catalog": root / CATALOG, "multi": root / MULTI, "single": root / SINGLE,
            "gz": (root / SINGLE).with_name(SINGLE.name + ".gz")}[what]
    if isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_text(body, encoding="utf-8")
    with pytest.raises(SourceError) as err:
        convert_metatool(root)
    assert f"{root}" in str(err.value) and expected in str(err.value)


def test_the_committed_folder():
    """The counts data/sources/metatool/SOURCE.md states."""
    dom = convert_metatool(COMMITTED)
    assert len(dom.tools) == 199 and len({t.name for t in dom.tools}) == 199
    assert all(len(t.name) <= MAX_NAME for t in dom.tools)
    assert len(dom.tasks) == 1492 and len({t.id for t in dom.tasks}) == 1492
    assert Counter(t.meta["query_set"] for t in dom.tasks) == {"single": 995, "multi": 497}
    assert Counter(len(t.required) for t in dom.tasks) == {1: 995, 2: 497}
    single_gold = Counter(t.required[0] for t in dom.tasks if t.meta["query_set"] == "single")
    assert len(single_gold) == 199 and set(single_gold.values()) == {5}
    groups = Counter(t.group.split(":")[0] for t in dom.tasks)
    assert len({t.group for t in dom.tasks}) == 287 and groups == {"single": 995, "multi": 497}
    tool_groups = Counter(t.meta["tool_group"] for t in dom.tasks)
    assert len(tool_groups) == 185 and max(tool_groups.values()) == 572
    multi_tools = {n for t in dom.tasks if t.meta["query_set"] == "multi" for n in t.required}
    assert len(multi_tools) == 15 and len({t.group for t in dom.tasks if t.meta["query_set"] == "multi"}) == 88
    by_id = {t.id: t for t in dom.tasks}
    # hand-checked against the source: the first multi-tool query, and CSV row 140
    assert by_id["multi-1"].text.startswith("I want to know the latest news about Tesla")
    assert by_id["multi-1"].required == ("financetool", "newstool")
    assert by_id["single-140"].required == ("researchhelper",)
    assert dom.tool_by_name["pdf_urltool"].description.startswith("PDF&URLTool: ")


def test_the_committed_folder_in_full():
    dom = convert_metatool(COMMITTED, single_per_tool=None)
    sets = Counter(t.meta["query_set"] for t in dom.tasks)
    assert sets == {"single": 20544, "multi": 497}
    assert sum(1 for t in dom.tasks if t.alternatives) == 12
    assert sum(len(t.meta.get("also_rows", [])) for t in dom.tasks) == 56 + 14
    assert sum(len(t.alternatives) for t in dom.tasks) == 14  # 11 texts with one other tool, 1 with three


def test_the_committed_folder_round_trips_byte_for_byte(tmp_path):
    first = write_domain(convert_metatool(COMMITTED), tmp_path / "a")
    second = write_domain(convert_metatool(COMMITTED), tmp_path / "b")
    for name in ("catalog.json", "tasks.jsonl"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    back = read_domain(first, ["read"])
    dom = convert_metatool(COMMITTED)
    assert [t.to_json() for t in back.tools] == [t.to_json() for t in dom.tools]
    assert [t.to_json() for t in back.tasks] == [t.to_json() for t in dom.tasks]
