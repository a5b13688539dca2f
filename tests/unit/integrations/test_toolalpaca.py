"""The ToolAlpaca converter: a folder the test writes in the public layout (hostile rows included),
and the committed folder ``data/sources/toolalpaca``."""

import json
from pathlib import Path

import pytest

from camdf.data.io import read_domain, write_domain
from camdf.integrations.toolalpaca.convert import (
    FILES, SourceError, convert_toolalpaca, parameter_schema, tool_name,
)

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "data" / "sources" / "toolalpaca"


def _fn(summary, params, output="Successful response."):
    return (f"{summary}\nParameters: {json.dumps(params)}\nOutput: {output}\n"
            " - Format: application/json\n - Structure: Object{x}")


def _api(name, category, desc, functions, instructions, answers):
    return {"Name": name, "Category": category, "Description": desc, "Documentation": "{}",
            "Function_Description": {**{fn: _fn(s, p) for fn, (s, p, _) in functions.items()}, "components": ""},
            "Function_Projection": {fn: [f"/{fn}", m] for fn, (_, _, m) in functions.items()},
            "Instructions": instructions, "Golden_Answers": answers}


def _step(action, inp="{}"):
    return {"Action": action, "Action_Input": inp}


AXOLOTL = _api(
    "Axolotl", "Animals", "Collection of axolotl pictures and facts",
    {"getRandomAxolotlImage": ("Retrieve a random axolotl image.", {}, "get"),
     "searchAxolotlImages": ("Search axolotl images.",
                             {"color": "Required. string. One of: [wild, albino]. The color.",
                              "page": "integer. The page number.", "tags": "Array[string]. Tags.",
                              "filters": "Object. Filters.", "when": "date. The day."}, "get"),
     "reportSighting": ("Report a sighting.", {"where": "Required. string."}, "post")},
    ["Show me an axolotl.", "Find albino axolotls, then report one.", "Show me an axolotl.", "I saw one.",
     "Find some."],
    [[_step("getRandomAxolotlImage")],
     [_step("searchAxolotlImages", '{"color": "albino"}'), _step("reportSighting"), _step("searchAxolotlImages")],
     [_step("getRandomAxolotlImage")],  # same text and gold as instruction 0: kept once
     [_step("getDetails", '{"Question": "Where?"}'), _step("reportSighting")],
     [_step("searchAxolotlImages"), _step("[Optional]reportSighting")]])
BIBLIA = _api("A Bíblia Digital", "Books", "The Bible.",
              {"getSpecificVerse": ("", {"verse": "Required. integer. "}, "get")},
              ["John 3:16?"], [[_step("getSpecificVerse")]])
NAGER = _api("Nager.Date", "Animals", "Public holidays.",  # shares a category with Axolotl
             {"CountryCountryInfo": ("Get country info", {"countryCode": "Required. string. Code."}, "get")},
             ["Info on CN.", "Flights to ACK?"], [[_step("CountryCountryInfo")], [_step("weather_metar_get")]])
AVIATION = _api("AviationAPI", "Transportation", "Charts",
                {"airports_get": ("Get airports", {"apt": "Required. string. Code."}, "get")},
                ["Airport AVL?", "Weather at AVL?"],
                [[_step("airports_get")], [_step("weather_metar_get"), _step("airports_get")]])


def _write(root: Path, simulated, real) -> Path:
    (root / "data").mkdir(parents=True)
    for rel, rows in zip(FILES, (simulated, real)):
        (root / rel).write_text(rows if isinstance(rows, str) else json.dumps(rows), encoding="utf-8")
    return root


