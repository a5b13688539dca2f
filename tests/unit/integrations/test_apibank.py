"""The API-Bank converter: a folder the test writes in the public layout (hostile rows included), and the
committed folder ``data/sources/apibank``."""

import gzip
import json
from pathlib import Path

import pytest

from camdf.data.io import read_domain, write_domain
from camdf.integrations.apibank.convert import (
    API_DESCRIPTIONS, LEVEL3, SAMPLES, SourceError, convert_apibank, parameter_schema, tool_name,
)

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "data" / "sources" / "apibank"
GIVEN, SEARCH = SAMPLES / "level-1-given-desc", SAMPLES / "level-2-toolsearcher"


def _def(name, desc, **params):
    return {"name": name, "description": desc,
            "input_parameters": {k: {"type": t, "description": f"the {k}"} for k, t in params.items()},
            "output_parameters": {"status": {"type": "str", "description": "success or failed"}}}


TOKEN = _def("GetUserToken", "Get the user token.", username="str", password="str")
AGENDA = _def("AddAgenda", "Add an agenda item.", token="str", time="str", attendees="list(str)")
CALC = _def("Calculator", "Basic arithmetic.", formula="str")
SEARCHER = _def("ToolSearcher", "Searches for relevant tools.", keywords="str")
MEETING = _def("QueryMeeting", "Query a meeting.", token="str", topic="str")
MEETING3 = _def("QueryMeeting", "The meetings of a user.", user_name="str", when="datetime")
WEATHER = _def("GetWeatherForCoordinates", "Current weather.", latitude="float", longitude="float")


def _prompt(*defs):
    return {"file": "x.jsonl", "id": 0, "input": "User: hi\n",
            "instruction": "\nGenerate an API request.\n\nAPI descriptions:\n" + "\n".join(json.dumps(d) for d in defs)}


def _user(text):
    return {"role": "User", "text": text}


def _ai(text="OK."):
    return {"role": "AI", "text": text}


def _call(name):
    return {"role": "API", "api_name": name, "param_dict": {}, "result": {"output": "success", "exception": None}}


def _search(*found):
    return {"api_name": "ToolSearcher", "input": {"keywords": "x"},
            "output": {"api_name": "ToolSearcher", "input": {"keywords": "x"},
                       "output": found[0] if len(found) == 1 else list(found), "exception": None}}


def _use(name):
    return {"api_name": name, "input": {}, "output": {"api_name": name, "output": 1, "exception": None}}


DIALOGUES = {
    GIVEN / "AddAgenda-GetUserToken-level-2-1.jsonl": [
        _user("Add a meeting with John at 2pm."), _ai("Your username?"), _user("  JaneSmith, password pw. "),
        _call("GetUserToken"), _ai(), _call("AddAgenda"), _call("GetUserToken"), _user(" "), _ai("Done.")],
    GIVEN / "Calculator-level-1-1.jsonl": [_user("What is (1+2)*3?"), _call("Calculator"), _ai("9")],
    GIVEN / "Calculator-level-1-2.jsonl": [_user("What is (1+2)*3?"), _call("Calculator"), _ai("9")],
    SEARCH / "QueryMeeting-level-3-1.jsonl": [_user("Which meetings do I have?"), _ai(), _call("ToolSearcher"),
                                              _call("GetUserToken"), _call("QueryMeeting")],
    SEARCH / "QueryMeeting-level-3-2.jsonl": [_user("Which meetings do I have?"), _call("ToolSearcher"),
                                              _call("GetUserToken"), _user("And what is 2+2?"),
                                              _call("QueryMeeting"), _call("Calculator")],
}
LEVEL3_ROWS = [
    {"requirement": " Query John's meetings and add up their count. ", "response": "...",
     "apis": [_search(MEETING3), _use("QueryMeeting"), _search(CALC), _use("Calculator")]},
    {"requirement": "How warm is it at 40.7, -74.0?", "response": "...",
     "apis": [_search(WEATHER, SEARCHER), _use("GetWeatherForCoordinates"), _use("GetWeatherForCoordinates")]},
    {"requirement": "What is my meeting count, John?", "response": "...",
     "apis": [_use("Calculator"), _use("QueryMeeting")]},
]


