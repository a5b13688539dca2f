"""The commit a run is stamped with: `-dirty` for a changed tracked file, but not for the shipped policy and ranker
that `make reproduce` itself rewrites before the tables are stamped."""

import subprocess
from pathlib import Path

from camdf.pipeline.provenance import git_commit


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(root)})


def test_only_a_change_outside_the_shipped_models_makes_the_checkout_dirty(tmp_path):
    files = ["camdf/runtime/ranker_model/manifest.json", "camdf/runtime/default_policy/manifest.json",
             "camdf/rankers/crosscat.py"]
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "x")
    clean = git_commit(tmp_path)
    assert len(clean) == 40 and not clean.endswith("-dirty")
    for rel in files[:2]:
        (tmp_path / rel).write_text('{"git_commit": "refitted"}\n')
    assert git_commit(tmp_path) == clean
    (tmp_path / files[2]).write_text("changed\n")
    assert git_commit(tmp_path) == clean + "-dirty"