def test_fixture_converts_to_the_task_format(tmp_path):
    dom = convert_toolalpaca(_write(tmp_path / "ta", [AXOLOTL, BIBLIA], [AVIATION]))
    assert [t.name for t in dom.tools] == [
        "axolotl_get_random_axolotl_image", "axolotl_search_axolotl_images", "axolotl_report_sighting",
        "a_biblia_digital_get_specific_verse", "aviation_api_airports_get"]
    assert [t.kind for t in dom.tools] == ["read", "read", "write", "read", "read"]
    assert dom.acquirable_kinds == ("read", "write") and len(dom.acquirable) == 5
    search = dom.tools[1]
    assert search.description == "Axolotl (Animals): Collection of axolotl pictures and facts. Search axolotl images."
    assert search.parameters == {
        "type": "object", "required": ["color"],
        "properties": {"color": {"type": "string", "description": "One of: [wild, albino]. The color."},
                       "page": {"type": "integer", "description": "The page number."},
                       "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
                       "filters": {"type": "object", "description": "Filters."},
                       "when": {"type": "string", "description": "The day. (date)"}}}
    assert dom.tools[3].description == "A Bíblia Digital (Books): The Bible."  # no summary: the API alone
    assert dom.tools[3].parameters == {"type": "object", "properties": {"verse": {"type": "integer"}},
                                       "required": ["verse"]}
    by_id = {t.id: t for t in dom.tasks}
    # instruction 2 repeats 0; AviationAPI's instruction 1 calls an unlisted function: both left out
    assert list(by_id) == ["eval_simulated-axolotl-0", "eval_simulated-axolotl-1", "eval_simulated-axolotl-3",
                           "eval_simulated-axolotl-4", "eval_simulated-a_biblia_digital-0", "eval_real-aviation_api-0"]
    assert by_id["eval_simulated-axolotl-1"].required == ("axolotl_search_axolotl_images", "axolotl_report_sighting")
    assert by_id["eval_simulated-axolotl-3"].required == ("axolotl_report_sighting",)
    assert by_id["eval_simulated-axolotl-3"].meta["agent_tools"] == ["getDetails"]
    assert by_id["eval_simulated-axolotl-4"].required == ("axolotl_search_axolotl_images",)
    assert by_id["eval_simulated-axolotl-4"].meta["optional"] == ["axolotl_report_sighting"]
    assert by_id["eval_simulated-axolotl-0"].text == "Show me an axolotl."
    assert by_id["eval_simulated-axolotl-0"].candidates is None
    assert by_id["eval_simulated-axolotl-0"].meta == {
        "file": "eval_simulated.json", "api": "Axolotl", "category": "Animals", "instruction": 0,
        "category_group": "category:Animals"}
    assert [t.group for t in dom.tasks] == ["axolotl"] * 4 + ["a_biblia_digital", "aviation_api"]
    write_domain(dom, tmp_path / "out")
    back = read_domain(tmp_path / "out", ["read", "write"])
    assert [t.required for t in back.tasks] == [t.required for t in dom.tasks] and len(back.tools) == 5


def test_category_groups_join_apis_and_unlisted_gold_is_only_aviationapis(tmp_path):
    root = _write(tmp_path, [AXOLOTL], [NAGER])
    with pytest.raises(SourceError, match=r"API 'Nager.Date': instruction 1: gold function 'weather_metar_get' "
                                          r"is not a function of 'Nager.Date'"):
        convert_toolalpaca(root)
    nager = dict(NAGER, Instructions=NAGER["Instructions"][:1], Golden_Answers=NAGER["Golden_Answers"][:1])
    dom = convert_toolalpaca(_write(tmp_path / "b", [AXOLOTL], [nager]))
    assert {t.meta["category_group"] for t in dom.tasks} == {"category:Animals"}
    assert {t.group for t in dom.tasks} == {"axolotl", "nager_date"}


def test_hostile_input_is_refused_naming_file_api_and_instruction(tmp_path):
    bad_gold = dict(AXOLOTL, Instructions=["a", "b", "", "d", "e"],
                    Golden_Answers=[[], [_step("nope")], [_step("getRandomAxolotlImage")], [_step("getDetails")],
                                    [{"Action_Input": "{}"}]])
    no_funcs = dict(BIBLIA, Function_Projection={"getSpecificVerse": ["/v", "fetch"]})
    bad_params = dict(NAGER, Name="Other", Function_Description={"CountryCountryInfo": "Info\nParameters: {oops"})
    short = dict(AVIATION, Golden_Answers=[])
    root = _write(tmp_path, [bad_gold, no_funcs, bad_params, short, dict(AXOLOTL), "not an object"], "[{\n oops")
    with pytest.raises(SourceError) as err:
        convert_toolalpaca(root)
    msg = str(err.value)
    sim, real = root / FILES[0], root / FILES[1]
    for expected in (f"{sim}: API 'Axolotl': instruction 0: gold answer missing or empty",
                     f"{sim}: API 'Axolotl': instruction 1: gold function 'nope' is not a function of 'Axolotl'",
                     f"{sim}: API 'Axolotl': instruction 2: instruction missing or empty",
                     f"{sim}: API 'Axolotl': instruction 3: gold answer calls no API function",
                     f"{sim}: API 'Axolotl': instruction 4: gold step {{'Action_Input': '{{}}'}} has no `Action`",
                     f"{sim}: API 'A Bíblia Digital': function 'getSpecificVerse': `Function_Projection` entry",
                     f"{sim}: API 'Other': function 'CountryCountryInfo': `Function_Description` its `Parameters:` "
                     "line is not JSON",
                     f"{sim}: API 'AviationAPI': 2 `Instructions` but 0 `Golden_Answers`",
                     f"{sim}: API 'Axolotl': duplicate API name (also in eval_simulated.json)",
                     f"{sim}: API #5 is str, expected an object",
                     f"{real}:2: not JSON"):
        assert expected in msg, expected
    assert "11 problem(s)" in msg


