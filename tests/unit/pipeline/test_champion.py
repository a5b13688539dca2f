"""The train stage's champion pick (camdf.pipeline.champion.pick): the best out of fold over the fold protocols,
and the simplest candidate (first listed) that cannot be told apart from it under every protocol."""

import numpy as np
import pandas as pd

from camdf.pipeline.champion import Comparison, pick


def _comparison(protocol: str, payoffs: dict[str, np.ndarray]) -> Comparison:
    per_task = pd.DataFrame(payoffs, index=pd.Index([f"t{i}" for i in range(len(next(iter(payoffs.values()))))],
                                                    name="task_id"))
    summary = pd.DataFrame({"payoff_mean": per_task.mean()})
    return Comparison(protocol, summary, per_task)


def _tasks(mean: float, seed: int, n: int = 120) -> np.ndarray:
    return mean + np.random.default_rng(seed).normal(0.0, 0.3, n)


def test_a_simpler_candidate_that_ties_the_best_under_both_protocols_ships_with_its_reason():
    base = _tasks(0.2, 0)
    kfold = _comparison("kfold", {"simple": base, "complex": base + 0.01 + _tasks(0.0, 1)})
    group = _comparison("group", {"simple": base, "complex": base + 0.005 + _tasks(0.0, 2)})
    method, reason = pick([kfold, group], ["simple", "complex"], 2000, 0)
    assert method == "simple"
    assert "`simple` ships" in reason and "`complex`" in reason and "cannot be told apart" in reason
    assert "kfold folds" in reason and "group folds" in reason


def test_the_best_ships_when_every_simpler_one_is_worse_under_one_protocol():
    base = _tasks(0.2, 0)
    kfold = _comparison("kfold", {"simple": base, "complex": base + 0.001})  # a tie here...
    group = _comparison("group", {"simple": base - 0.1, "complex": base})  # ...but clearly worse on new templates
    method, reason = pick([kfold, group], ["simple", "complex"], 2000, 0)
    assert method == "complex" and reason.startswith("`complex` ships: the best candidate")


def test_the_best_is_over_the_protocols_and_a_tie_goes_to_the_first_listed():
    base = _tasks(0.2, 0)
    one = _comparison("kfold", {"a": base + 0.2, "b": base, "c": base + 0.1})
    two = _comparison("group", {"a": base - 0.2, "b": base, "c": base + 0.1})
    assert pick([one, two], ["b", "c", "a"], 500, 0)[0] == "c"  # c is best on average (a only under k-fold)
    same = _comparison("kfold", {"a": base, "b": base})
    assert pick([same], ["b", "a"], 500, 0)[0] == "b"
