"""Every primary config composes with every option of its groups (Hydra compose API)."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import camdf.pipeline.resolvers  # noqa: F401

CONF = Path(__file__).resolve().parents[3] / "conf"
PRIMARIES = sorted(p.stem for p in CONF.glob("*.yaml"))
DOMAINS = sorted(p.stem for p in (CONF / "domain").glob("*.yaml"))


@pytest.mark.parametrize("primary", PRIMARIES)
def test_primary_composes_and_resolves(primary):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name=primary)
        OmegaConf.resolve(cfg)
        assert Path(cfg.paths.root_dir, "pyproject.toml").is_file()


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_domain_config_composes(domain):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="data", overrides=[f"domain={domain}"])
        OmegaConf.resolve(cfg)
        assert cfg.domain.name == domain
        assert set(cfg.domain.acquirable_kinds) <= {"read", "write", "generic"}
        assert "_target_" in cfg.domain.converter


def test_every_yaml_key_has_a_comment():
    for path in CONF.rglob("*.yaml"):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#") or stripped.startswith("- ") or stripped == "defaults:":
                continue
            if ":" in stripped and "#" not in stripped:
                raise AssertionError(f"{path.relative_to(CONF)}:{lineno}: key without a comment: {stripped}")


EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes_with_its_sweep_and_header(experiment):
    text = (CONF / "experiment" / f"{experiment}.yaml").read_text()
    assert "# Run: python -m pipelines.evaluate -m experiment=" in text
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=[f"experiment={experiment}"], return_hydra_config=True)
        assert cfg.method.names, experiment
        from camdf.policies import METHODS

        assert set(cfg.method.names) <= set(METHODS)
        params = cfg.hydra.sweeper.params or {}
        if experiment not in ("a20",):
            assert params, f"{experiment} has no sweep"


def test_make_data_builds_each_domain_after_the_domains_it_reads(tmp_path):
    from omegaconf import OmegaConf

    from camdf.pipeline.make_lists import make_domains, make_experiments

    built = make_domains()
    assert {"retail", "airline", "telecom", "bfcl_multi_turn"} <= set(built)
    for i, name in enumerate(built):
        converter = OmegaConf.load(CONF / "domain" / f"{name}.yaml").converter
        for source in [converter.get("base"), *(converter.get("sources") or [])]:
            assert source is None or source in built[:i], (name, source)
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "x.yaml").write_text("make_reproduce: 1\n")
    (tmp_path / "experiment" / "y.yaml").write_text("make_reproduce: 1\n")
    with pytest.raises(ValueError, match=r"y.yaml: make_reproduce: 1 is also x.yaml's"):
        make_experiments(tmp_path)
    (tmp_path / "experiment" / "y.yaml").write_text("make_reproduce: yes\n")
    with pytest.raises(ValueError, match=r"y.yaml: make_reproduce: expected an integer"):
        make_experiments(tmp_path)


def test_make_needs_leaves_out_what_needs_a_missing_folder_in_one_line(tmp_path, monkeypatch):
    from camdf.pipeline.make_lists import make_experiments, skipped

    (tmp_path / "domain").mkdir()
    (tmp_path / "experiment").mkdir()
    needs = "make_needs: {env: CAMDF_TEST_FOLDER, get: clone it}\n"
    (tmp_path / "domain" / "d.yaml").write_text("make_data: 1\n" + needs)
    (tmp_path / "experiment" / "x.yaml").write_text("make_reproduce: 1\n")
    (tmp_path / "experiment" / "y.yaml").write_text("make_reproduce: 2\n" + needs)
    monkeypatch.setenv("CAMDF_TEST_FOLDER", str(tmp_path / "absent"))
    assert make_experiments(tmp_path) == ["x"]
    assert skipped(tmp_path) == [f"CAMDF_TEST_FOLDER={tmp_path / 'absent'} is not a folder: domain d, experiment y "
                                 "skipped; to run them, clone it"]
    monkeypatch.setenv("CAMDF_TEST_FOLDER", str(tmp_path))
    assert make_experiments(tmp_path) == ["x", "y"] and skipped(tmp_path) == []
    (tmp_path / "experiment" / "y.yaml").write_text("make_reproduce: 2\nmake_needs: FOLDER\n")
    with pytest.raises(ValueError, match=r"y.yaml: make_needs: expected \{env: <VARIABLE>"):
        make_experiments(tmp_path)


def test_a_domain_may_set_its_own_repeats_and_the_command_line_still_wins():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        retail = compose(config_name="evaluate", overrides=["domain=retail"])
        telecom = compose(config_name="evaluate", overrides=["domain=telecom"])
        asked = compose(config_name="evaluate", overrides=["domain=telecom", "folds.repeats=3"])
    assert (retail.folds.repeats, telecom.folds.repeats, asked.folds.repeats) == (5, 1, 3)
