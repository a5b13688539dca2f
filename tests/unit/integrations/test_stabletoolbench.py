"""The StableToolBench converter: a folder the test writes in the public layout (hostile rows included),
and the real folder (``../shared/data/stabletoolbench`` next to the checkout, or ``$STABLETOOLBENCH``)."""

import json
import os
from pathlib import Path

import pytest

from camdf.data.io import read_domain, write_domain
from camdf.integrations.stabletoolbench.convert import (
    QUERIES, SourceError, convert_solvable_queries, parameter_schema, tool_name,
)

ROOT = Path(__file__).resolve().parents[3]


def _api(tool, api, category="Media", desc="", required=(), optional=()):
    return {"category_name": category, "tool_name": tool, "api_name": api, "api_description": desc,
            "required_parameters": [{"name": n, "type": t, "description": f"the {n}", "default": ""} for n, t in required],
            "optional_parameters": [{"name": n, "type": t, "description": "", "default": "10"} for n, t in optional],
            "method": "GET"}


def _write(root: Path, files: dict[str, object]) -> Path:
    folder = root / QUERIES
    folder.mkdir(parents=True)
    for name, rows in files.items():
        (folder / name).write_text(rows if isinstance(rows, str) else json.dumps(rows), encoding="utf-8")
    return root


VIMEO = [_api("Vimeo", "SearchVideos", desc="Search for videos.", required=[("query", "STRING")],
              optional=[("per_page", "NUMBER"), ("when", "DATE (YYYY-MM-DD)")]),
         _api("Vimeo", "GetRelatedPeople", desc="Related people.", required=[("category", "STRING")])]
GOOD = {
    "G1_tool.json": [
        {"query_id": 7, "query": "Find documentary videos.", "api_list": VIMEO,
         "relevant APIs": [["Vimeo", "SearchVideos"]]},
        {"query_id": 8, "query": "Who is related to jazz?", "api_list": VIMEO[1:] + [_api("👋 Shop_v3", "Get Order", "Commerce")],
         "relevant APIs": [["Vimeo", "GetRelatedPeople"], ["👋 Shop_v3", "Get Order"], ["Vimeo", "GetRelatedPeople"]]},
    ],
    "G2_category.json": [
        {"query_id": 9, "query": "My order, please.", "api_list": [_api("👋 Shop_v3", "Get Order", "Commerce"),
                                                                  _api("Weather", "Now", "Weather")],
         "relevant APIs": [["Weather", "Now"]]},
    ],
}


def test_fixture_converts_to_the_task_format(tmp_path):
    dom = convert_solvable_queries(_write(tmp_path / "stb", GOOD))
    names = [t.name for t in dom.tools]
    assert names == ["searchvideos_for_vimeo", "getrelatedpeople_for_vimeo", "get_order_for_shop_v3", "now_for_weather"]
    search = dom.tools[0]
    assert search.kind == "read" and search.cost is None
    assert search.description == "Vimeo (Media): Search for videos."
    assert search.parameters == {
        "type": "object", "required": ["query"],
        "properties": {"query": {"type": "string", "description": "the query"},
                       "per_page": {"type": "number", "default": "10"},
                       "when": {"type": "string", "description": "(DATE (YYYY-MM-DD))", "default": "10"}}}
    by_id = {t.id: t for t in dom.tasks}
    assert list(by_id) == ["G1_tool-7", "G1_tool-8", "G2_category-9"]
    # a gold API listed twice is one member of G_x; no candidates: the whole catalog is ranked
    assert by_id["G1_tool-8"].required == ("getrelatedpeople_for_vimeo", "get_order_for_shop_v3")
    assert by_id["G1_tool-8"].candidates is None and by_id["G1_tool-8"].group == "G1_tool"
    assert by_id["G1_tool-8"].meta["offered"] == ["getrelatedpeople_for_vimeo", "get_order_for_shop_v3"]
    # fold groups: 7 and 8 share the tool Vimeo; 9's gold tool (Weather) is no other query's
    tool_groups = {t.id: t.meta["tool_group"] for t in dom.tasks}
    assert tool_groups["G1_tool-7"] == tool_groups["G1_tool-8"] != tool_groups["G2_category-9"]
    cats = {t.id: t.meta["category_group"] for t in dom.tasks}
    assert cats["G1_tool-7"] == cats["G1_tool-8"] != cats["G2_category-9"]
    # the written folder passes the task-format validator
    write_domain(dom, tmp_path / "out")
    back = read_domain(tmp_path / "out", ["read"])
    assert [t.required for t in back.tasks] == [t.required for t in dom.tasks] and len(back.tools) == 4


