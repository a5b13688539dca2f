"""Hostile requests to `camdf select`: each refused with exit 2 and one line naming the field, never a traceback.

The policy is the one the train stage logs (the ``trained`` fixture). Most cases run the command's
own ``main`` in this process (its stdin and streams swapped for the case's); the ones marked
``shell`` run ``python -m camdf.cli`` as a user would, to hold the exit code and streams end to end.
"""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from camdf.cli.commands import main

from ..test_pipeline import ROOT

TOOLS = [{"name": "get_user_details", "description": "Get the details of a user"},
         {"name": "get_order_details", "description": "Get the status and items of an order"},
         {"name": "cancel_pending_order", "description": "Cancel a pending order"}]
GOOD = {"tools": TOOLS, "scores": [0.9, 0.5, 0.1], "costs": [1.0, 1.0, 1.0]}


def _with(**fields) -> bytes:
    return json.dumps({**GOOD, **fields}).encode()


def _deep(n: int) -> bytes:
    return b'{"tools": ' + b"[" * n + b"]" * n + b"}"


# (id, stdin bytes, extra argv, phrases the one-line refusal must hold)
#: A bad alpha is refused whatever the champion: as out of range by a rule with the dial, as a dial the rule does
#: not have by any other (the champion of the train stage may be a prefix or a set rule).
ALPHA_REFUSED = ("alpha: must be a number in (0, 1)", "alpha: only the camdf_risk / risk_set policy has a target miss rate")

