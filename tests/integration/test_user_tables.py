"""A user's own grid becomes a table: a held-out (``folds.protocol=split``) user-domain cell renders Table 2
through the tables stage with overrides only."""

from .test_pipeline import _run

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
