"""The cell's calibration measurement is a diagnostic (stats.calibration): switching it off leaves every outcome,
bound and tuned parameter of the cell as it was, and only the calibration frame goes."""

import pandas as pd

from camdf.evaluation.cell import evaluate_cell

from ..core.test_features import _random_instances

METHODS = ["camdf_lite", "camdf", "plugin_set", "cv_set", "full", "none"]


def test_switching_the_calibration_measurement_off_changes_no_outcome():
    inst = _random_instances(33, n_tasks=60)
    on = evaluate_cell(inst, 0.1, METHODS, random_state=3)
    off = evaluate_cell(inst, 0.1, METHODS, random_state=3, calibration=False)
    assert len(on.calibration) > 0 and set(on.calibration["source"]) >= {"membership model"}
    assert off.calibration.empty
    pd.testing.assert_frame_equal(on.outcomes, off.outcomes)
    pd.testing.assert_frame_equal(on.prefix_bounds, off.prefix_bounds)
    pd.testing.assert_frame_equal(on.tuned, off.tuned)