REQUESTS = [
    ("invalid-json", b'{"tools": [', [], ["request: line 1 column", "invalid JSON"]),
    ("empty-input", b"", [], ["request: line 1 column 1", "invalid JSON"]),
    ("whitespace-only", b"  \n\n ", [], ["request: line 3", "invalid JSON"]),
    ("trailing-garbage", _with() + b" x", [], ["request: line 1", "Extra data"]),
    ("bom", b"\xef\xbb\xbf" + _with(), [], ["request: line 1 column 1", "BOM"]),
    ("not-utf8", b'{"tools": [{"name": "caf\xe9"}]}', [], ["request: line 1 column", "not UTF-8", "0xe9"]),
    ("not-utf8-line-3", b"{\n\n\xff}", [], ["request: line 3 column 1", "not UTF-8"]),
    ("5000-digit-int", b'{"tools": [], "scores": [' + b"9" * 5000 + b"]}", [], ["request: line 1", "digits"]),
    ("100k-deep", _deep(100_000), [], ["request: line 1 column", "nested deeper than 100"]),
    ("101-deep", _deep(100), [], ["nested deeper than 100"]),
    ("deep-in-a-string-is-text", _with(query="[" * 100_000), [], None),  # brackets in a string: accepted
    ("top-level-number", b"3", [], ["request: expected a JSON object with `tools`"]),
    ("top-level-string", b'"tools"', [], ["request: expected a JSON object with `tools`"]),
    ("top-level-null", b"null", [], ["request: expected a JSON object with `tools`"]),
    ("empty-batch", b"[]", [], ["requests: expected a non-empty list"]),
    ("batch-with-a-number", b"[" + _with() + b", 7]", [], ["requests[1]: expected a JSON object"]),
    ("unknown-field", _with(tool=[]), [], ["tool: unknown field"]),
    ("no-tools", json.dumps({"scores": [1.0]}).encode(), [], ["tools: expected a non-empty list"]),
    ("tools-not-a-list", _with(tools={"name": "x"}), [], ["tools: expected a non-empty list"]),
    ("tools-empty", _with(tools=[]), [], ["tools: expected a non-empty list"]),
    ("tool-a-string", _with(tools=["get_user_details", *TOOLS[1:]]), [], ["tools[0]: expected an object"]),
    ("tool-without-name", _with(tools=[{"description": "x"}, *TOOLS[1:]]), [], ["tools[0].name: must be a non-empty"]),
    ("tool-name-blank", _with(tools=[{"name": "  "}, *TOOLS[1:]]), [], ["tools[0].name"]),
    ("tool-name-a-number", _with(tools=[{"name": 7}, *TOOLS[1:]]), [], ["tools[0].name"]),
    ("tool-name-huge-list", _with(tools=[{"name": list(range(100_000))}, *TOOLS[1:]]), [], ["tools[0].name"]),
    ("tool-description-a-list", _with(tools=[{"name": "a", "description": ["x"]}, *TOOLS[1:]]), [],
     ["tools[0].description: must be a string"]),
    ("openai-function-not-object", _with(tools=[{"type": "function", "function": "x"}, *TOOLS[1:]]), [],
     ["tools[0].function: expected an object"]),
    ("duplicate-names", _with(tools=[TOOLS[0], TOOLS[0], TOOLS[2]]), [], ["tools[1].name: duplicate tool name"]),
    ("scores-too-short", _with(scores=[1.0]), [], ["scores: length 1 does not match the 3 tools"]),
    ("scores-not-a-list", _with(scores="high"), [], ["scores: expected a list of 3 numbers"]),
    ("scores-strings", _with(scores=["a", "b", "c"]), [], ["scores[0]: expected a number"]),
    ("scores-bool", _with(scores=[True, 0.5, 0.1]), [], ["scores[0]: expected a number"]),
    ("scores-null-inside", _with(scores=[0.9, None, 0.1]), [], ["scores[1]: expected a number"]),
    ("scores-nan", b'{"tools": ' + json.dumps(TOOLS).encode() + b', "scores": [NaN, 1, 2]}', [],
     ["scores[0]: must be finite"]),
    ("scores-infinity", b'{"tools": ' + json.dumps(TOOLS).encode() + b', "scores": [1, Infinity, 2]}', [],
     ["scores[1]: must be finite"]),
    ("scores-1e400", b'{"tools": ' + json.dumps(TOOLS).encode() + b', "scores": [1, 2, 1e400]}', [],
     ["scores[2]: must be finite"]),
    ("scores-range-overflows", _with(scores=[1.7e308, -1.7e308, 0.0]), [], ["scores: max - min overflows"]),
    ("no-scores-no-query", _with(scores=None), [], ["scores: missing; give scores or a `query`"]),
    ("query-a-number", _with(scores=None, query=5), [], ["query: must be a string"]),
    ("costs-negative", _with(costs=[1.0, -1.0, 1.0]), [], ["costs[1]: must be > 0"]),
    ("costs-zero", _with(costs=[0, 1, 1]), [], ["costs[0]: must be > 0"]),
    ("costs-nan", b'{"tools": ' + json.dumps(TOOLS).encode() + b', "scores": [3, 2, 1], "costs": [1, 1, NaN]}', [],
     ["costs[2]: must be finite"]),
    ("costs-string", _with(costs=["1", 1, 1]), [], ["costs[0]: expected a number"]),
    ("costs-4000-digit-int", b'{"tools": ' + json.dumps(TOOLS).encode() + b', "scores": [3, 2, 1], "costs": [1, 1, '
     + b"9" * 4000 + b"]}", [], ["costs[2]: must be finite"]),
    ("costs-wrong-length", _with(costs=[1.0] * 4), [], ["costs: length 4 does not match the 3 tools"]),
    ("batch-second-bad", b"[" + _with() + b"," + _with(costs=[1, 1, -2]) + b"]", [], ["requests[1].costs[2]"]),
    ("lam-negative-in-request", _with(lam=-1), [], ["lam: must be a finite number >= 0"]),
    ("lam-string-in-request", _with(lam="0.1"), [], ["lam: must be a finite number >= 0"]),
    ("lam-1e400-in-request", _with()[:-1] + b', "lam": 1e400}', [], ["lam: must be a finite number >= 0"]),
    ("lam-flag-negative", _with(), ["--lam", "-1"], ["lam: must be a finite number >= 0"]),
    ("lam-flag-nan", _with(), ["--lam", "nan"], ["lam: must be a finite number >= 0"]),
    ("lam-flag-inf", _with(), ["--lam", "inf"], ["lam: must be a finite number >= 0"]),
    ("alpha-flag-zero", _with(), ["--alpha", "0"], [ALPHA_REFUSED]),
    ("alpha-flag-two", _with(), ["--alpha", "2"], [ALPHA_REFUSED]),
    ("alpha-in-request-bool", _with(alpha=True), [], [ALPHA_REFUSED]),
]


