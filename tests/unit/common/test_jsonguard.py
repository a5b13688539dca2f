"""One untrusted-JSON guard: the task-format reader and the runtime's request reader refuse the same depth."""

import json
import shutil

import pytest

from camdf.common.jsonguard import MAX_DEPTH, check_depth
from camdf.data.io import DomainFormatError, read_domain
from camdf.runtime.jsonio import parse_json


def _nested(n: int) -> str:
    return "[" * n + "]" * n


def test_the_request_reader_accepts_max_depth_and_refuses_one_more():
    accepted = parse_json(('{"tools": ' + _nested(MAX_DEPTH - 1) + "}").encode(), "request")
    assert accepted == {"tools": json.loads(_nested(MAX_DEPTH - 1))}
    # the outer object is level 1, so the MAX_DEPTH-th bracket (column 11 + MAX_DEPTH - 1) is one too many
    with pytest.raises(ValueError, match=rf"^request: line 1 column {10 + MAX_DEPTH}: nested deeper than {MAX_DEPTH} levels$"):
        parse_json(('{"tools": ' + _nested(MAX_DEPTH) + "}").encode(), "request")


def test_brackets_in_strings_and_escapes_do_not_count():
    check_depth(b'{"q": "' + b"[" * (2 * MAX_DEPTH) + b'\\"[["}', "request")
    with pytest.raises(ValueError, match=f"x: line 2 column {MAX_DEPTH}: "):  # line 1 holds level 1
        check_depth(b"[\n" + b"[" * MAX_DEPTH, "x")


@pytest.mark.parametrize("extra, refused", [(0, False), (1, True)])
def test_the_task_reader_has_the_same_limit(fixture_domains, tmp_path, extra, refused):
    folder = tmp_path / "valid_user"
    shutil.copytree(fixture_domains / "valid_user", folder)
    tasks = folder / "tasks.jsonl"
    lines = tasks.read_text().splitlines()
    first = json.loads(lines[0])
    # the line's object and ``meta`` are two levels: MAX_DEPTH - 2 arrays fill the limit exactly
    deep = json.dumps({**first, "meta": {"d": "@"}}).replace('"@"', _nested(MAX_DEPTH - 2 + extra))
    tasks.write_text("\n".join([deep, *lines[1:]]) + "\n")
    if not refused:
        assert len(read_domain(folder).tasks) == len(lines)
        return
    with pytest.raises(DomainFormatError, match=f"tasks.jsonl:1: .*nesting deeper than {MAX_DEPTH} levels"):
        read_domain(folder)
