"""`camdf export` and reading an exported folder: the same decisions, every file checked against the manifest."""

import json
import shutil

import pytest

from camdf.cli.commands import main
from camdf.runtime import load_policy
from camdf.runtime.export import export_policy

from .conftest import CATALOG, LAM, QUERY


def test_the_folder_holds_data_only_and_decides_as_the_policy(fitted_policy, policy_dir, expected):
    files = sorted(p.relative_to(policy_dir).as_posix() for p in policy_dir.rglob("*") if p.is_file())
    assert files == ["boosters/0.txt", "manifest.json", "policy.json"]
    assert (policy_dir / "boosters" / "0.txt").read_text().startswith("tree\n")  # LightGBM's text format
    assert "tree\n" not in (policy_dir / "policy.json").read_text()
    manifest = json.loads((policy_dir / "manifest.json").read_text())
    assert manifest["source"] == {"uri": "fixture://camdf", "version": "7"} and manifest["method"] == "camdf"
    back = load_policy(str(policy_dir))
    assert back.select(CATALOG, query=QUERY, lam=LAM).exposed == expected
    assert back.origin_["version"] == "7"


def test_the_cli_exports_a_loadable_folder_and_refuses_a_used_one(policy_dir, expected, tmp_path, capsys):
    assert main(["export", str(policy_dir), str(tmp_path / "again")]) == 0
    assert "camdf policy exported" in capsys.readouterr().out
    assert load_policy(str(tmp_path / "again")).select(CATALOG, query=QUERY, lam=LAM).exposed == expected
    assert main(["export", str(policy_dir), str(tmp_path / "again")]) == 2
    assert "exists and is not an empty folder" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nowhere"), str(tmp_path / "x")]) == 2
    assert "no such model folder" in capsys.readouterr().err and not (tmp_path / "x").exists()


@pytest.mark.parametrize("damage, says", [
    (lambda d: (d / "boosters" / "0.txt").write_text("tree\nversion=v4\n"), "boosters/0.txt: its SHA-256 differs"),
    (lambda d: (d / "policy.json").unlink(), "policy.json: missing"),
    (lambda d: (d / "manifest.json").write_text(json.dumps({"kind": "camdf-policy-export", "format": 1, "files": {
        "policy.json": "0", "../x": "0"}})), "leads outside the folder"),
    (lambda d: (d / "manifest.json").write_text("{"), "manifest.json: not JSON"),
])
def test_a_damaged_folder_is_refused_naming_the_file(fitted_policy, tmp_path, damage, says):
    folder = export_policy(fitted_policy, tmp_path / "p")
    damage(folder)
    with pytest.raises(ValueError, match=says):
        load_policy(str(folder))


def test_export_leaves_nothing_behind_when_it_fails(tmp_path):
    with pytest.raises(Exception):
        export_policy(object(), tmp_path / "p")
    assert list(tmp_path.iterdir()) == []
    shutil.rmtree(tmp_path, ignore_errors=True)