def _cli(stdin: bytes, argv: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = main(["select", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def store(trained, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", trained["uri"])
    return trained


@pytest.mark.parametrize("stdin,argv,phrases", [c[1:] for c in REQUESTS], ids=[c[0] for c in REQUESTS])
def test_bad_request_is_refused_naming_the_field(stdin, argv, phrases, store, capsys, monkeypatch):
    code, out, err = _cli(stdin, ["--policy", store["model_uri"], *argv], capsys, monkeypatch)
    if phrases is None:  # the control: a request that only looks hostile is decided
        assert code == 0, err
        answer = json.loads(out)
        assert set(answer["exposed"]) <= set(answer["ranked"])
        return
    assert code == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("camdf select: "), err
    assert len(err) < 400, err  # a megabyte of input is never echoed back
    for phrase in phrases:
        assert any(p in err for p in ((phrase,) if isinstance(phrase, str) else phrase)), err


def _folder(tmp_path: Path, kind: str) -> str:
    folder = tmp_path / "model"
    if kind == "missing":
        return str(folder)
    folder.mkdir()
    if kind == "no-mlmodel":
        return str(folder)
    if kind == "bad-yaml":
        (folder / "MLmodel").write_text("flavors: [unclosed\n")
    elif kind == "not-camdf":
        (folder / "MLmodel").write_text("flavors:\n  python_function:\n    loader_module: x\n")
    elif kind == "garbage-json":
        (folder / "MLmodel").write_text(
            "flavors:\n  python_function:\n    artifacts:\n      policy:\n        path: artifacts/policy.json\n")
        (folder / "artifacts").mkdir()
        (folder / "artifacts" / "policy.json").write_bytes(b"not json")
    elif kind == "missing-json":
        (folder / "MLmodel").write_text(
            "flavors:\n  python_function:\n    artifacts:\n      policy:\n        path: artifacts/policy.json\n")
    return str(folder)


@pytest.mark.parametrize("kind,phrase", [
    ("missing", "no such model folder"),
    ("no-mlmodel", "holds no MLmodel file"),
    ("bad-yaml", "does not describe a camdf policy model"),
    ("not-camdf", "does not describe a camdf policy model"),
    ("garbage-json", "policy.json: not JSON"),
    ("missing-json", "policy.json:1: missing file"),
])
def test_bad_policy_folder_is_refused_naming_it(kind, phrase, tmp_path, capsys, monkeypatch):
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    folder = _folder(tmp_path, kind)
    code, out, err = _cli(_with(), ["--policy", folder], capsys, monkeypatch)
    assert code == 2 and out == "", err
    assert err.startswith(f"camdf select: policy: cannot load {folder!r}") and phrase in err, err
    assert "Traceback" not in err
    if kind == "missing":
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing created


@pytest.mark.parametrize("uri,phrase", [
    ("models:/camdf-stopper@nope", "no model 'camdf-stopper' with alias 'nope'"),
    ("models:/no-such-model/3", "no version 3 of model 'no-such-model'"),
    ("runs:/0123456789abcdef/policy", "cannot load 'runs:/0123456789abcdef/policy'"),
    ("file:///nonexistent/model", "no such model folder"),
    ("", "policy: expected a model URI or folder"),
    ("   ", "policy: expected a model URI or folder"),
])
def test_bad_policy_uri_is_refused_naming_the_store(uri, phrase, store, capsys, monkeypatch):
    code, out, err = _cli(_with(), ["--policy", uri], capsys, monkeypatch)
    assert code == 2 and out == "", err
    assert err.startswith("camdf select: policy: ") and phrase in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_champion_in_a_store_that_does_not_exist_is_not_created(tmp_path, capsys, monkeypatch):
    db = tmp_path / "nowhere" / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    code, out, err = _cli(_with(), ["--policy", "models:/camdf-stopper@champion"], capsys, monkeypatch)
    assert code == 2 and "the store does not exist" in err and "make reproduce" in err, err
    assert not db.parent.exists()


@pytest.mark.parametrize("kind", ["missing", "folder", "dangling-link", "empty-file", "fifo"])
def test_bad_input_path_is_refused_naming_it(kind, store, tmp_path, capsys, monkeypatch):
    path = tmp_path / "req.json"
    if kind == "folder":
        path.mkdir()
    elif kind == "dangling-link":
        path.symlink_to(tmp_path / "gone.json")
    elif kind == "empty-file":
        path.write_bytes(b"")
    elif kind == "fifo":
        os.mkfifo(path)  # nothing writes it: a read would wait forever
    code, out, err = _cli(b"", ["--policy", store["model_uri"], "--input", str(path)], capsys, monkeypatch)
    assert code == 2 and out == "", err
    expected = {"missing": f"--input {path}:1: missing file (expected a JSON request file, or - for stdin)",
                "folder": f"--input {path}:1: a folder, not a file",
                "dangling-link": f"--input {path}:1: broken symbolic link to `{tmp_path / 'gone.json'}`",
                "empty-file": f"{path}: line 1 column 1: invalid JSON",
                "fifo": f"--input {path}:1: not a regular file"}[kind]
    assert expected in err, err


SHELL = ["invalid-json", "not-utf8", "100k-deep", "5000-digit-int", "empty-batch", "costs-negative",
         "lam-flag-negative", "tool-name-huge-list"]


@pytest.mark.parametrize("case", SHELL)
def test_shell_call_exits_2_with_one_line(case, store, tmp_path):
    """The same refusals through the real process: exit status 2, one line on stderr, nothing on stdout."""
    _, stdin, argv, phrases = next(c for c in REQUESTS if c[0] == case)
    env = {**os.environ, "MLFLOW_TRACKING_URI": store["uri"]}
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", store["model_uri"], *argv],
                          input=stdin, capture_output=True, env=env, cwd=tmp_path)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and proc.stdout == b"", err
    assert len(err.strip().splitlines()) == 1 and all(p in err for p in phrases), err
    assert list(tmp_path.iterdir()) == []  # nothing written where it ran
    assert ROOT.is_dir()
