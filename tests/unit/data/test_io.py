"""Reader, validator and writer of the task format, on hand-made fixture folders."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from camdf.data import DomainFormatError, read_domain, write_domain
from camdf.pipeline.data_stage import build_domain

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "domains"
MALFORMED = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.txt").is_file())


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_there_are_at_least_15_malformed_folders():
    assert len(MALFORMED) >= 15


@pytest.mark.parametrize("name", MALFORMED)
def test_cli_refuses_malformed_folder_with_every_problem(name, tmp_path):
    folder = FIXTURES / name
    before = _snapshot(FIXTURES)
    proc = subprocess.run(
        [sys.executable, "-m", "camdf.cli", "data", "validate", str(folder)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    expected = (folder / "expected.txt").read_text().splitlines()
    got = proc.stderr.splitlines()
    assert got[0].startswith(f"camdf data validate: {folder}: refused, {len(expected)} problem(s)")
    assert got[1:] == expected
    assert _snapshot(FIXTURES) == before


@pytest.mark.parametrize("name", MALFORMED)
def test_data_stage_writes_nothing_for_malformed_folder(name, tmp_path):
    out = tmp_path / "data" / name
    with pytest.raises(DomainFormatError) as err:
        build_domain(lambda: read_domain(FIXTURES / name), out, config={"name": name})
    assert err.value.problems == (FIXTURES / name / "expected.txt").read_text().splitlines()
    assert not out.exists()
    leftovers = list((tmp_path / "data").iterdir()) if (tmp_path / "data").exists() else []
    assert leftovers == []


def test_valid_user_domain_loads():
    dom = read_domain(FIXTURES / "valid_user")
    assert dom.name == "valid_user"
    assert [t.name for t in dom.tools] == [
        "lookup_account", "list_invoices", "search_help_center", "convert_currency", "refund_invoice"
    ]
    assert dom.acquirable == ["lookup_account", "list_invoices", "search_help_center", "convert_currency"]
    by_id = {t.id: t for t in dom.tasks}
    assert by_id["u-3"].alternatives == (("lookup_account", "list_invoices"),)
    assert by_id["u-4"].required == ()
    assert dom.candidates_of(by_id["u-5"]) == ["lookup_account", "search_help_center"]
    assert dom.candidates_of(by_id["u-1"]) == dom.acquirable
    assert dom.tool_by_name["search_help_center"].cost is None
    assert dom.tool_by_name["list_invoices"].cost == 2.5


def test_non_acquirable_required_is_dropped_and_counted(tmp_path):
    src = FIXTURES / "valid_user"
    folder = tmp_path / "with_write"
    folder.mkdir()
    (folder / "catalog.json").write_text((src / "catalog.json").read_text())
    (folder / "tasks.jsonl").write_text(
        '{"id": "a", "text": "refund", "required": ["lookup_account", "refund_invoice"]}\n'
        '{"id": "b", "text": "refund again", "required": ["refund_invoice"]}\n'
    )
    dom = read_domain(folder)
    assert [t.required for t in dom.tasks] == [("lookup_account",), ()]
    assert dom.dropped_required == {"refund_invoice": 2}
    every_kind = read_domain(folder, acquirable_kinds=("read", "write", "generic"))
    assert every_kind.tasks[1].required == ("refund_invoice",)
    assert every_kind.dropped_required == {}


def test_round_trip_through_writer_and_reader(tmp_path):
    dom = read_domain(FIXTURES / "valid_user")
    out = write_domain(dom, tmp_path / "copy")
    again = read_domain(out)
    assert again.tools == dom.tools
    assert again.tasks == dom.tasks
    assert (again.name, again.source) == (dom.name, dom.source)
    # A second write over an existing folder replaces it whole and leaves no temporary folder behind.
    write_domain(again, tmp_path / "copy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy"]


def test_bad_acquirable_kind_is_refused():
    with pytest.raises(ValueError, match="acquirable_kinds: unknown kind"):
        read_domain(FIXTURES / "valid_user", acquirable_kinds=("read", "readonly"))


def test_missing_folder_is_refused(tmp_path):
    with pytest.raises(DomainFormatError, match="not a folder"):
        read_domain(tmp_path / "nope")