def _write(root: Path, dialogues=None, prompts=None, level3=None, gz=False) -> Path:
    for rel, rows in (DIALOGUES if dialogues is None else dialogues).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rows if isinstance(rows, str) else "".join(json.dumps(r) + "\n" for r in rows),
                        encoding="utf-8")
    for rel in (GIVEN, SEARCH):
        (root / rel).mkdir(parents=True, exist_ok=True)
    prompts = [_prompt(MEETING, CALC), _prompt(TOKEN, AGENDA, CALC), _prompt(SEARCHER)] if prompts is None else prompts
    raw = (prompts if isinstance(prompts, str) else json.dumps(prompts, indent=4)).encode()
    (root / API_DESCRIPTIONS).parent.mkdir(parents=True, exist_ok=True)
    if gz:
        (root / f"{API_DESCRIPTIONS}.gz").write_bytes(gzip.compress(raw))
    else:
        (root / API_DESCRIPTIONS).write_bytes(raw)
    level3 = LEVEL3_ROWS if level3 is None else level3
    (root / LEVEL3).write_text(level3 if isinstance(level3, str) else json.dumps(level3), encoding="utf-8")
    return root


@pytest.mark.parametrize("gz", [False, True])
def test_fixture_converts_to_the_task_format(tmp_path, gz):
    dom = convert_apibank(_write(tmp_path / "ab", gz=gz))
    # level-1/2 pool in prompt order (ToolSearcher left out), then the level-3 tools; Calculator's level-3
    # definition equals the level-1/2 one (one tool), QueryMeeting's differs (a second tool, `_lv3`)
    assert [t.name for t in dom.tools] == ["query_meeting", "calculator", "get_user_token", "add_agenda",
                                           "query_meeting_lv3", "get_weather_for_coordinates"]
    agenda = dom.tool_by_name["add_agenda"]
    assert agenda.kind == "read" and agenda.cost is None
    assert agenda.description == "AddAgenda (API-Bank): Add an agenda item."
    assert agenda.parameters == {"type": "object", "properties": {
        "token": {"type": "string", "description": "the token"},
        "time": {"type": "string", "description": "the time"},
        "attendees": {"type": "array", "items": {"type": "string"}, "description": "the attendees"}}}
    lv3 = dom.tool_by_name["query_meeting_lv3"]
    assert lv3.description == "QueryMeeting (API-Bank): The meetings of a user."
    assert lv3.parameters["properties"]["when"] == {"type": "string", "description": "the when (type: datetime)"}
    assert dom.tool_by_name["get_weather_for_coordinates"].parameters["properties"]["latitude"]["type"] == "number"

    by_id = {t.id: t for t in dom.tasks}
    assert list(by_id) == ["level-1-given-desc/AddAgenda-GetUserToken-level-2-1",
                           "level-1-given-desc/Calculator-level-1-1",
                           "level-2-toolsearcher/QueryMeeting-level-3-1", "level-2-toolsearcher/QueryMeeting-level-3-2",
                           "level-3/0", "level-3/1", "level-3/2"]
    first = by_id["level-1-given-desc/AddAgenda-GetUserToken-level-2-1"]
    # every non-blank user turn, stripped, joined; G_x = the calls deduplicated in call order
    assert first.text == "Add a meeting with John at 2pm.\nJaneSmith, password pw."
    assert first.required == ("get_user_token", "add_agenda") and first.candidates is None
    assert first.group == "api:AddAgenda-GetUserToken"
    assert first.meta == {"level": 1, "file": f"{GIVEN.as_posix()}/AddAgenda-GetUserToken-level-2-1.jsonl",
                          "first_turn": "Add a meeting with John at 2pm.", "tool_group": "tool:add_agenda"}
    # the second calculator dialogue repeats the first's text and gold: kept once
    calc = by_id["level-1-given-desc/Calculator-level-1-1"]
    assert calc.meta["merged"] == ["level-1-given-desc/Calculator-level-1-2"] and calc.group == "api:Calculator"
    searched = by_id["level-2-toolsearcher/QueryMeeting-level-3-2"]
    assert searched.required == ("get_user_token", "query_meeting", "calculator")
    assert searched.text == "Which meetings do I have?\nAnd what is 2+2?" and searched.meta["level"] == 2
    assert searched.group == by_id["level-2-toolsearcher/QueryMeeting-level-3-1"].group == "api:QueryMeeting"
    l3 = by_id["level-3/0"]
    assert l3.text == "Query John's meetings and add up their count."
    assert l3.required == ("query_meeting_lv3", "calculator")
    assert l3.meta == {"level": 3, "file": LEVEL3.as_posix(), "row": 0, "tool_group": "tool:add_agenda"}
    assert by_id["level-3/1"].required == ("get_weather_for_coordinates",)
    # level-3 groups: components of the level-3 tasks over their gold tools
    assert l3.group == by_id["level-3/2"].group == "level-3:calculator" != by_id["level-3/1"].group
    # tool_group spans levels: calculator links the level-3 meeting tasks to the level-1/2 ones
    assert by_id["level-3/1"].meta["tool_group"] == "tool:get_weather_for_coordinates"
    write_domain(dom, tmp_path / "out")
    back = read_domain(tmp_path / "out", ["read"])
    assert [t.required for t in back.tasks] == [t.required for t in dom.tasks] and len(back.tools) == 6


