"""tau2-bench: task conversion, executable environments for derived required sets, execution-cost telemetry."""

from camdf.integrations.base import Integration, Measured

#: What this package offers (read by :mod:`camdf.integrations.registry`).
INTEGRATION = Integration(
    converters=("convert:convert_customer_service", "convert:convert_telecom"),
    executable={"retail": "executable:Retail", "airline": "executable:Airline"},
    measures={"execution": Measured(measure="execution:measure_execution",
                                    params=("environment", "cache_dir", "tokenizer_path"),
                                    section="execution:execution_section", domain_param="environment")},
)
