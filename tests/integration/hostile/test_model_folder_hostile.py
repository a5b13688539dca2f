"""Tampered model folders: the project's loaders (``load_policy``, ``camdf select``) read a model folder as data.

A folder in the layout the train stage logs (``MLmodel`` naming ``artifacts/policy.json`` and
``artifacts/lean.json``) is built without MLflow (fast), then tampered with: each case is refused
with one line naming the folder's file, and nothing the tampered files ask for is run (the pickle
cases would create a marker file when unpickled).
"""

import hashlib
import io
import json
import os
import pickle
import sys
from pathlib import Path

import pytest

from camdf.cli.commands import main
from camdf.runtime import StopPolicy, load_policy
from camdf.runtime.lean import LeanPolicy, write_lean
from camdf.runtime.policy_file import write_policy

from ...unit.core.test_theory import _family
from .folders import fifo

MLMODEL = """flavors:
  python_function:
    artifacts:
      policy:
        path: {policy}
      lean:
        path: {lean}
    loader_module: mlflow.pyfunc.loaders.code_model
"""
REQUEST = {"tools": [{"name": n} for n in "abcd"], "scores": [0.9, 0.6, 0.3, 0.1], "costs": [1.0, 1.0, 1.0, 1.0]}


class _Writes:
    """Unpickling this opens (creates) the marker file: what an attacker's pickle would do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture(scope="module")
def risk():
    return StopPolicy(method="camdf_risk", lam=0.2, dials={"alpha": 0.2}).fit(_family(60, True), costs={"x": 6.0})


def _model(tmp_path: Path, risk, policy="artifacts/policy.json", lean="artifacts/lean.json") -> Path:
    folder = tmp_path / "model"
    (folder / "artifacts").mkdir(parents=True)
    write_policy(risk, folder / "artifacts" / "policy.json")
    write_lean(risk, folder / "artifacts" / "lean.json", folder / "artifacts" / "policy.json")
    (folder / "MLmodel").write_text(MLMODEL.format(policy=policy, lean=lean))
    return folder


def _select(folder: Path, batch: bool, capsys, monkeypatch) -> tuple[int, str, str]:
    body = [REQUEST, REQUEST] if batch else REQUEST
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(body).encode()), encoding="utf-8"))
    code = main(["select", "--policy", str(folder)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_untampered_folder_decides(risk, tmp_path, capsys, monkeypatch):
    """The control: the same folder before tampering loads and answers a single request and a batch."""
    folder = _model(tmp_path, risk)
    assert load_policy(str(folder)).select(**REQUEST).depth == risk.select(**REQUEST).depth
    for batch in (False, True):
        code, out, err = _select(folder, batch, capsys, monkeypatch)
        assert code == 0 and err == "", err


@pytest.mark.parametrize("how", ["load_policy", "select-single", "select-batch"])
def test_artifacts_replaced_by_a_pickle_are_refused_and_not_run(how, risk, tmp_path, capsys, monkeypatch):
    folder = _model(tmp_path, risk)
    marker = tmp_path / "pwned"
    for path in (folder / "artifacts").iterdir():
        path.write_bytes(pickle.dumps(_Writes(marker)))
    if how == "load_policy":
        with pytest.raises(ValueError) as err:
            load_policy(str(folder), lean=True)
        message = str(err.value)
    else:
        code, out, message = _select(folder, how == "select-batch", capsys, monkeypatch)
        assert code == 2 and out == "", message
        assert message.startswith("camdf select: ") and len(message.strip().splitlines()) == 1, message
    assert f"{folder / 'artifacts' / 'policy.json'}: not JSON" in message and "Traceback" not in message
    assert not marker.exists()


def _edit_mlmodel(policy=None, lean=None):
    def mutate(folder: Path, tmp_path: Path) -> None:
        text = MLMODEL.format(policy=policy or "artifacts/policy.json", lean=lean or "artifacts/lean.json")
        (folder / "MLmodel").write_text(text)
    return mutate


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "elsewhere.json"
    out.write_text("{}")
    return out


def _link_out(folder: Path, tmp_path: Path) -> None:
    (folder / "artifacts" / "policy.json").unlink()
    os.symlink(_outside(tmp_path), folder / "artifacts" / "policy.json")


def _legacy_pickle(folder: Path, tmp_path: Path) -> None:
    (folder / "artifacts" / "policy.pkl").write_bytes(pickle.dumps(_Writes(tmp_path / "pwned")))
    (folder / "artifacts" / "lean.json").unlink()
    _edit_mlmodel(policy="artifacts/policy.pkl")(folder, tmp_path)


def _rewrite(change):
    def mutate(folder: Path, tmp_path: Path) -> None:
        (folder / "artifacts" / "lean.json").unlink()  # the full policy is what is read
        path = folder / "artifacts" / "policy.json"
        numbers = json.loads(path.read_text())
        change(numbers)
        path.write_text(json.dumps(numbers))
    return mutate


def _truncate(folder: Path, tmp_path: Path) -> None:
    (folder / "artifacts" / "lean.json").unlink()
    path = folder / "artifacts" / "policy.json"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _nan_in_lean(folder: Path) -> None:
    path = folder / "artifacts" / "lean.json"
    numbers = json.loads(path.read_text())
    numbers["lam"] = float("nan")
    path.write_text(json.dumps(numbers))


# (id, mutation(folder, tmp_path), phrase of the one-line refusal)
TAMPERED = [
    ("policy-path-dotdot", _edit_mlmodel(policy="../elsewhere.json"), "path '../elsewhere.json' leads outside"),
    ("policy-path-absolute", _edit_mlmodel(policy="/etc/hostname"), "path '/etc/hostname' leads outside"),
    ("lean-path-dotdot", _edit_mlmodel(lean="../../x.json"), "artifact 'lean' path '../../x.json' leads outside"),
    ("policy-path-the-folder", _edit_mlmodel(policy="."), "path '.' leads outside"),
    ("policy-linked-out", _link_out, "artifact 'policy' path 'artifacts/policy.json' leads outside"),
    ("legacy-pickle", _legacy_pickle, "policy.pkl is a pickle"),
    ("truncated-json", _truncate, "policy.json: not JSON"),
    ("format-unknown", _rewrite(lambda n: n.update(format=2)), "format: expected an integer equal to 1"),
    ("method-unknown", _rewrite(lambda n: n["params"].update(method="os.system")), "method: expected one of"),
    ("membership-shape", _rewrite(lambda n: n["membership"].update(coef=[0.0])), "membership.coef: expected 5"),
    ("rule-params-extra", _rewrite(lambda n: n["rule"]["params"].update(evil=1)), "rule.params: expected"),
    ("policy-nan-coefficient", _rewrite(lambda n: n["membership"]["coef"].__setitem__(0, float("nan"))),
     "membership.coef[0]: expected a finite number"),
    ("lean-nan", lambda folder, _: _nan_in_lean(folder), "lean.json: lam: expected a finite number"),
    ("policy-a-fifo", lambda folder, _: fifo("artifacts/policy.json")(folder), "policy.json: not a regular file"),
    ("lean-a-fifo", lambda folder, _: fifo("artifacts/lean.json")(folder), "lean.json: not a regular file"),
]


@pytest.mark.parametrize("mutate,phrase", [c[1:] for c in TAMPERED], ids=[c[0] for c in TAMPERED])
def test_a_tampered_folder_is_refused_in_one_line_naming_it(mutate, phrase, risk, tmp_path, capsys, monkeypatch):
    folder = _model(tmp_path, risk)
    mutate(folder, tmp_path)
    before = sorted(tmp_path.rglob("*"))
    code, out, err = _select(folder, False, capsys, monkeypatch)
    assert code == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"camdf select: policy: cannot load {str(folder)!r}"), err
    assert phrase in err and "Traceback" not in err, err
    assert sorted(tmp_path.rglob("*")) == before and not (tmp_path / "pwned").exists()


def _edit_lean(folder: Path, change) -> None:
    path = folder / "artifacts" / "lean.json"
    numbers = json.loads(path.read_text())
    change(numbers)
    path.write_text(json.dumps(numbers))


def test_the_lean_form_decides_when_its_checksums_hold(risk, tmp_path):
    """The control of the two below: the untampered folder's single request is decided by its lean.json."""
    lean = load_policy(str(_model(tmp_path, risk)), lean=True)
    assert isinstance(lean, LeanPolicy)
    assert lean.select_batch([REQUEST])[0].depth == risk.select(**REQUEST).depth