def test_first_turn_text(tmp_path):
    dom = convert_apibank(_write(tmp_path), text="first_turn")
    by_id = {t.id: t for t in dom.tasks}
    assert by_id["level-1-given-desc/AddAgenda-GetUserToken-level-2-1"].text == "Add a meeting with John at 2pm."
    # the two QueryMeeting dialogues now share a text but not G_x: both kept
    assert by_id["level-2-toolsearcher/QueryMeeting-level-3-2"].text == "Which meetings do I have?"
    assert "level-2-toolsearcher/QueryMeeting-level-3-1" in by_id
    with pytest.raises(ValueError, match="text must be one of"):
        convert_apibank(tmp_path, text="all")


def test_conversion_is_deterministic(tmp_path):
    root = _write(tmp_path / "ab")
    write_domain(convert_apibank(root), tmp_path / "a")
    write_domain(convert_apibank(root), tmp_path / "b")
    for name in ("catalog.json", "tasks.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_hostile_rows_are_refused_naming_file_and_row(tmp_path):
    dialogues = {
        **DIALOGUES,
        GIVEN / "NoGold-level-1-1.jsonl": [_user("Hello?"), _ai("Hi."), _call("ToolSearcher")],
        GIVEN / "Unknown-level-1-1.jsonl": [_user("Play a song."), _call("PlayMusic")],
        GIVEN / "Broken-level-1-1.jsonl": '{"role": "User", "text": "hi"}\n{"role": "API", oops\n',
        GIVEN / "Roles-level-1-1.jsonl": [_user("a"), {"role": "System", "text": "x"}, {"role": "API"},
                                          _call("Calculator")],
        SEARCH / "Mute-level-3-1.jsonl": [_ai("Hello."), _call("Calculator")],
    }
    prompts = [_prompt(MEETING, CALC), _prompt(TOKEN, AGENDA), {"instruction": "no block"},
               _prompt({"name": "Bad", "description": 3, "input_parameters": []})]
    level3 = [*LEVEL3_ROWS,
              {"requirement": "Only search.", "apis": [_search(CALC)]},
              {"requirement": "", "apis": [_use("Calculator")]},
              {"requirement": "Unreturned.", "apis": [_use("FlightSearch")]},
              "not an object"]
    root = _write(tmp_path, dialogues, prompts, level3)
    with pytest.raises(SourceError) as err:
        convert_apibank(root)
    msg = str(err.value)
    g, l3, p = root / GIVEN, root / LEVEL3, root / API_DESCRIPTIONS
    for expected in (f"{g / 'NoGold-level-1-1.jsonl'}: no API call besides ToolSearcher (no gold tool)",
                     f"{g / 'Unknown-level-1-1.jsonl'}: gold API 'PlayMusic' has no definition in",
                     f"{g / 'Broken-level-1-1.jsonl'}:2: not JSON",
                     f"{g / 'Roles-level-1-1.jsonl'}:2: not an object with `role` User, AI or API",
                     f"{g / 'Roles-level-1-1.jsonl'}:3: an API row without an `api_name`",
                     f"{root / SEARCH / 'Mute-level-3-1.jsonl'}: no user turn with text",
                     f"{p}: entry #2: no `instruction` with an `API descriptions:` block",
                     f"{p}: entry #3: API definition 'Bad': `description` missing or not a string",
                     f"{p}: entry #3: API definition 'Bad': `input_parameters` must be an object",
                     f"{l3}: entry #3: no API call besides ToolSearcher (no gold tool)",
                     f"{l3}: entry #4: `requirement` missing or empty",
                     f"{l3}: entry #5: gold API 'FlightSearch' is returned by no ToolSearcher call",
                     f"{l3}: entry #6: is str, expected an object"):
        assert expected in msg, expected
    assert "13 problem(s)" in msg


@pytest.mark.parametrize("broken", ["prompts", "level3"])
def test_malformed_json_files_are_refused(tmp_path, broken):
    root = _write(tmp_path, prompts="[{\n  oops" if broken == "prompts" else None,
                  level3='{"requirement": "x"}' if broken == "level3" else None)
    with pytest.raises(SourceError) as err:
        convert_apibank(root)
    if broken == "prompts":
        assert f"{root / API_DESCRIPTIONS}:2: not JSON" in str(err.value)
    else:
        assert f"{root / LEVEL3}: expected a JSON list of dialogues, got dict" in str(err.value)


def test_the_known_dialogues_without_api_rows_are_skipped_and_no_other(tmp_path):
    empty = GIVEN / "SearchEngine-level-1-1.jsonl"
    root = _write(tmp_path, {**DIALOGUES, empty: ""})
    assert "level-1-given-desc/SearchEngine-level-1-1" not in {t.id for t in convert_apibank(root).tasks}
    (root / GIVEN / "SearchEngine-level-1-2.jsonl").write_text("")
    with pytest.raises(SourceError, match="SearchEngine-level-1-2.jsonl: no API call besides ToolSearcher"):
        convert_apibank(root)


@pytest.mark.parametrize("missing", ["folder", "samples", "prompts", "level3", "given"])
def test_missing_files_say_how_to_get_them(tmp_path, missing):
    root = tmp_path / "ab"
    if missing != "folder":
        _write(root)
        import shutil
        target = {"samples": SAMPLES, "prompts": API_DESCRIPTIONS, "level3": LEVEL3, "given": GIVEN}[missing]
        (shutil.rmtree if (root / target).is_dir() else Path.unlink)(root / target)
    with pytest.raises(SourceError, match=f"{root}: missing .*AlibabaResearch/DAMO-ConvAI"):
        convert_apibank(root)


def test_names_and_schema_helpers():
    assert tool_name("GetUserToken") == "get_user_token"
    assert tool_name("DocumentQA") == "document_qa"
    assert tool_name("GetWeatherForCoordinates") == "get_weather_for_coordinates"
    assert tool_name("?") == "x" and len(tool_name("A" + "Bc" * 60)) == 64
    assert parameter_schema({}) == {"type": "object", "properties": {}}
    assert parameter_schema({"n": {"type": "int", "description": " k "}, "b": {"type": "bool"}}) == {
        "type": "object", "properties": {"n": {"type": "integer", "description": "k"}, "b": {"type": "boolean"}}}


def test_the_committed_folder():
    """The counts SOURCE.md states, from data/sources/apibank."""
    dom = convert_apibank(COMMITTED)
    assert len(dom.tools) == 69 and len({t.name for t in dom.tools}) == 69
    assert all(len(t.name) <= 64 and t.kind == "read" for t in dom.tools)
    assert len(dom.tasks) == 311 and len({t.id for t in dom.tasks}) == 311
    levels, sizes = {}, {}
    for t in dom.tasks:
        levels[t.meta["level"]] = levels.get(t.meta["level"], 0) + 1
        sizes[len(t.required)] = sizes.get(len(t.required), 0) + 1
    assert levels == {1: 212, 2: 49, 3: 50}
    assert sizes == {1: 121, 2: 141, 3: 37, 4: 12}
    assert not any("merged" in t.meta for t in dom.tasks)
    assert len({t.group for t in dom.tasks}) == 97 and len({t.group for t in dom.tasks if t.meta["level"] == 3}) == 8
    assert {g for t in dom.tasks for g in t.required} == {t.name for t in dom.tools}  # every tool is some gold
    assert [t.name for t in dom.tools if t.name.endswith("_lv3")] == ["query_meeting_lv3", "add_meeting_lv3"]
    by_id = {t.id: t for t in dom.tasks}
    # hand-checked against the files
    assert by_id["level-1-given-desc/QueryBalance-QueryStock-OpenBankAccount-GetUserToken-level-2-1"].required == (
        "get_user_token", "query_balance", "query_stock", "open_bank_account")
    assert by_id["level-2-toolsearcher/AddAgenda-level-3-1"].required == ("get_user_token", "add_agenda")
    assert by_id["level-3/0"].text == "Query meeting of John and send email reminder to john@example.com."
    assert by_id["level-3/0"].required == ("query_meeting_lv3", "email_reminder")
    assert by_id["level-3/25"].required == ("user_posts", "like_count", "calculator")
    first = convert_apibank(COMMITTED, text="first_turn")
    assert len(first.tasks) == 291 and sum(len(t.meta.get("merged", ())) for t in first.tasks) == 20


def test_the_committed_folder_round_trips(tmp_path):
    dom = convert_apibank(COMMITTED)
    write_domain(dom, tmp_path / "apibank")
    back = read_domain(tmp_path / "apibank", ["read"])
    assert [t.to_json() for t in back.tools] == [t.to_json() for t in dom.tools]
    assert [t.to_json() for t in back.tasks] == [t.to_json() for t in dom.tasks]