@pytest.mark.parametrize("layout", ["no folder", "no data", "one file"])
def test_a_missing_folder_or_file_is_refused(tmp_path, layout):
    if layout == "no folder":
        with pytest.raises(SourceError, match="no data/ folder .*tangqiaoyu/ToolAlpaca"):
            convert_toolalpaca(tmp_path / "nowhere")
    elif layout == "no data":
        (tmp_path / "data").mkdir()
        with pytest.raises(SourceError, match="eval_simulated.json"):
            convert_toolalpaca(tmp_path)
    else:
        (tmp_path / "data").mkdir()
        (tmp_path / FILES[0]).write_text(json.dumps([AXOLOTL]))
        with pytest.raises(SourceError, match=str(tmp_path / FILES[1])):
            convert_toolalpaca(tmp_path)


def test_a_gold_function_of_another_api_is_not_in_the_catalog(tmp_path):
    biblia = dict(BIBLIA, Golden_Answers=[[_step("getRandomAxolotlImage")]])
    with pytest.raises(SourceError, match=r"eval_simulated.json: API 'A Bíblia Digital': instruction 0: "
                                          r"gold function 'getRandomAxolotlImage' is not a function"):
        convert_toolalpaca(_write(tmp_path, [AXOLOTL, biblia], []))


def test_names_and_schema_helpers():
    assert tool_name("1Forge", "getExchangeRates") == "1forge_get_exchange_rates"
    assert tool_name("AbuseIPDB", "checkIPReputation") == "abuse_ipdb_check_ip_reputation"
    assert tool_name("Améthyste", "preferred-routes_get") == "amethyste_preferred_routes_get"
    assert tool_name("👋", "?") == "x_x"
    long = tool_name("A" * 10 + " api", "doSomething" * 8)
    assert len(long) == 64 and long == tool_name("A" * 10 + " api", "doSomething" * 8)
    assert long != tool_name("A" * 10 + " api", "doSomething" * 9)
    schema = parameter_schema({"p": "Required. Array[Object{id: string. The id.}. ]. Things."})
    assert schema == {"type": "object", "required": ["p"], "properties": {
        "p": {"type": "array", "description": "Things. (Array[Object{id: string. The id.}. ])"}}}


def test_the_committed_folder():
    """The counts SOURCE.md states, the round trip through the task format, and byte-for-byte determinism."""
    dom = convert_toolalpaca(COMMITTED)
    assert len(dom.tools) == 94 and len({t.name for t in dom.tools}) == 94
    assert all(len(t.name) <= 64 and t.name.replace("_", "").isalnum() for t in dom.tools)
    assert sum(t.kind == "read" for t in dom.tools) == 70 and sum(t.kind == "write" for t in dom.tools) == 24
    assert len(dom.tasks) == 208
    files = {}
    for t in dom.tasks:
        files[t.meta["file"]] = files.get(t.meta["file"], 0) + 1
    assert files == {"eval_simulated.json": 100, "eval_real.json": 108}
    sizes = {}
    for t in dom.tasks:
        sizes[len(t.required)] = sizes.get(len(t.required), 0) + 1
    assert sizes == {1: 174, 2: 34}
    assert len({t.group for t in dom.tasks}) == 21 and len({t.meta["category_group"] for t in dom.tasks}) == 16
    assert sum("agent_tools" in t.meta for t in dom.tasks) == 8
    by_id = {t.id: t for t in dom.tasks}
    assert by_id["eval_real-nager_date-0"].text == "Can you check if today is a public holiday in China?"
    assert by_id["eval_real-nager_date-0"].required == ("nager_date_public_holiday_is_today_public_holiday",)
    assert by_id["eval_simulated-auth0-11"].required == ("auth0_get_user_profile",)
    assert by_id["eval_simulated-auth0-11"].meta["optional"] == ["auth0_update_user_profile"]
    assert by_id["eval_simulated-apache_superset-8"].required == (
        "apache_superset_update_data_source", "apache_superset_update_dashboard")
    assert [i for i in range(13) if f"eval_real-aviation_api-{i}" in by_id] == [0, 1, 2, 3, 4, 11, 12]
    assert dom.tool_by_name["nager_date_country_country_info"].description == (
        "Nager.Date (Calendar): Public holidays for more than 90 countries. Get country info for the given country")
    again = convert_toolalpaca(COMMITTED)
    assert [t.to_json() for t in again.tools] == [t.to_json() for t in dom.tools]
    assert [t.to_json() for t in again.tasks] == [t.to_json() for t in dom.tasks]


def test_the_committed_folder_round_trips(tmp_path):
    dom = convert_toolalpaca(COMMITTED)
    write_domain(dom, tmp_path / "a")
    write_domain(convert_toolalpaca(COMMITTED), tmp_path / "b")
    for name in ("catalog.json", "tasks.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    back = read_domain(tmp_path / "a", ["read", "write"])
    assert [t.name for t in back.tools] == [t.name for t in dom.tools]
    assert [(t.id, t.required, t.group) for t in back.tasks] == [(t.id, t.required, t.group) for t in dom.tasks]
