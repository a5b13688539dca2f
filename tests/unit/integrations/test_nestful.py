"""The NESTFUL converter: a folder the test writes in the repository's layout (hostile rows included), and the
committed folder ``data/sources/nestful`` with the counts its SOURCE.md states."""

import gzip
import json
import logging
from pathlib import Path

import pytest

from camdf.data.io import read_domain, write_domain
from camdf.integrations.nestful.convert import (
    COLLECTIONS, SourceError, convert_nestful, parameter_schema, tool_name,
)

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "data" / "sources" / "nestful"
STEMS = {c: stem for c, stem, _ in COLLECTIONS}


def _write(root: Path, files: dict[tuple[str, str], object]) -> Path:
    """``files``: (collection, "spec" | "data") -> rows (or raw text); a collection left out gets empty lists."""
    for collection, stem in STEMS.items():
        for kind in ("spec", "data"):
            path = root / f"{stem}-{kind}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            rows = files.get((collection, kind), [])
            path.write_text(rows if isinstance(rows, str) else json.dumps(rows), encoding="utf-8")
    return root


def _step(name, label=None, **arguments):
    return {"name": name, "arguments": arguments, **({"label": label} if label else {})}


FLIGHTS = {"name": "SkyScrapperFlightSearch", "description": "Retrieves available flights.", "method": "GET",
           "host": "sky-scrapper.p.rapidapi.com",
           "query_parameters": {
               "originSkyId": {"type": "string", "description": "From Search Airport.", "required": True},
               "date": {"type": "Date (yyyy-mm-dd)", "description": "Departure date", "required": True},
               "cabinClass": {"type": "string", "description": "Cabin", "default": "economy",
                              "enum": ["economy", "business"], "required": False},
               "adults": {"type": "number", "description": "Adults", "default": 1, "minimum": 1, "optional": True}},
           "output_parameters": {"price": {"type": "number"}}}
AIRPORT = {"name": "SkyScrapperSearchAirport", "description": "Search for airports.", "method": "GET",
           "host": "sky-scrapper.p.rapidapi.com",
           "query_parameters": {"query": {"type": "string", "description": "A place", "required": True}}}
ROUTE = {"name": "calculate_route", "description": "Calculate the best route",
         "query_parameters": {"locations": {"type": "array", "required": True, "items": {"type": "string"},
                                            "description": "Stops"}}}
PACE = {"name": "calculate_pace", "description": "Calculate a pace", "query_parameters": {}}
CARS = {"name": "RentalCars.GetCarsAvailable", "description": "Find cars",
        "query_parameters": {"type": {"description": "Car type", "required": False, "default_value": "Standard",
                                      "allowed_values": ["Standard", "SUV"]},
                             "city": {"description": "Pickup city", "required": True, "allowed_values": []}}}
GOOD = {
    ("executable", "spec"): [FLIGHTS, AIRPORT],
    ("executable", "data"): [
        {"input": "Fly from NYC to London on 2024-08-15.",
         "output": [_step("SkyScrapperSearchAirport", "var1", query="NYC"),
                    _step("SkyScrapperSearchAirport", "var2", query="London"),
                    _step("SkyScrapperFlightSearch", "var3", originSkyId="$var1.skyId$", date="2024-08-15"),
                    _step("var_result", flights="$var3$")]}],
    ("glaive", "spec"): [ROUTE, PACE],
    ("glaive", "data"): [
        {"input": "Route me, then my pace.",
         "output": [_step("calculate_route", "var1", locations=["A", "B"]),
                    _step("calculate_pace", "var2", distance="$var1.distance$"), _step("var_result", r="$var2$")]},
        {"input": "Route me, then my pace.",  # the same text and gold set: kept once
         "output": [_step("calculate_pace", "var1"), _step("calculate_route", "var2"),
                    _step("var_result", r="$var2$")]},
        {"input": "Just a route.", "output": [_step("calculate_route", "var1"), _step("var_result")]}],
    ("sgd", "spec"): [CARS, dict(PACE, description="a second definition of calculate_pace")],
    ("sgd", "data"): [{"input": "A car in San Diego.", "output": [_step("RentalCars.GetCarsAvailable", "var1")]}],
}


