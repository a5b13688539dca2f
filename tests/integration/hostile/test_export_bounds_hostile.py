"""Re-signed exports: an exported policy folder's model text is bounded by the project before anything reads it.

A real fitted policy (CAM-DF's LightGBM rule) is exported; each case rewrites one thing in a copy of the
folder - the LightGBM model text of ``boosters/0.txt`` (its ``tree_sizes`` recomputed, so that only the
mutation is wrong), a manifest nested 100k deep, a symlink loop - and rewrites the manifest's SHA-256 as
anyone can. ``camdf select`` (a subprocess: LightGBM's own parser aborts the process on some of these texts)
must exit 2 with one line naming the file and what is wrong, never a traceback or a SIGABRT (134), and
``load_policy`` must raise a ValueError naming the file. Bad ``CAMDF_SERVE_*`` values stop the served model's
scoring server process (MLflow's ``uvicorn`` child, run as ``mlflow models serve`` runs it) with one line and
exit 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from camdf.runtime import StopPolicy, load_policy
from camdf.runtime.export import MANIFEST, export_policy
from camdf.runtime.serve_limits import INFLIGHT_ENV, READ_TIMEOUT_ENV

from ...unit.core.test_theory import _family

BOOSTER = "boosters/0.txt"
REQUEST = {"tools": [{"name": n} for n in "abcd"], "scores": [0.9, 0.6, 0.3, 0.1], "costs": [1.0, 1.0, 1.0, 1.0]}
#: The tree each mutation edits (the exported booster has 50 trees of 2 leaves).
TREE = 3


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    policy = StopPolicy(method="camdf", lam=0.2).fit(_family(60, True), costs={"x": 6.0})
    return export_policy(policy, tmp_path_factory.mktemp("export") / "policy", source={"uri": "fixture://camdf"})


def _resign(folder: Path, rel: str) -> None:
    """Rewrite the manifest's SHA-256 of ``rel``: what anyone who edits the folder can do."""
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"][rel] = hashlib.sha256((folder / rel).read_bytes()).hexdigest()
    (folder / MANIFEST).write_text(json.dumps(manifest))


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    heads = [i for i, line in enumerate(lines) if line.startswith("Tree=")]
    return list(zip(heads, heads[1:] + [lines.index("end of trees")]))


def _with_sizes(lines: list[str]) -> list[str]:
    """``lines`` with ``tree_sizes`` made the blocks' lengths again (LightGBM seeks by them)."""
    sizes = [sum(len(line) + 1 for line in lines[a:b]) for a, b in _blocks(lines)]
    at = next(i for i, line in enumerate(lines) if line.startswith("tree_sizes="))
    return lines[:at] + ["tree_sizes=" + " ".join(map(str, sizes))] + lines[at + 1:]


def _field(key: str, value):
    """A mutation setting field ``key`` of tree :data:`TREE` to ``value`` (a string, or a function of the old);
    the sizes are then right (only the field is wrong)."""
    def mutate(lines: list[str]) -> list[str]:
        a, b = _blocks(lines)[TREE]
        out = list(lines)
        i = next(i for i in range(a, b) if lines[i].startswith(f"{key}="))
        old = lines[i].partition("=")[2]
        out[i] = f"{key}={value(old) if callable(value) else value}"
        return _with_sizes(out)
    return mutate


def _truncate_tree(lines: list[str]) -> list[str]:
    """Tree :data:`TREE` cut after its ``num_leaves`` line."""
    a, b = _blocks(lines)[TREE]
    return _with_sizes(lines[:a + 2] + [""] + lines[b:])


def _cut_file(lines: list[str]) -> list[str]:
    """The text cut in the middle of tree :data:`TREE` (no ``end of trees``, sizes left as they were)."""
    a, _ = _blocks(lines)[TREE]
    return lines[:a + 4]


def _many_trees(count: int):
    """Tree 0 repeated ``count`` times."""
    def mutate(lines: list[str]) -> list[str]:
        blocks = _blocks(lines)
        a, b = blocks[0]
        body = lines[a + 1:b]
        trees = [line for k in range(count) for line in [f"Tree={k}", *body]]
        return _with_sizes(lines[:a] + trees + lines[blocks[-1][1]:])
    return mutate


def _header(key: str, value: str):
    def mutate(lines: list[str]) -> list[str]:
        return [f"{key}={value}" if line.startswith(f"{key}=") else line for line in lines]
    return mutate


