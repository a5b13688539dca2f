"""A hostile family generated from the config schema (camdf/pipeline/checks/kinds.py and the stages' explicit checks): for
every key of every stage's composed config, a value of the wrong type, a non-finite number and an out-of-range
value are each refused in one line that names the key.

The cases are checked in-process by the same calls a stage makes on its config before anything runs
(:func:`camdf.pipeline.checks.values.checked`: the gates, the kinds, the explicit checks); a few run end to end as a
subprocess (the last test) to see that the stage's refusal is that one line and exit 2.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import camdf.pipeline.resolvers  # noqa: F401  (paths.root_dir's resolver)
from camdf.pipeline.checks.gates import check_tree
from camdf.pipeline.checks.values import SCHEMAS, ConfigError, validate
from camdf.pipeline.sweeps import compose
from camdf.pipeline.checks.kinds import ANY, BOOL, LIST, MAX_ITEMS, NODE, NULL, NUMBER, STR, _walk, check_kinds, schema

ROOT = Path(__file__).resolve().parents[3]
STAGES = ("data", "scores", "evaluate", "train", "tables")
#: Keys whose values are only read and checked by what reads them (a domain's package list and source folder).
READ_ONLY = ("domain.source", "domain.packages", "domain.inputs")


def _hostile(kinds: frozenset[str], key: str) -> list[tuple[str, object]]:
    """(what, value) of the three hostile values for a key with these kinds."""
    if NODE in kinds:
        return [("wrong-type", 5), ("non-finite", float("nan")), ("out-of-range", {"bogus_key": 1e12})]
    if LIST in kinds:
        return [("wrong-type", 5), ("non-finite", float("nan")), ("out-of-range", ["x"] * (MAX_ITEMS + 1))]
    if BOOL in kinds:
        return [("wrong-type", 2), ("non-finite", float("inf")), ("out-of-range", [1])]
    if NUMBER in kinds:
        return [("wrong-type", "abc"), ("non-finite", float("nan")), ("out-of-range", 1e12)]
    if kinds & {STR, ANY}:
        return [("wrong-type", 5), ("non-finite", float("-inf")), ("out-of-range", "rel/../x" if ANY in kinds else "")]
    return [("wrong-type", [5]), ("non-finite", float("nan")), ("out-of-range", "x")]


#: Where the composed configs point their outputs: never written (the checks only resolve paths).
NOWHERE = "/nonexistent/camdf-generated"
#: Each stage's composed default config, resolved.
BASES = {stage: OmegaConf.to_container(compose(stage, [f"paths.output_dir={NOWHERE}/out",
                                                       f"paths.data_dir={NOWHERE}/data"]), resolve=True)
         for stage in STAGES}


def _has(cfg: dict, key: str) -> bool:
    node = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _cases() -> list[tuple[str, str, str, object]]:
    """Three cases for every key the stage's composed config has (its kinds from the generated schema)."""
    out = []
    for stage in STAGES:
        for key, kinds in sorted(schema(stage).items()):
            if kinds == {NULL} and key in SCHEMAS[stage]:
                kinds = frozenset({NUMBER})  # null by default, a number when set (candidates.top_k)
            if "[]" in key or key.startswith(READ_ONLY) or kinds == {NULL} or not _has(BASES[stage], key):
                continue
            out += [(stage, key, what, value) for what, value in _hostile(kinds, key)]
    return out


CASES = _cases()


def _set(cfg: dict, key: str, value) -> None:
    *parents, last = key.split(".")
    node = cfg
    for part in parents:
        node = node[part]
    if isinstance(value, dict) and isinstance(node.get(last), dict):
        node[last] = {**node[last], **value}  # an unknown key added to the node
    else:
        node[last] = value


def test_the_family_covers_every_key_of_every_stage():
    """Every key each stage's config has is in the family (three cases each), the explicit checks' keys too."""
    covered = {(s, k) for s, k, _, _ in CASES}
    for stage in STAGES:
        leaves = {k for k, _ in _walk(BASES[stage]) if "[]" not in k and not k.startswith(("hydra", *READ_ONLY))}
        missing = leaves - {k for s, k in covered if s == stage}
        assert all(schema(stage).get(k) == {NULL} and k not in SCHEMAS[stage] for k in missing), (stage, missing)
    assert len(CASES) >= 3 * 150, len(CASES)


@pytest.mark.parametrize("stage, key, what, value", CASES, ids=[f"{s}:{k}:{w}" for s, k, w, _ in CASES])
def test_a_hostile_value_is_refused_naming_its_key(stage, key, what, value):
    cfg = copy.deepcopy(BASES[stage])
    _set(cfg, key, value)
    with pytest.raises(ConfigError) as err:
        check_tree(cfg, cfg)
        check_kinds(cfg, stage, SCHEMAS.get(stage, {}))
        validate(cfg, stage)
    message = str(err.value)
    assert "\n" not in message and message.startswith(key), message


END_TO_END = [("evaluate", "candidates=5", "candidates"), ("tables", "update_readme=2", "update_readme"),
              ("evaluate", "stats.n_resamples=nan", "stats.n_resamples"), ("scores", "folds.repeats=1e12", "folds.repeats")]


@pytest.mark.parametrize("stage, override, key", END_TO_END, ids=[o for _, o, _ in END_TO_END])
def test_a_stage_refuses_it_in_one_line(stage, override, key, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    proc = subprocess.run([sys.executable, "-m", f"pipelines.{stage}", override, f"paths.output_dir={tmp_path}/out",
                           f"paths.data_dir={tmp_path}/data", "hydra/job_logging=none", "hydra/hydra_logging=none"],
                          cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {key}:"), proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not list((tmp_path / "out").rglob(".hydra")) if (tmp_path / "out").exists() else True
