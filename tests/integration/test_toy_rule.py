"""A rule outside camdf (tests/fixtures/capped_top_k.py), registered only through the registry (one card here),
runs through the evaluate stage, the train stage as a candidate and `camdf select` with its dial: no other file
knows it.

The stages run in this process (their library functions, as their entry points call them), because a
card registered here is not seen by a stage started as a subprocess.
"""

import json
from pathlib import Path

import pytest

from camdf.policies import Card, card, registered

from ..fixtures.capped_top_k import CappedTopK

ROOT = Path(__file__).resolve().parents[2]


TOY = Card("toy_cap", lambda rs: CappedTopK(), family="peer", shippable=True, dials=CappedTopK.dials)


def _train_config(data: Path, out: Path) -> dict:
    from hydra import compose, initialize_config_dir

    import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers, as the entry point does)
    from camdf.pipeline.checks.values import resolve, validate

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[f"paths.data_dir={data}", f"paths.output_dir={out}",
                                                      f"tracking.uri=sqlite:///{out}/mlflow.db", "debug=tiny"])
    # The config schema's choices are the shippable cards when it was imported: validate the stock config,
    # then name the registered rule as the only candidate (what `policy.candidates=[toy_cap]` says).
    resolved = validate(resolve(cfg), "train")
    resolved["policy"]["candidates"] = [TOY.name]
    return resolved


def test_a_registered_rule_runs_through_evaluate_train_and_select(data_dir, tmp_path, monkeypatch, capsys):
    from camdf.cli.commands import main as camdf_cli
    from camdf.pipeline.assembly import Paths
    from camdf.pipeline.cell_job import run_cell
    from camdf.pipeline.policy_job import train_policy
    from camdf.pipeline.checks.values import ConfigError, method_dials, open_tracker

    out = tmp_path / "out"
    out.mkdir()
    with registered(TOY):
        cfg = _train_config(data_dir, out)
        paths = Paths(Path(cfg["paths"]["data_dir"]), Path(cfg["paths"]["cache_dir"]))

        # The evaluate stage: a tiny cell with the toy rule beside the tuned top-k it copies (uncapped, the same
        # decisions) and full access.
        cell = {**cfg, "method": {**cfg["method"], "names": [TOY.name, "fixed_k", "full"]}}
        metrics, _ = run_cell(cell, paths)
        for stat in ("payoff_mean", "n_exposed", "success"):
            assert metrics[f"{TOY.name}/{stat}"] == metrics[f"fixed_k/{stat}"]
        # ... and with its dial set per cell (method.dials, checked against the rule's own dial): capped at 1.
        names = [TOY.name, "fixed_k", "full"]
        assert method_dials({"cap": 1}, names) == {"cap": 1.0}
        with pytest.raises(ConfigError, match=r"method.dials.cap: expected a dial of one of the cell's methods"):
            method_dials({"cap": 1}, ["fixed_k", "full"])
        with pytest.raises(ConfigError, match=r"method.dials.cap: expected cap: a cap on the tools exposed in \(0, 1e\+09\)"):
            method_dials({"cap": -1}, names)
        capped, _ = run_cell({**cell, "method": {**cell["method"], "dials": method_dials({"cap": 1}, names)}}, paths)
        assert capped[f"{TOY.name}/n_exposed"] <= 1 < metrics[f"{TOY.name}/n_exposed"]
        assert capped["fixed_k/payoff_mean"] == metrics["fixed_k/payoff_mean"]  # other rules ignore the dial

        # The train stage: the toy rule is the candidate, compared out of fold and shipped as the champion, with
        # the cell's dial as its default.
        cfg["method"]["dials"] = {"cap": 3.0}
        uri, info = train_policy(cfg, paths, open_tracker(cfg), ROOT)
        assert info["method"] == TOY.name and TOY.name in info["comparisons"][0].summary.index
        assert uri.endswith("@champion")

        # camdf select with its dial (the library's CLI entry, in this process), against the policy's own answer.
        monkeypatch.setenv("MLFLOW_TRACKING_URI", cfg["tracking"]["uri"])
        from camdf.runtime import load_policy

        policy = load_policy(uri)
        tools = [{"name": f"t{j}", "description": f"tool {j}"} for j in range(8)]
        req = {"tools": tools, "scores": [8.0 - j for j in range(8)]}
        path = tmp_path / "request.json"
        path.write_text(json.dumps(req), encoding="utf-8")
        assert policy.dial_defaults() == {"cap": 3.0}
        uncapped = policy.select(**req, cap=1000).depth
        assert uncapped >= 2
        assert policy.select(**req).depth == min(3, uncapped)  # the shipped default
        capsys.readouterr()
        assert camdf_cli(["select", "--policy", uri, "--input", str(path), "--dial", "cap=1"]) == 0
        assert json.loads(capsys.readouterr().out)["depth"] == min(1, uncapped) == 1
        assert camdf_cli(["select", "--policy", uri, "--input", str(path), "--cap", "2"]) == 0  # the dial's own flag
        assert json.loads(capsys.readouterr().out)["depth"] == 2
        assert camdf_cli(["select", "--policy", uri, "--input", str(path)]) == 0
        assert json.loads(capsys.readouterr().out)["depth"] == min(3, uncapped)
        # A dial the rule does not have is refused with its name; the toy's dial on another rule too.
        assert camdf_cli(["select", "--policy", uri, "--input", str(path), "--alpha", "0.1"]) == 2
        assert "alpha: only the camdf_risk / risk_set policy has a target miss rate; this one is toy_cap" in capsys.readouterr().err
    with pytest.raises(ValueError, match="toy_cap"):  # unregistered on leaving the block
        card(TOY.name)
