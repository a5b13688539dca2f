"""tau2-bench: task conversion, executable environments for derived required sets, execution-cost telemetry."""
