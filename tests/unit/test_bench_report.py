"""The benchmark runner's README table for the run-time stopper (benchmarks/run.py --readme)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FIGURES = {
    "camdf_lite_7_p50_us": 41.2, "camdf_lite_7_p99_us": 99.6, "camdf_7_p50_us": 130.0, "camdf_7_p99_us": 1250.0,
    "camdf_risk_7_p50_us": 98.7, "camdf_risk_7_p99_us": 201.0, "camdf_1000_p50_us": 3456.0, "camdf_1000_p99_us": 5001.0, "camdf_lite_batch_per_s": 61234.4,
    "camdf_lite_batch_per_s_median": 55000.0,
    "targets": {"camdf_lite_7_p50_us": 100.0, "camdf_7_p50_us": 1000.0, "camdf_risk_7_p50_us": 200.0,
                "camdf_1000_p50_us": 5000.0,
                "camdf_lite_batch_per_s": 50000.0},
}


def test_runtime_table_renders_the_figures_in_their_units(run):
    table = run.runtime_table(FIGURES)
    assert "| camdf_lite, 7 tools | 41 µs | 100 µs | p50 <= 100 µs |" in table
    assert "| 3.46 ms | 5.00 ms | p50 <= 5.00 ms |" in table
    assert "| camdf_risk, 7 tools | 99 µs | 201 µs | p50 <= 200 µs |" in table
    assert "61,234 decisions/s (median round 55,000)" in table


def test_splice_replaces_only_the_marked_block(run, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- runtime-latency -->\nold\n<!-- /runtime-latency -->\nrest\n")
    run.splice_readme(readme, FIGURES)
    text = readme.read_text()
    assert text.startswith("intro\n<!-- runtime-latency -->\n| request |") and text.endswith("-->\nrest\n")
    assert "old" not in text
    readme.write_text("no markers\n")
    with pytest.raises(ValueError, match="markers"):
        run.splice_readme(readme, FIGURES)


def test_the_speed_page_has_the_markers():
    text = (ROOT / "docs" / "speed.md").read_text()
    assert text.count("<!-- runtime-latency -->") == 1 and text.count("<!-- /runtime-latency -->") == 1


def test_runtime_table_has_a_row_per_rule_at_catalog_size_and_the_cpu_column(run):
    figures = {**FIGURES, "catalog_candidates": 2479, "catalog_rules": ["camdf", "plugin_set"],
               "catalog_mean_exposed": {"camdf": 2479.0, "plugin_set": 3.4},
               "camdf_2479_p50_us": 4100.0, "camdf_2479_p99_us": 9000.0, "camdf_2479_cpu_p50_us": 3900.0,
               "plugin_set_2479_p50_us": 2500.0, "plugin_set_2479_p99_us": 2600.0, "camdf_1000_cpu_p50_us": 2000.0}
    table = run.runtime_table(figures)
    assert "| camdf, 2,479 tools (exposes 2,479) | 4.10 ms | 9.00 ms |  | 3.90 ms |" in table
    assert "| plugin_set, 2,479 tools (exposes 3) | 2.50 ms | 2.60 ms |  |  |" in table
    assert "| 3.46 ms | 5.00 ms | p50 <= 5.00 ms | 2.00 ms |" in table
