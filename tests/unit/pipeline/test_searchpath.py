"""A config folder outside conf/ given by Hydra's own ``hydra.searchpath`` reaches every composition on the side:
the sweep check's per-job compose and the cells the tables stage keys (the end-to-end run through every stage is
tests/integration/test_user_tables.py, marked slow)."""

from pathlib import Path

from omegaconf import OmegaConf

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.pipeline.identity import CONF_DIR
from camdf.pipeline.sweeps import compose_jobs, experiment_cells, searchpath_overrides


def _my_conf(tmp_path: Path) -> list[str]:
    (tmp_path / "domain").mkdir()
    text = (CONF_DIR / "domain" / "user_example.yaml").read_text()
    (tmp_path / "domain" / "my_shop.yaml").write_text(text.replace("name: user_example", "name: my_shop"))
    return searchpath_overrides(OmegaConf.create({"hydra": {"searchpath": [f"file://{tmp_path}"]}}))


def test_the_search_path_becomes_an_override_every_composition_honours(tmp_path):
    search = _my_conf(tmp_path)
    assert search == [f"hydra.searchpath=['file://{tmp_path}']"]
    (cfg,) = compose_jobs("evaluate", [["domain=my_shop", "cost.lam=0.5", *search]])
    assert cfg.domain.name == "my_shop" and cfg.cost.lam == 0.5
    cells = experiment_cells("smoke", ["domain=my_shop", *search])
    assert len(cells) == 4 and {c["domain"]["name"] for c in cells} == {"my_shop"}
    assert searchpath_overrides(OmegaConf.create({"hydra": {"searchpath": []}})) == []
