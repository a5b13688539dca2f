"""A cell's identity is what it computes, not where its files live."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import camdf.pipeline.resolvers  # noqa: F401
from camdf.pipeline.identity import cell_config

CONF = Path(__file__).resolve().parents[3] / "conf"
DOMAINS = sorted(p.stem for p in (CONF / "domain").glob("*.yaml"))


def _cell(domain: str, root: str, source: str | None = None) -> dict:
    overrides = [f"domain={domain}", f"paths.root_dir={root}"]
    if source is not None:
        overrides.append(f"domain.source={source}")
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=overrides)
    return cell_config(OmegaConf.to_container(cfg, resolve=True))


@pytest.mark.parametrize("domain", DOMAINS)
def test_cell_config_does_not_depend_on_where_the_checkout_lives(domain):
    here, there = _cell(domain, "/checkouts/one"), _cell(domain, "/elsewhere/two")
    assert here == there
    assert "/checkouts/one" not in repr(here)


def test_benchmark_folder_spelled_two_ways_is_one_cell():
    spelled = _cell("stabletoolbench", "/repo", source="/repo/../shared/data/stabletoolbench")
    absolute = _cell("stabletoolbench", "/repo", source="/shared/data/stabletoolbench")
    assert spelled == absolute


def test_what_the_cell_computes_still_changes_its_config():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        base = compose(config_name="evaluate", overrides=["paths.root_dir=/r"])
        other = compose(config_name="evaluate", overrides=["paths.root_dir=/r", "domain.acquirable_kinds=[read]"])
    a = cell_config(OmegaConf.to_container(base, resolve=True))
    b = cell_config(OmegaConf.to_container(other, resolve=True))
    assert a != b


EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_top_level_key_is_in_the_cell_key_or_named_as_not_defining_it(experiment):
    """No setting is silently left out of the key: every top-level key an experiment's cell composes is one of
    CELL_KEYS (hashed) or NOT_CELL_KEYS (with its reason). ``lambda_grid`` was in neither: changing it reused old
    runs of camdf_lambda."""
    from camdf.pipeline.identity import CELL_KEYS, NOT_CELL_KEYS

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=[f"experiment={experiment}", "paths.root_dir=/r"])
    unclassified = set(cfg.keys()) - set(CELL_KEYS) - set(NOT_CELL_KEYS)
    assert not unclassified, f"experiment={experiment}: {sorted(unclassified)} neither define the cell nor say why not"


@pytest.mark.parametrize("override", ["lambda_grid=[0.05,0.1]", "+transfer.max_tasks=10"])
def test_a_setting_a_rule_reads_changes_the_cell_config(override):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        base = compose(config_name="evaluate", overrides=["paths.root_dir=/r"])
        other = compose(config_name="evaluate", overrides=["paths.root_dir=/r", override])
    assert cell_config(OmegaConf.to_container(base, resolve=True)) != \
        cell_config(OmegaConf.to_container(other, resolve=True))


def test_a_transfer_cell_does_not_depend_on_where_its_training_domains_live():
    def transfer_cell(root):
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose(config_name="evaluate", overrides=["experiment=a30", f"paths.root_dir={root}"])
        return cell_config(OmegaConf.to_container(cfg, resolve=True))
    assert transfer_cell("/checkouts/one") == transfer_cell("/elsewhere/two")
