"""The shape of ``raw.lineage_events``: the contract between lineage ingest and every lineage model.

Ingest parses each event once. Downstream models read these columns and never parse
``event_json`` again. Facets are kept as ``map<facet name, facet JSON text>``: Spark's JSON
reader keeps a nested object as its JSON text when the target type is a string, so a 10 MB
facet is never expanded into columns, and the facet models only split maps into rows.

The columns are defined once, as the dbt source ``raw.lineage_events`` (``models/staging/_sources.yml``):
names, Spark types, not-null marks and the partition column, which the on-run-start hook
``ensure_lineage_raw_tables`` creates the table from too. Columns may be added there; renaming or
removing one breaks the models.

The table is partitioned by ``ingest_block = ingest_seq div INGEST_BLOCK_EVENTS``. Each model reads
a window of ``ingest_seq`` and names its blocks too (``lineage_event_window``), so Spark lists only
the partitions of the window: without them every scan opened the footer of every file ever
ingested, and each ingest run adds files, so a build's cost grew with the number of past runs.
A block holds at most ``INGEST_BLOCK_EVENTS`` events, however many runs wrote them.
"""

from __future__ import annotations

from python_jobs.contracts import RAW_SOURCES, project_var, source_table

_RAW = source_table(RAW_SOURCES, "raw", "lineage_events")
RAW_LINEAGE_EVENTS = _RAW.schema
(RAW_PARTITION_COLUMN,) = _RAW.partition_by
# The dbt var lineage_ingest_block_events, which the models read too.
INGEST_BLOCK_EVENTS: int = int(project_var("lineage_ingest_block_events"))

# With ``rejection_id``, the deterministic id that keeps re-ingested bad records out.
RAW_LINEAGE_EVENTS_REJECTED = source_table(RAW_SOURCES, "audit", "lineage_events_rejected").schema