def test_a_tampered_lean_json_is_refused_naming_its_checksum(risk, tmp_path, capsys, monkeypatch):
    """A number of lean.json edited by hand (its own checksum left as written): refused, not decided."""
    folder = _model(tmp_path, risk)
    _edit_lean(folder, lambda n: n.update(lam=n["lam"] * 10))
    code, out, err = _select(folder, False, capsys, monkeypatch)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"{folder / 'artifacts' / 'lean.json'}: sha256: expected the SHA-256 of its numbers" in err, err
    assert "altered" in err and "Traceback" not in err, err


@pytest.mark.parametrize("resealed", [False, True], ids=["as-written", "own-checksum-recomputed"])
def test_a_lean_json_of_another_policy_is_refused_naming_the_policy_file(resealed, risk, tmp_path, capsys,
                                                                         monkeypatch):
    """lean.json copied from the folder of another fit (its own checksum intact, or recomputed after an edit):
    its policy_sha256 is not that of the policy.json beside it."""
    other = StopPolicy(method="camdf_risk", lam=0.6, dials={"alpha": 0.3}).fit(_family(60, True), costs={"x": 6.0})
    folder, elsewhere = _model(tmp_path / "a", risk), _model(tmp_path / "b", other)
    lean = folder / "artifacts" / "lean.json"
    lean.write_bytes((elsewhere / "artifacts" / "lean.json").read_bytes())
    if resealed:
        from camdf.runtime.lean import _canonical_sha256

        _edit_lean(folder, lambda n: n.update(sha256=_canonical_sha256(n)))
    code, out, err = _select(folder, False, capsys, monkeypatch)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    expected = hashlib.sha256((folder / "artifacts" / "policy.json").read_bytes()).hexdigest()
    assert f"{lean}: policy_sha256: expected {expected}" in err, err
    assert "belongs to another policy" in err and "Traceback" not in err, err
