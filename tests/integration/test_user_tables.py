"""A user's own grid becomes a table: a held-out (``folds.protocol=split``) user-domain cell renders Table 2
through the tables stage with overrides only."""

from .test_pipeline import ROOT, _run

#: The cells' overrides: the user's domain, its own train/test split, one ranking source, the main cell's d.
CELL = ["domain=user_example", "folds.protocol=split", "scorer=bm25", "cost.d=1.0", "folds.repeats=1",
        "stats.n_resamples=200"]


def test_a_split_user_domain_cell_renders_table2_from_overrides_only(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    _run(["pipelines.data", "domain=user_example"], out, data)
    _run(["pipelines.evaluate", "-m", "experiment=table2", *CELL], out, data)
    overrides = "cell_overrides=[" + ",".join(f"'{o}'" for o in CELL) + "]"
    # Without the protocol override the anchor (k-fold) finds no cell: the stage names the override that would.
    plain = _run(["pipelines.tables", "update_readme=false", "experiments=[table2]",
                  "cell_overrides=['domain=user_example','scorer=bm25','cost.d=1.0','folds.repeats=1',"
                  "'stats.n_resamples=200']", "main.domain=user_example"], out, data)
    assert "skipped: Table 2 (bm25)" in plain.stdout and "cell_overrides=['folds.protocol=split']" in plain.stdout, plain.stdout
    proc = _run(["pipelines.tables", "update_readme=false", "experiments=[table2]", overrides,
                 "main.table2_scorers=[bm25]"], out, data)
    assert "skipped: Table 2" not in proc.stdout, proc.stdout
    table = (out / "tables" / "table2.md").read_text()
    assert "user_example" in table and "protocol split" in table, table[:2000]


def test_a_domain_kept_outside_conf_via_hydra_searchpath_runs_through_every_stage(tmp_path):
    """A user's domain config in their own folder, found through Hydra's own ``hydra.searchpath``: the data
    stage, a multirun of evaluate (and its sweep check) and the tables stage all compose it, warning-free."""
    data, out, mine = tmp_path / "data", tmp_path / "out", tmp_path / "my_conf"
    (mine / "domain").mkdir(parents=True)
    text = (ROOT / "conf" / "domain" / "user_example.yaml").read_text()
    (mine / "domain" / "my_shop.yaml").write_text(text.replace("name: user_example", "name: my_shop"))
    search = f"hydra.searchpath=[file://{mine}]"
    cell = ["domain=my_shop", "cost.d=1.0", "folds.repeats=1", "stats.n_resamples=100"]
    runs = [_run(["pipelines.data", "domain=my_shop", search], out, data),
            _run(["pipelines.evaluate", "-m", "experiment=smoke", *cell, search], out, data)]
    overrides = "cell_overrides=[" + ",".join(f"'{o}'" for o in cell) + "]"
    runs.append(_run(["pipelines.tables", "update_readme=false", "experiments=[smoke]", overrides, search,
                      "main.domain=my_shop"], out, data))
    assert runs[1].stdout.count("logged run") == 2, runs[1].stdout
    for proc in runs:
        said = proc.stdout + proc.stderr
        assert "Could not find" not in said and "warning" not in said.lower(), said[-3000:]
    assert "wrote" in runs[2].stdout and "my_shop" in (out / "tables" / "a18.md").read_text(), runs[2].stdout