# (mutation of the model text's lines, a phrase the one line must hold after the file's name)
MODEL_TEXTS = {
    "num_leaves-huge": (_field("num_leaves", "2000000000"), f"tree {TREE}: num_leaves=2000000000 but 2 leaf values"),
    "num_leaves-negative": (_field("num_leaves", "-7"), f"tree {TREE}: num_leaves=-7 but 2 leaf values"),
    "num_leaves-zero": (_field("num_leaves", "0"), f"tree {TREE}: num_leaves=0 but 2 leaf values"),
    "num_leaves-inconsistent": (_field("num_leaves", "3"), f"tree {TREE}: num_leaves=3 but 2 leaf values"),
    "num_leaves-eleven-digits": (_field("num_leaves", "99999999999"), f"tree {TREE}: num_leaves: expected integers"),
    "leaves-huge-both": (lambda lines: _field("leaf_value", " ".join(["0.5"] * 300_000))(
        _field("num_leaves", "300000")(lines)), f"tree {TREE}: num_leaves: expected values in [1, 131072]"),
    "feature-out-of-range": (_field("split_feature", "22"), f"tree {TREE}: split_feature: expected values in [0, 21]"),
    "feature-negative": (_field("split_feature", "-1"), f"tree {TREE}: split_feature: expected values in [0, 21]"),
    "feature-huge": (_field("split_feature", "2147483647"), f"tree {TREE}: split_feature"),
    "max-feature-idx-huge": (_header("max_feature_idx", "2000000000"), "max_feature_idx"),
    "threshold-nan": (_field("threshold", "nan"), f"tree {TREE}: threshold: expected decimal numbers"),
    "threshold-inf": (_field("threshold", "inf"), f"tree {TREE}: threshold: expected decimal numbers"),
    "threshold-overflow": (_field("threshold", "1e999"), f"tree {TREE}: threshold: expected finite values"),
    "leaf-value-nan": (_field("leaf_value", lambda old: "nan " + old.split()[1]),
                       f"tree {TREE}: leaf_value: expected decimal numbers"),
    "leaf-value-inf": (_field("leaf_value", lambda old: old.split()[0] + " -inf"),
                       f"tree {TREE}: leaf_value: expected decimal numbers"),
    "leaf-value-overflow": (_field("leaf_value", lambda old: "-1e400 " + old.split()[1]),
                            f"tree {TREE}: leaf_value: expected finite values"),
    "child-out-of-range": (_field("left_child", "5"), f"tree {TREE}: left_child"),
    "child-cycle": (_field("left_child", "0"), f"tree {TREE}: left_child/right_child"),
    "num_cat-huge": (_field("num_cat", "2000000000"), f"tree {TREE}: num_cat"),
    "truncated-tree": (_truncate_tree, f"tree {TREE}: num_leaves=2 but 0 leaf values"),
    "truncated-file": (_cut_file, "expected an 'end of trees' line"),
    "tree-count-absurd": (_many_trees(10_001), "10001 trees, more than the 10000"),
    "tree-sizes-absurd": (_header("tree_sizes", " ".join(["364"] * 200_000)), "tree_sizes: expected 50 sizes"),
    "huge-line-leaf-values": (_field("leaf_value", lambda old: " ".join(["0.5"] * 2_000_000)),
                              f"tree {TREE}: num_leaves=2 but 2000000 leaf values"),
    "huge-line-header": (_header("feature_names", " ".join(["x"] * 5_000_000)), "feature_names: expected 22 entries"),
    "huge-line-junk": (lambda lines: lines[:3] + ["x" * 20_000_000] + lines[3:], "header line 'xxxx"),
}


def _tampered(exported: Path, tmp_path: Path, mutate=None, raw: bytes | None = None) -> Path:
    folder = tmp_path / "policy"
    shutil.copytree(exported, folder)
    path = folder / BOOSTER
    if raw is None:
        raw = "\n".join(mutate(path.read_text().split("\n"))).encode()
    path.write_bytes(raw)
    _resign(folder, BOOSTER)
    return folder


def _select(folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CAMDF_TRACEBACK": ""}
    return subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", str(folder)],
                          input=json.dumps(REQUEST), env=env, capture_output=True, text=True, timeout=300)


def _refused(folder: Path, *phrases: str) -> str:
    """``camdf select`` refuses ``folder`` in one line holding ``phrases`` (exit 2); ``load_policy`` likewise."""
    done = _select(folder)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stdout == "" and "Traceback" not in done.stderr, done.stderr[-2000:]
    line = done.stderr.strip()
    assert "\n" not in line and len(line) < 600, line[:2000]
    for phrase in phrases:
        assert phrase in line, line
    with pytest.raises(ValueError) as err:
        load_policy(str(folder))
    message = str(err.value)
    assert "\n" not in message and all(phrase in message for phrase in phrases), message[:600]
    return line


def test_the_untampered_export_decides(exported, tmp_path):
    """The control: the folder re-signed without a change loads and decides."""
    folder = _tampered(exported, tmp_path, lambda lines: lines)
    done = _select(folder)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    assert json.loads(done.stdout)["depth"] >= 1
    assert load_policy(str(folder)).select(**REQUEST).depth >= 1


@pytest.mark.parametrize("case", sorted(MODEL_TEXTS))
def test_a_resigned_model_text_is_refused_naming_the_file(case, exported, tmp_path):
    mutate, phrase = MODEL_TEXTS[case]
    folder = _tampered(exported, tmp_path, mutate)
    _refused(folder, f"{folder / BOOSTER}: {phrase}")