def test_first_definition_wins_and_names_stay_unique(tmp_path):
    rows = [{"query_id": 1, "query": "a", "api_list": [_api("A b", "x", desc="first"), _api("A-B", "X", desc="clash")],
             "relevant APIs": [["A b", "x"], ["A-B", "X"]]},
            {"query_id": 2, "query": "b", "api_list": [_api("A b", "x", desc="second")], "relevant APIs": [["A b", "x"]]}]
    dom = convert_solvable_queries(_write(tmp_path, {"G1_instruction.json": rows}))
    assert [(t.name, t.description) for t in dom.tools] == [("x_for_a_b", "A b (Media): first"),
                                                            ("x_for_a_b_2", "A-B (Media): clash")]
    assert dom.tasks[0].required == ("x_for_a_b", "x_for_a_b_2")


def test_hostile_rows_are_refused_naming_file_and_query_id(tmp_path):
    hostile = [
        {"query_id": 1, "query": "", "api_list": VIMEO, "relevant APIs": [["Vimeo", "SearchVideos"]]},
        {"query_id": 2, "query": "q", "api_list": VIMEO, "relevant APIs": [["Vimeo", "Nope"]]},
        {"query_id": 3, "query": "q", "api_list": VIMEO, "relevant APIs": "Vimeo"},
        {"query_id": 4, "query": "q", "api_list": [{"tool_name": "T"}], "relevant APIs": [["T", "a"]]},
        {"query_id": 5, "query": "q", "api_list": [dict(VIMEO[0], required_parameters="query")],
         "relevant APIs": [["Vimeo", "SearchVideos"]]},
        {"query_id": 7, "query": "duplicate of G1_tool's 7", "api_list": VIMEO, "relevant APIs": [["Vimeo", "SearchVideos"]]},
        {"query": "no id", "api_list": VIMEO, "relevant APIs": [["Vimeo", "SearchVideos"]]},
        "not an object",
    ]
    root = _write(tmp_path, {**GOOD, "G3_instruction.json": hostile, "G2_instruction.json": "[{\n  oops"})
    with pytest.raises(SourceError) as err:
        convert_solvable_queries(root)
    msg = str(err.value)
    g3 = f"{root / QUERIES / 'G3_instruction.json'}: query_id"
    for expected in (f"{g3} 1: `query` missing or empty",
                     f"{g3} 2: gold API ['Vimeo', 'Nope'] is in no query's api_list",
                     f"{g3} 3: `relevant APIs` missing or empty",
                     f"{g3} 4: api_list entry: `api_name` missing",
                     f"{g3} 5: api_list entry 'Vimeo'/'SearchVideos': `required_parameters` must be a list",
                     f"{g3} 7: duplicate query_id (also in G1_tool.json)",
                     f"{g3} None: `query_id` missing",
                     f"{root / QUERIES / 'G3_instruction.json'}: query #7 is str, expected an object",
                     f"{root / QUERIES / 'G2_instruction.json'}:2: not JSON"):
        assert expected in msg, expected
    assert "10 problem(s)" in msg  # query 4 lacks two names


@pytest.mark.parametrize("layout", ["missing", "empty"])
def test_a_missing_folder_says_how_to_get_it(tmp_path, layout):
    if layout == "empty":
        (tmp_path / QUERIES).mkdir(parents=True)
    with pytest.raises(SourceError, match="git clone the public repository THUNLP-MT/StableToolBench"):
        convert_solvable_queries(tmp_path)


