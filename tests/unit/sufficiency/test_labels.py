"""Derived labels on the tasks, lookups of verified sufficiency, and the data stage with label_source."""

import dataclasses
import json

import numpy as np
import pytest

from camdf.data import read_domain
from camdf.pipeline.data_stage import build_domain
from camdf.integrations.registry import get_executable
from camdf.sufficiency import is_sufficient, relabel, sufficiency_table


def test_relabel_derived_moves_the_annotation_to_meta(converted, derivations):
    dom = relabel(converted["retail"], derivations["retail"], "derived")
    by_id = derivations["retail"].by_id
    for before, after in zip(converted["retail"].tasks, dom.tasks):
        r = by_id[after.id]
        assert list(after.required) == r.required
        assert [list(a) for a in after.alternatives] == r.alternatives
        assert after.meta["annotated_required"] == [t for t in dom.acquirable if t in before.required]
        assert after.meta["derived_required"] == r.required
        assert is_sufficient(after, after.required) and not is_sufficient(after, [])
        for alt in after.alternatives:
            assert is_sufficient(after, alt)
    assert converted["retail"].tasks[0].meta.get("sufficiency") is None  # the input is not mutated


def test_relabel_annotated_keeps_required_and_adds_the_table(converted, derivations):
    dom = relabel(converted["airline"], derivations["airline"], "annotated")
    assert [t.required for t in dom.tasks] == [t.required for t in converted["airline"].tasks]
    ids, tools, table = sufficiency_table(dom)
    assert ids == [t.id for t in dom.tasks] and tools == derivations["airline"].tools
    np.testing.assert_array_equal(table, derivations["airline"].table())
    with pytest.raises(ValueError, match="label_source must be one of"):
        relabel(converted["airline"], derivations["airline"], "gold")


def test_is_sufficient_ignores_always_exposed_tools_and_needs_the_table(converted, derivations):
    dom = relabel(converted["retail"], derivations["retail"])
    task = dom.tasks[0]
    assert is_sufficient(task, list(task.required) + ["exchange_delivered_order_items"])
    with pytest.raises(ValueError, match="no sufficiency table"):
        is_sufficient(converted["retail"].tasks[0], task.required)


def test_sufficiency_table_derives_a_converted_domain_from_the_cache(converted, derivations, suff_cache):
    ids, tools, table = sufficiency_table(converted["airline"], get_executable("airline"), suff_cache)
    assert table.dtype == bool and table.shape == (50, 128)
    np.testing.assert_array_equal(table, derivations["airline"].table())


def test_data_stage_with_derived_labels(converted, derivations, suff_cache, tmp_path):
    config = {"name": "airline", "label_source": "derived", "executable": "airline",
              "acquirable_kinds": ["read", "generic"]}
    out = tmp_path / "airline"
    first = build_domain(lambda: converted["airline"], out, config, cache_dir=suff_cache)
    again = build_domain(lambda: converted["airline"], out, config, cache_dir=suff_cache)
    assert (first.cached, again.cached) == (False, True)
    assert first.summary["label_source"] == "derived"
    assert first.summary["sufficiency"]["share_executable_sufficient_all"] == 1.0
    dom = read_domain(out, never_acquirable=["transfer_to_human_agents"])
    by_id = derivations["airline"].by_id
    assert all(list(t.required) == by_id[t.id].required for t in dom.tasks)
    report = (out / "report.md").read_text()
    assert "## Sufficiency by execution" in report and "## Derived versus annotated G_x" in report
    assert "(label source: derived)" in report
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["summary"]["sufficiency"]["n_empty"] == sum(r.required == [] for r in by_id.values())


def test_data_stage_refuses_derived_labels_it_cannot_derive(fixture_domains, tmp_path):
    user = read_domain(fixture_domains / "valid_user")
    with pytest.raises(ValueError, match=r"domain.executable: label_source `derived` needs the executable domain"):
        build_domain(lambda: user, tmp_path / "u", {"name": "u", "label_source": "derived"})
    with pytest.raises(ValueError, match=r"domain.executable: 'telecom' is not an executable domain \(expected one of airline, retail\)"):
        build_domain(lambda: user, tmp_path / "u", {"name": "u", "label_source": "derived", "executable": "telecom"})
    with pytest.raises(ValueError, match="domain.keep_non_executable: expected true or false"):
        build_domain(lambda: user, tmp_path / "u", {"name": "u", "label_source": "derived", "executable": "retail",
                                                    "keep_non_executable": "yes"})
    with pytest.raises(ValueError, match="domain.label_source: must be one of"):
        build_domain(lambda: user, tmp_path / "u", {"name": "u", "label_source": "gold"})
    assert not (tmp_path / "u").exists()


def test_derivation_cache_is_keyed_by_task_content(converted, suff_cache):
    from camdf.sufficiency import derive

    dom = converted["airline"]
    changed = dataclasses.replace(dom, tasks=[dataclasses.replace(dom.tasks[0], text=dom.tasks[0].text + " ")]
                                  + dom.tasks[1:])
    again = derive(changed, get_executable("airline"), suff_cache)
    assert again.n_cached == len(dom.tasks) - 1