@pytest.mark.parametrize("raw", [b"\xff\xfe tree", b"", b"tree\n" + b"\0" * 100], ids=["not-utf8", "empty", "nul"])
def test_a_resigned_booster_that_is_no_model_text_is_refused(raw, exported, tmp_path):
    folder = _tampered(exported, tmp_path, raw=raw)
    _refused(folder, f"{folder / BOOSTER}: ", "expected LightGBM's text model format")


def _deep(text: str, depth: int) -> str:
    return text[0] * depth + text[1] * depth


@pytest.mark.parametrize("body", ["list", "object"])
def test_a_deeply_nested_manifest_is_refused_naming_it(body, exported, tmp_path):
    folder = tmp_path / "policy"
    shutil.copytree(exported, folder)
    deep = _deep("[]", 100_000) if body == "list" else '{"a":' * 100_000 + "1" + "}" * 100_000
    (folder / MANIFEST).write_text(deep)
    _refused(folder, f"{folder / MANIFEST}: ", "nested")


def test_a_deeply_nested_policy_json_is_refused_naming_it(exported, tmp_path):
    folder = tmp_path / "policy"
    shutil.copytree(exported, folder)
    (folder / "policy.json").write_text(_deep("[]", 100_000))
    _resign(folder, "policy.json")
    _refused(folder, f"{folder / 'policy.json'}: ", "not JSON")


def _loop_booster(folder: Path) -> Path:
    (folder / BOOSTER).unlink()
    os.symlink("1.txt", folder / BOOSTER)
    os.symlink("0.txt", folder / "boosters" / "1.txt")
    return folder / BOOSTER


def _loop_folder(folder: Path) -> Path:
    shutil.rmtree(folder / "boosters")
    os.symlink("boosters", folder / "boosters")
    return folder / BOOSTER


def _loop_manifest(folder: Path) -> Path:
    (folder / MANIFEST).unlink()
    os.symlink("manifest.b", folder / MANIFEST)
    os.symlink(MANIFEST, folder / "manifest.b")
    return folder / MANIFEST


@pytest.mark.parametrize("make", [_loop_booster, _loop_folder, _loop_manifest], ids=["file", "folder", "manifest"])
def test_a_symlink_loop_is_refused_naming_the_file(make, exported, tmp_path):
    folder = tmp_path / "policy"
    shutil.copytree(exported, folder)
    named = make(folder)
    line = _refused(folder, f"{named}:")
    assert "symlink loop" in line or "symbolic links" in line, line


# --- the served model's settings --------------------------------------------------------------------------

BAD_SETTINGS = [(INFLIGHT_ENV, "0"), (INFLIGHT_ENV, "2.5"), (INFLIGHT_ENV, "99999"), (INFLIGHT_ENV, "lots"),
                (READ_TIMEOUT_ENV, "nan"), (READ_TIMEOUT_ENV, "-1"), (READ_TIMEOUT_ENV, "inf"),
                (READ_TIMEOUT_ENV, "ten")]


@pytest.fixture(scope="module")
def model(exported, tmp_path_factory) -> Path:
    """A pyfunc model folder of the exported policy, saved as :func:`camdf.runtime.publish.log_policy` logs one
    (models from code: ``served.py``, the policy's JSON numbers as an artifact), without a store or a wheel."""
    import mlflow.pyfunc

    from camdf.runtime.policy_file import POLICY_ARTIFACT, write_policy
    from camdf.runtime.publish import SERVED

    tmp = tmp_path_factory.mktemp("served")
    path = write_policy(load_policy(str(exported)), tmp / "policy.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlflow.pyfunc.save_model(str(tmp / "model"), python_model=str(SERVED), artifacts={POLICY_ARTIFACT: str(path)})
    return tmp / "model"


@pytest.mark.parametrize("name,value", BAD_SETTINGS, ids=[f"{n}={v}" for n, v in BAD_SETTINGS])
def test_a_bad_serve_setting_stops_the_server_in_one_line(name, value, model, tmp_path):
    """The scoring server process exactly as ``mlflow models serve --env-manager local`` starts it (``uvicorn``
    on MLflow's app, the model folder in ``__pyfunc_model_path__``) stops at load: exit 2, one line."""
    from mlflow.pyfunc.scoring_server import _SERVER_MODEL_PATH

    env = {**os.environ, _SERVER_MODEL_PATH: str(model), name: value,
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(Path(sys.executable).parent / "uvicorn"), "--host", "127.0.0.1", "--port", "0",
                           "--workers", "1", "mlflow.pyfunc.scoring_server.app:app"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    ours = [line for line in done.stderr.splitlines() if name in line]
    assert len(ours) == 1, done.stderr[-3000:]
    assert ours[0].startswith(f"camdf served model: {name}={value!r}: expected "), ours[0]