def test_fixture_converts_to_the_task_format(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="camdf.integrations.nestful.convert"):
        dom = convert_nestful(_write(tmp_path / "nf", GOOD))
    # the second calculate_pace definition is a clash: the first is kept, and both repeats are counted
    assert "1 tool definition(s) repeat an earlier name" in caplog.text
    assert "1 query(ies) repeat an earlier one's text and gold set" in caplog.text
    assert [(t.name, t.description) for t in dom.tools] == [
        ("skyscrapperflightsearch", "sky-scrapper (RapidAPI): Retrieves available flights."),
        ("skyscrappersearchairport", "sky-scrapper (RapidAPI): Search for airports."),
        ("calculate_route", "Glaive: Calculate the best route"),
        ("calculate_pace", "Glaive: Calculate a pace"),
        ("rentalcars_getcarsavailable", "RentalCars (SGD): Find cars")]
    assert all(t.kind == "read" and t.cost is None for t in dom.tools)
    assert dom.tools[0].parameters == {
        "type": "object", "required": ["originSkyId", "date"],
        "properties": {"originSkyId": {"type": "string", "description": "From Search Airport."},
                       "date": {"type": "string", "description": "Departure date (Date (yyyy-mm-dd))"},
                       "cabinClass": {"type": "string", "description": "Cabin", "default": "economy",
                                      "enum": ["economy", "business"]},
                       "adults": {"type": "number", "description": "Adults", "default": 1, "minimum": 1}}}
    assert dom.tools[2].parameters["properties"]["locations"] == {
        "type": "array", "description": "Stops", "items": {"type": "string"}}
    assert dom.tools[4].parameters == {
        "type": "object", "required": ["city"],
        "properties": {"type": {"type": "string", "description": "Car type", "default": "Standard",
                                "enum": ["Standard", "SUV"]},
                       "city": {"type": "string", "description": "Pickup city"}}}
    by_id = {t.id: t for t in dom.tasks}
    assert list(by_id) == ["executable-0", "glaive-0", "glaive-2", "sgd-0"]
    ex = by_id["executable-0"]
    # call order, each tool once, var_result left out; no candidates: the whole catalog is ranked
    assert ex.required == ("skyscrappersearchairport", "skyscrapperflightsearch") and ex.candidates is None
    assert ex.text == "Fly from NYC to London on 2024-08-15."
    assert ex.meta == {"collection": "executable", "row": 0, "calls": [
        "skyscrappersearchairport", "skyscrappersearchairport", "skyscrapperflightsearch"],
        "tool_group": "tool:skyscrapperflightsearch", "api_group": "api:sky-scrapper"}
    assert by_id["glaive-0"].required == ("calculate_route", "calculate_pace")
    # fold groups: the two glaive queries share calculate_route; the others share nothing
    assert {t.id: t.group for t in dom.tasks} == {
        "executable-0": "tool:skyscrapperflightsearch", "glaive-0": "tool:calculate_pace",
        "glaive-2": "tool:calculate_pace", "sgd-0": "tool:rentalcars_getcarsavailable"}
    assert all(t.group == t.meta["tool_group"] for t in dom.tasks)
    assert by_id["sgd-0"].meta["api_group"] == "api:RentalCars"
    write_domain(dom, tmp_path / "out")
    back = read_domain(tmp_path / "out", ["read"])
    assert [t.required for t in back.tasks] == [t.required for t in dom.tasks] and len(back.tools) == 5


def test_conversion_is_deterministic_and_reads_gzip(tmp_path):
    root = _write(tmp_path / "a", GOOD)
    first = convert_nestful(root)
    path = root / f"{STEMS['glaive']}-data.json"
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    path.unlink()
    again = convert_nestful(root)
    assert [t.to_json() for t in again.tools] == [t.to_json() for t in first.tools]
    assert [t.to_json() for t in again.tasks] == [t.to_json() for t in first.tasks]


def test_names_and_schema_helpers():
    assert tool_name("RentalCars.GetCarsAvailable") == "rentalcars_getcarsavailable"
    assert tool_name("WeatherAPI.com_Forecast_Weather_API") == "weatherapi_com_forecast_weather_api"
    assert tool_name("👋") == "x"
    long = "A" * 70
    assert tool_name(long) == "a" * 64
    assert tool_name(long, {"a" * 64}) == "a" * 62 + "_2"
    assert tool_name("a-b", {"a_b", "a_b_2"}) == "a_b_3"
    assert parameter_schema({}) == {"type": "object", "properties": {}, "required": []}


def test_slug_clashes_get_suffixes(tmp_path):
    files = {("glaive", "spec"): [dict(PACE, name="get-x"), dict(PACE, name="get_x")],
             ("glaive", "data"): [{"input": "q", "output": [_step("get_x"), _step("get-x")]}]}
    dom = convert_nestful(_write(tmp_path, files))
    assert [t.name for t in dom.tools] == ["get_x", "get_x_2"]
    assert dom.tasks[0].required == ("get_x_2", "get_x")


