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


def _leaves(node, prefix=""):
    """(dotted key, value) of every leaf of a resolved config (a list is one leaf)."""
    for key, value in node.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{name}.")
        else:
            yield name, value


def _changed(value):
    """Another value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, "x"]
    return "x" if value is None else None


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_defining_leaf_changes_the_cell_config(experiment):
    """The cell key is opt-out: changing any leaf of an experiment's composed cell config outside NOT_CELL_KEYS and
    the domain's input locations changes what the key hashes (``lambda_grid`` was once left out of an opt-in list:
    changing it reused old runs of camdf_lambda)."""
    import copy

    from camdf.pipeline.identity import DOMAIN_INPUT_KEYS, NOT_CELL_KEYS

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = OmegaConf.to_container(compose(config_name="evaluate", overrides=[f"experiment={experiment}",
                                                                                   "paths.root_dir=/r"]), resolve=True)
    base = cell_config(cfg)
    checked = 0
    for key, value in _leaves(cfg):
        top, *rest = key.split(".")
        inputs = (top == "domain" and rest and rest[0] in DOMAIN_INPUT_KEYS) or \
            (top == "transfer" and rest[:1] == ["domains"] and len(rest) > 2 and rest[2] in DOMAIN_INPUT_KEYS)
        if top in NOT_CELL_KEYS or inputs:  # where a domain's input lives: its data's bytes stand for it
            continue
        other = copy.deepcopy(cfg)
        node = other
        for part in key.split(".")[:-1]:
            node = node[part]
        node[key.split(".")[-1]] = _changed(value)
        assert cell_config(other) != base, f"experiment={experiment}: changing {key} leaves the cell key as it was"
        checked += 1
    assert checked > 20  # the domain, scorer, cost, method, folds and stats settings at least
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


def test_a_recovery_cells_name_says_its_search_rounds_past_one():
    from camdf.pipeline.identity import cell_name

    names = []
    for rounds in (1, 2):
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose(config_name="evaluate", overrides=["payoff=recovery", "search.cost=4", "search.k=3",
                                                             f"search.rounds={rounds}"])
        names.append(cell_name(OmegaConf.to_container(cfg, resolve=True)))
    assert names[0].endswith("/search=4x3") and names[1].endswith("/search=4x3x2rounds"), names
