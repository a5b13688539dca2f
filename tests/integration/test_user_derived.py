"""A user's own domain over tau2 retail's database derives its labels like the built-in domain.

The folder is written from 10 real retail tasks with nothing but the documented
fields (docs/task-format.md, "Derived labels"): a catalog whose ``domain`` is not a
built-in name, and task ``meta`` holding only ``gold_actions`` and
``communicate_info``. The domain config picks the executable domain
(``executable: retail``), not the catalog's ``domain`` string.
"""

from __future__ import annotations

import dataclasses
import json

from camdf.data.io import write_domain
from camdf.integrations.registry import get_executable
from camdf.sufficiency import derive

from .test_pipeline import _run

# The four disagreement classes (address, missing W, mistyped email, two routes), retail-12 whose gold plan
# does not execute, and five ordinary tasks.
TASKS = ["retail-39", "retail-46", "retail-37", "retail-62", "retail-12", "retail-0", "retail-5", "retail-17",
         "retail-24", "retail-80"]
NEVER = ["transfer_to_human_agents"]


def test_a_user_folder_over_retail_derives_the_built_in_g_x(tmp_path):
    exe = get_executable("retail")
    built_in = exe.convert()
    by_id = {t.id: t for t in built_in.tasks}
    tasks = [dataclasses.replace(by_id[i], id=f"shop-{n}", group=None,
                                 meta={k: by_id[i].meta[k] for k in ("gold_actions", "communicate_info")})
             for n, i in enumerate(TASKS)]
    folder = write_domain(dataclasses.replace(built_in, name="my_shop", source="a user's copy", tasks=tasks),
                          tmp_path / "src" / "my_shop")
    assert json.loads((folder / "catalog.json").read_text())["domain"] == "my_shop"

    data, out = tmp_path / "data", tmp_path / "out"
    overrides = ["pipelines.data", "domain=user_example", "domain.name=my_shop",
                 f"domain.converter.folder={folder}", f"domain.never_acquirable={json.dumps(NEVER)}",
                 "+domain.label_source=derived", "+domain.executable=retail"]
    proc = _run(overrides, out, data)
    assert "my_shop: built 9 tasks (filter kept 9, removed 1)" in proc.stdout

    reference = derive(dataclasses.replace(built_in, tasks=[by_id[i] for i in TASKS]), exe, None).by_id
    got = [json.loads(line) for line in (data / "my_shop" / "tasks.jsonl").read_text().splitlines()]
    assert [t["id"] for t in got] == [f"shop-{n}" for n, i in enumerate(TASKS) if i != "retail-12"]
    for t in got:
        ref = reference[TASKS[int(t["id"].split("-")[1])]]
        assert t["required"] == ref.required and t.get("alternatives", []) == ref.alternatives, t["id"]

    report = (data / "my_shop" / "report.md").read_text()
    assert "gold plans executable (no write raises on replay): 9 of 10" in report
    assert "removed 1 (meta.gold_executable 1)" in report
    assert "### Label audit" in report
    manifest = json.loads((data / "my_shop" / "manifest.json").read_text())["summary"]
    assert manifest["sufficiency"]["n_with_alternatives"] == sum(bool(r.alternatives) for r in reference.values())
    assert manifest["sufficiency"]["audit"]["dropped"]["find_user_id_by_email"] == 1  # retail-37's mistyped email
    assert manifest["filter"]["removed_by"] == {"meta.gold_executable": 1}


def test_keep_non_executable_keeps_the_plans_that_do_not_execute(tmp_path):
    exe = get_executable("retail")
    built_in = exe.convert()
    by_id = {t.id: t for t in built_in.tasks}
    tasks = [dataclasses.replace(by_id[i], meta={k: by_id[i].meta[k] for k in ("gold_actions", "communicate_info")})
             for i in ("retail-12", "retail-0")]
    folder = write_domain(dataclasses.replace(built_in, name="two", tasks=tasks), tmp_path / "src" / "two")
    data, out = tmp_path / "data", tmp_path / "out"
    proc = _run(["pipelines.data", "domain=user_example", "domain.name=two", f"domain.converter.folder={folder}",
                 f"domain.never_acquirable={json.dumps(NEVER)}", "+domain.label_source=derived",
                 "+domain.executable=retail", "+domain.keep_non_executable=true"], out, data)
    assert "two: built 2 tasks" in proc.stdout and "filter" not in proc.stdout
    got = [json.loads(line) for line in (data / "two" / "tasks.jsonl").read_text().splitlines()]
    assert [t["meta"]["gold_executable"] for t in got] == [False, True]


def test_a_derived_user_domain_without_executable_is_refused_naming_the_key(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    proc = _run(["pipelines.data", "domain=user_example", "+domain.label_source=derived"], out, data, check=False)
    assert proc.returncode != 0 and "domain.executable: label_source `derived` needs the executable domain" in (
        proc.stderr)
    assert not (data / "user_example").exists()