def test_hostile_rows_are_refused_naming_file_and_row(tmp_path):
    hostile = [
        {"input": "", "output": [_step("calculate_route")]},
        {"input": "q", "output": [_step("var_result")]},  # no tool called: no gold set
        {"input": "q", "output": [_step("calculate_route"), _step("no_such_tool")]},
        {"input": "q", "output": "calculate_route"},
        {"input": "q", "output": [{"arguments": {}}]},
        "not an object",
    ]
    bad_spec = [ROUTE, {"description": "nameless"}, dict(PACE, query_parameters=[]),
                dict(PACE, name="p2", query_parameters={"x": {"type": "string", "required": "yes"}})]
    root = _write(tmp_path, {**GOOD, ("glaive", "data"): hostile, ("glaive", "spec"): bad_spec,
                             ("sgd", "data"): "[{\n  oops"})
    (root / f"{STEMS['executable']}-spec.json").unlink()
    with pytest.raises(SourceError) as err:
        convert_nestful(root)
    msg = str(err.value)
    data = f"{root / STEMS['glaive']}-data.json: query"
    spec = f"{root / STEMS['glaive']}-spec.json: tool"
    for expected in (f"{data} #0: `input` (the query) missing or empty",
                     f"{data} #1: `output` calls no tool (no gold set)",
                     f"{data} #2: called tool 'no_such_tool' is in no *-spec.json",
                     f"{data} #3: `output` (the call sequence) missing or empty",
                     f"{data} #4: output step #0 has no `name`",
                     f"{data} #5 is str, expected an object",
                     f"{spec} #1: `name` missing",
                     f"{spec} #2: `query_parameters` is not an object",
                     f"{spec} #3: parameter 'x': `type` must be a string and `required` a boolean",
                     f"{root / STEMS['sgd']}-data.json:2: not JSON",
                     f"{root / STEMS['executable']}-spec.json"):
        assert expected in msg, expected
    # the executable queries call tools whose spec is missing: named too
    assert f"{root / STEMS['executable']}-data.json: query #0: called tool 'SkyScrapperSearchAirport'" in msg


def test_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(SourceError, match="no such folder .*data/sources/nestful"):
        convert_nestful(tmp_path / "nope")


def test_a_missing_file_is_refused_naming_it(tmp_path):
    root = _write(tmp_path, GOOD)
    (root / f"{STEMS['sgd']}-data.json").unlink()
    with pytest.raises(SourceError, match="non-executable-sgd-data.json"):
        convert_nestful(root)


def test_the_committed_folder():
    """The counts SOURCE.md states, and a round trip through the task format."""
    dom = convert_nestful(COMMITTED)
    assert len(dom.tools) == 133 and len({t.name for t in dom.tools}) == 133
    assert all(len(t.name) <= 64 and t.kind == "read" for t in dom.tools)
    assert len(dom.tasks) == 300 and len({t.id for t in dom.tasks}) == 300
    per = {}
    for t in dom.tasks:
        per[t.meta["collection"]] = per.get(t.meta["collection"], 0) + 1
    assert per == {"executable": 85, "glaive": 169, "sgd": 46}
    sizes = {}
    for t in dom.tasks:
        sizes[len(t.required)] = sizes.get(len(t.required), 0) + 1
    assert sizes == {1: 1, 2: 173, 3: 67, 4: 57, 6: 2}
    assert sum(len(t.meta["calls"]) for t in dom.tasks) == 797
    gold = set().union(*(t.required for t in dom.tasks))
    assert len(gold) == 132 and {t.name for t in dom.tools} - gold == {"search_book_reviews"}
    groups = {}
    for t in dom.tasks:
        groups.setdefault(t.group, set()).add(t.meta["collection"])
    assert len(groups) == 22 and len({t.meta["api_group"] for t in dom.tasks}) == 21
    glaive = [g for g, cs in groups.items() if "glaive" in cs]
    assert len(glaive) == 1 and groups[glaive[0]] == {"glaive"}
    by_id = {t.id: t for t in dom.tasks}
    # hand-checked from executable-data.json's first query (flights New York -> London, then hotels)
    assert by_id["executable-0"].required == ("skyscrappersearchairport", "skyscrapperflightsearch",
                                             "tripadvisorsearchlocation", "tripadvisorsearchhotels")
    assert by_id["sgd-0"].required == ("rentalcars_getcarsavailable", "rentalcars_reservecar")
    for t in dom.tasks:  # no fold group splits a gold tool
        assert all(groups_of == t.group for g in t.required
                   for groups_of in {u.group for u in dom.tasks if g in u.required})
    assert convert_nestful(COMMITTED).tasks == dom.tasks


def test_the_committed_folder_round_trips(tmp_path):
    dom = convert_nestful(COMMITTED)
    write_domain(dom, tmp_path / "out")
    back = read_domain(tmp_path / "out", ["read"])
    assert [t.to_json() for t in back.tools] == [t.to_json() for t in dom.tools]
    assert [t.to_json() for t in back.tasks] == [t.to_json() for t in dom.tasks]