def test_names_and_schema_helpers():
    assert tool_name("YTStream - Download YouTube Videos", "Download/Stream") == \
        "download_stream_for_ytstream_download_youtube_videos"
    assert tool_name("👋", "?") == "x_for_x"
    schema = parameter_schema([{"name": "a", "type": "STRING"}], [{"name": "a", "type": "NUMBER"}])
    assert schema == {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def real_folder() -> Path:
    """The StableToolBench folder of this machine and CI (``$STABLETOOLBENCH`` overrides)."""
    folder = Path(os.environ.get("STABLETOOLBENCH") or ROOT.parent / "shared" / "data" / "stabletoolbench")
    assert (folder / QUERIES).is_dir(), (
        f"{folder}: the StableToolBench folder is not there (it is in CI at ../shared/data/stabletoolbench); "
        "git clone THUNLP-MT/StableToolBench and set STABLETOOLBENCH=<folder>")
    return folder


def test_the_real_folder():
    dom = convert_solvable_queries(real_folder())
    assert len(dom.tasks) == 765 and len(dom.tools) == 2479
    assert len({t.name for t in dom.tools}) == 2479
    sizes = {}
    for t in dom.tasks:
        sizes[len(t.required)] = sizes.get(len(t.required), 0) + 1
    # SOURCE.md counts list lengths; 3 queries list one gold API twice (G2_category 3990 and 72618, G2_instruction 63490)
    assert sizes == {1: 27, 2: 527, 3: 151, 4: 42, 5: 15, 6: 3}
    by_id = {t.id: t for t in dom.tasks}
    # hand-checked from the JSON files: G1_category.json line 999, G2_category.json line 4748, G3_instruction.json's first
    assert set(by_id["G1_category-4155"].required) == {
        "get_user_orders_for_onboarding_project_v3", "get_order_for_onboarding_project_v3",
        "get_products_for_onboarding_project_v3"}  # tool "👋 Onboarding Project_v3"
    assert set(by_id["G2_category-3990"].required) == {
        "video_downloader_for_video_downloader", "generate_pdf_for_web_capture"}  # Video Downloader listed twice
    assert set(by_id["G3_instruction-455"].required) == {
        "searchvideos_for_vimeo", "getrelatedpeople_for_vimeo", "download_stream_for_ytstream_download_youtube_videos"}
    groups = {}
    for t in dom.tasks:
        groups[t.group] = groups.get(t.group, 0) + 1
    assert groups == {"G1_instruction": 163, "G1_category": 153, "G1_tool": 158, "G2_instruction": 106,
                      "G2_category": 124, "G3_instruction": 61}


@pytest.mark.parametrize("group_by, key", [("meta.tool_group", "tool"), ("meta.category_group", "category")])
def test_unseen_tool_and_category_folds_on_the_real_folder(group_by, key):
    """Under folds.group_by, no gold tool (category) of a test fold is the gold of a training query."""
    from camdf.core.folds import assign_folds
    from camdf.pipeline.assembly import task_groups

    dom = convert_solvable_queries(real_folder())
    cat = {t.name: t.description.split(" (", 1)[1].split("):", 1)[0] for t in dom.tools}
    owner = {t.name: t.name.split("_for_", 1)[1] for t in dom.tools}
    of = (lambda api: owner[api]) if key == "tool" else (lambda api: cat[api])
    groups = task_groups(dom, group_by)
    folds = assign_folds([t.id for t in dom.tasks], n_folds=5, protocol="group", random_state=0, groups=groups)
    assert sorted(set(folds)) == [0, 1, 2, 3, 4]
    gold = [{of(api) for api in t.required} for t in dom.tasks]
    for f in range(5):
        test = set().union(*(g for g, fold in zip(gold, folds) if fold == f))
        train = set().union(*(g for g, fold in zip(gold, folds) if fold != f))
        assert not test & train, (group_by, f, sorted(test & train)[:3])
    with pytest.raises(ValueError, match="no task of domain `stabletoolbench` has the meta field `nope`"):
        task_groups(dom, "meta.nope")
