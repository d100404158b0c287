"""The shape of ``raw.lineage_events``: the contract between lineage ingest and every lineage model.

Ingest parses each event once. Downstream models read these columns and never parse
``event_json`` again. Facets are kept as ``map<facet name, facet JSON text>``: Spark's JSON
reader keeps a nested object as its JSON text when the target type is a string, so a 10 MB
facet is never expanded into columns, and the facet models only split maps into rows.

Columns may be added here; renaming or removing one breaks the models.

The table is partitioned by ``ingest_block = ingest_seq div INGEST_BLOCK_EVENTS``. Each model reads
a window of ``ingest_seq`` and names its blocks too (``lineage_event_window``), so Spark lists only
the partitions of the window: without them every scan opened the footer of every file ever
ingested, and each ingest run adds files, so a build's cost grew with the number of past runs.
A block holds at most ``INGEST_BLOCK_EVENTS`` events, however many runs wrote them.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

FACET_MAP = MapType(StringType(), StringType())

# One dataset reference inside an event, for inputs, outputs and DatasetEvent's dataset.
DATASET_REFERENCE = StructType(
    [
        StructField("namespace", StringType()),
        StructField("name", StringType()),
        StructField("facets", FACET_MAP),
        StructField("input_facets", FACET_MAP),  # only on inputs (inputFacets)
        StructField("output_facets", FACET_MAP),  # only on outputs (outputFacets)
    ]
)

RAW_LINEAGE_EVENTS = StructType(
    [
        StructField("event_id", StringType(), nullable=False),  # deterministic hash of the canonical event
        StructField(
            "ingest_seq", LongType(), nullable=False
        ),  # increases across ingest runs; ties broken by file, line
        StructField("event_kind", StringType(), nullable=False),  # RunEvent | DatasetEvent | JobEvent
        StructField(
            "event_type", StringType()
        ),  # START, RUNNING, COMPLETE, ABORT, FAIL, OTHER; null for Dataset/JobEvent
        StructField("event_time", TimestampType()),  # UTC
        StructField("event_time_raw", StringType()),  # as sent
        StructField("event_time_has_offset", BooleanType()),  # false: no timezone in the input, taken as UTC
        StructField("run_id", StringType()),
        StructField("parent_run_id", StringType()),
        StructField("parent_job_namespace", StringType()),
        StructField("parent_job_name", StringType()),
        StructField("job_namespace", StringType()),
        StructField("job_name", StringType()),
        StructField("producer", StringType()),
        StructField("schema_url", StringType()),
        StructField("run_facets", FACET_MAP),
        StructField("job_facets", FACET_MAP),
        StructField("inputs", ArrayType(DATASET_REFERENCE)),
        StructField("outputs", ArrayType(DATASET_REFERENCE)),
        StructField("dataset", DATASET_REFERENCE),  # DatasetEvent only
        StructField("event_json", StringType(), nullable=False),  # the original text
        StructField("event_bytes", LongType()),
        StructField("source_file", StringType(), nullable=False),
        StructField("source_line", LongType()),  # line number (NDJSON) or array index (JSON arrays), from 1
        StructField("ingest_batch_id", StringType(), nullable=False),
        StructField("ingested_at", TimestampType(), nullable=False),  # wall clock of the ingest run
        StructField("ingest_block", LongType(), nullable=False),  # the partition: ingest_seq div INGEST_BLOCK_EVENTS
    ]
)
RAW_PARTITION_COLUMN = "ingest_block"
# 2^16: a 1% increment of a million events reads one or two blocks. The dbt macro
# lineage_ingest_block_events returns the same number (a test compares them).
INGEST_BLOCK_EVENTS = 65536

RAW_LINEAGE_EVENTS_REJECTED = StructType(
    [
        StructField("source_file", StringType(), nullable=False),
        StructField("source_line", LongType()),
        StructField("reason", StringType(), nullable=False),
        StructField("raw_text", StringType()),
        StructField("ingest_batch_id", StringType(), nullable=False),
        StructField("ingested_at", TimestampType(), nullable=False),
    ]
)
