"""The worked example of docs/task-format.md ("Derived labels") derives what the document says."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from camdf.data.model import Task
from camdf.integrations.registry import get_executable
from camdf.sufficiency import derive

DOC = Path(__file__).resolve().parents[3] / "docs" / "task-format.md"


def _example() -> dict:
    section = DOC.read_text(encoding="utf-8").split("## Derived labels", 1)[1].split("\n## ", 1)[0]
    return json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))


def test_the_worked_example_derives_the_documented_set(converted):
    line = _example()
    assert set(line["meta"]) == {"gold_actions", "communicate_info"}
    task = Task(id=line["id"], text=line["text"], required=tuple(line["required"]), split=line["split"],
                meta=line["meta"])
    exe = get_executable("retail")
    r = derive(dataclasses.replace(converted["retail"], name="my_shop", tasks=[task]), exe, None).results[0]
    assert r.executable and r.required == sorted(line["required"], key=r.tools.index)
    assert r.audit == {}
    # Stating the address makes the profile unnecessary, as the document says.
    stated = dataclasses.replace(task, text=task.text + " Ship it to 159 Hickory Lane, Suite 995, Charlotte.")
    r2 = derive(dataclasses.replace(converted["retail"], tasks=[stated]), exe, None).results[0]
    assert "get_user_details" not in r2.required and "get_order_details" in r2.required
