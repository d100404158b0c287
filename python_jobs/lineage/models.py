"""The dbt models of the lineage core, for selecting them alone (tests, benchmarks)."""

from __future__ import annotations

CORE_MODELS = (
    "stg_lineage_events",
    "int_lineage_dataset_observations",
    "int_lineage_observed_schemas",
    "int_lineage_version_revisions",
    "int_lineage_build_tails",
    "int_lineage_tail_ranges",
    "int_lineage_sighting_revisions",
    "int_lineage_version_schema_revisions",
    "int_lineage_dataset_versions",
    "int_lineage_dataset_sightings",
    "int_lineage_dataset_version_schemas",
    "namespaces",
    "jobs",
    "datasets",
    "run_states",
    "runs",
    "dataset_fields",
    "dataset_schema_versions",
    "dataset_schema_versions_field_mapping",
    "dataset_versions",
    "dataset_versions_field_mapping",
    "runs_input_mapping",
    "runs_output_mapping",
    "column_lineage",
)
GRAPH_MODEL = "dataset_lineage_graph"


def core_selection(with_graph: bool = False) -> list[str]:
    """``--select`` arguments for dbt: the core models and the tests that only read them
    (cautious: a test that also reads another capability's model is left out)."""
    return ["--select", *CORE_MODELS, *([GRAPH_MODEL] if with_graph else []), "--indirect-selection", "cautious"]
