"""The scoring stage: content-keyed cache, the quality table, and the Hydra entry point end to end."""

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)

from camdf.rankers.problem import COLUMNS, VIEW
from camdf.pipeline.scores_stage import gather_quality, main, run_costs, run_scores

DOMAIN = {"name": "valid_user", "acquirable_kinds": ["read", "generic"], "never_acquirable": []}
FOLDS = {"protocol": "kfold", "n_folds": 2, "random_state": 0}


def _data(fixture_domains, tmp_path):
    shutil.copytree(fixture_domains / "valid_user", tmp_path / "data" / "valid_user")
    return tmp_path / "data"


def test_scores_are_cached_by_config_code_and_data(fixture_domains, tmp_path):
    data, cache = _data(fixture_domains, tmp_path), tmp_path / "cache"
    bm25 = {"name": "bm25", "label": "bm25", "params": {"k1": 1.5, "b": 0.75}}
    first = run_scores(DOMAIN, bm25, FOLDS, data_dir=data, cache_dir=cache)
    again = run_scores(DOMAIN, bm25, FOLDS, data_dir=data, cache_dir=cache)
    assert (first["cached"], again["cached"]) == (False, True) and first["key"] == again["key"]
    frame = pd.read_parquet(first["path"])
    assert list(frame.columns) == COLUMNS and len(frame) == 18
    assert first["n_tasks"] == 4 and first["n_empty_excluded"] == 1
    other = run_scores(DOMAIN, {**bm25, "params": {"k1": 1.2, "b": 0.75}}, FOLDS, data_dir=data, cache_dir=cache)
    assert not other["cached"] and other["key"] != first["key"]
    # Keyed by the fold of every task: a fold seed that splits the tasks otherwise is another entry.
    refold = run_scores(DOMAIN, bm25, {**FOLDS, "n_folds": 3}, data_dir=data, cache_dir=cache)
    assert not refold["cached"] and refold["key"] != first["key"]
    with (data / "valid_user" / "tasks.jsonl").open("a") as fh:
        fh.write('{"id": "u-6", "text": "refund my invoice", "required": ["list_invoices"]}\n')
    changed = run_scores(DOMAIN, bm25, FOLDS, data_dir=data, cache_dir=cache)
    assert not changed["cached"] and changed["n_tasks"] == 5


def test_costs_are_cached_and_dispersed(fixture_domains, tmp_path):
    data, cache = _data(fixture_domains, tmp_path), tmp_path / "cache"
    cfg = {"regime": "schema_tokens", "d": 0.5, "random_state": 0, "params": {}}
    first = run_costs(DOMAIN, cfg, data_dir=data, cache_dir=cache)
    assert not first["cached"] and run_costs(DOMAIN, cfg, data_dir=data, cache_dir=cache)["cached"]
    frame = pd.read_parquet(first["path"])
    assert frame.tool.tolist() == ["lookup_account", "list_invoices", "search_help_center", "convert_currency"]
    assert abs(frame.cost.mean() - 1) < 1e-12 and first["cv"] > 0
    flat = run_costs(DOMAIN, {**cfg, "d": 0.0}, data_dir=data, cache_dir=cache)
    assert flat["cv"] == 0 and flat["key"] != first["key"]


def test_gather_quality_prints_the_table_from_the_cache(fixture_domains, tmp_path, capsys):
    data, cache = _data(fixture_domains, tmp_path), tmp_path / "cache"
    for name in ("prior", "bm25"):
        run_scores(DOMAIN, {"name": name, "label": name, "params": {}}, FOLDS, data_dir=data, cache_dir=cache)
    table = gather_quality(cache, scorers=["bm25", "prior"])
    assert table.scorer.tolist() == ["bm25", "prior"] and table.domain.tolist() == ["valid_user"] * 2
    assert main(["--cache-dir", str(cache), "--scorers", "bm25,prior"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith("| valid_user | bm25 |") and out[3].startswith("| valid_user | prior |")
    assert main(["--cache-dir", str(tmp_path / "empty")]) == 2


def test_scores_entry_point_multirun_prints_the_quality_table(root, tmp_path):
    base = [f"paths.data_dir={tmp_path}/data", f"paths.output_dir={tmp_path}/outputs",
            "hydra/job_logging=none", "hydra/hydra_logging=none"]
    built = subprocess.run([sys.executable, "-m", "pipelines.data", "domain=user_example", *base],
                           cwd=root, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    cmd = [sys.executable, "-m", "pipelines.scores", "-m", "domain=user_example", "scorer=bm25,prior",
           "cost=uniform", "folds.n_folds=2", *base]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    table = lines[lines.index("| domain | scorer | R@1 | R@3 | R@5 | nDCG@10 | MRR | G_x in top 3 | "
                              "G_x in top 10 | G_x in top 20 | G_x listed | tasks (empty G_x left out) |",
                              len(lines) - 4):]
    assert [row.split(" | ")[1] for row in table[2:]] == ["bm25", "prior"]
    assert "user_example/bm25: scored" in proc.stdout
    again = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert "user_example/bm25: cached" in again.stdout and "user_example/prior: cached" in again.stdout
    assert list((tmp_path / "outputs" / "cache" / "scores" / "user_example" / "bm25").glob("*.parquet"))


def test_every_scorer_and_cost_option_composes_with_the_scores_primary(root):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from camdf.pipeline.checks.values import COST_REGIMES
    from camdf.rankers import SCORERS, scorer_params

    conf = root / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        for path in sorted((conf / "scorer").glob("*.yaml")):
            cfg = compose(config_name="scores", overrides=[f"scorer={path.stem}"])
            OmegaConf.resolve(cfg)
            assert cfg.scorer.name in SCORERS and cfg.scorer.label
            assert set(cfg.scorer.params) <= set(scorer_params(cfg.scorer.name))
        for path in sorted((conf / "cost").glob("*.yaml")):
            cfg = compose(config_name="scores", overrides=[f"cost={path.stem}"])
            assert cfg.cost.regime in COST_REGIMES and cfg.cost.d >= 0


@pytest.mark.parametrize("target", ["parquet", "record"])
def test_a_tampered_score_cache_is_recomputed_with_one_line_naming_it(fixture_domains, tmp_path, caplog, target):
    data, cache = _data(fixture_domains, tmp_path), tmp_path / "cache"
    supervised = {"name": "supervised", "label": "supervised", "params": {}}
    first = run_scores(DOMAIN, supervised, FOLDS, data_dir=data, cache_dir=cache)
    parquet = Path(first["path"])
    assert VIEW in pd.read_parquet(parquet).columns  # a learned scorer's cache holds its nested views
    if target == "parquet":  # a poisoned score: the best tool of the first row demoted
        frame = pd.read_parquet(parquet)
        frame.loc[0, "score"] = -1.0
        frame.to_parquet(parquet)
    else:  # a hand-edited quality figure
        meta = parquet.with_suffix(".json")
        record = json.loads(meta.read_text())
        meta.write_text(json.dumps({**record, "mrr": 1.0}))
    with caplog.at_level(logging.WARNING, logger="camdf.pipeline.scores_stage"):
        again = run_scores(DOMAIN, supervised, FOLDS, data_dir=data, cache_dir=cache)
    assert not again["cached"] and again["mrr"] == first["mrr"]
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(parquet) in line and "checksum" in line and "\n" not in line
    assert pd.read_parquet(parquet).equals(pd.read_parquet(first["path"]))
    assert run_scores(DOMAIN, supervised, FOLDS, data_dir=data, cache_dir=cache)["cached"]  # rewritten whole
