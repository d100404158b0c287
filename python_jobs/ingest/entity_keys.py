"""Which (namespace, name) owns each job and dataset key: ``raw.lineage_entity_keys``.

Keys are Marquez's name-based UUIDs of ``'job:<namespace>:<name>'`` and ``'dataset:<namespace>:<name>'``
(``python_jobs.keys``), so ``('a:b', 'c')`` and ``('a', 'b:c')`` get one key. The models key every table by
it, so two such entities would become one. Ingest keeps the ids and refuses the second name instead: the
first (namespace, name) to reach a key owns it, and an event that names another one for that key is
rejected whole, with the reason (``collision_reason``).

"First" is by ingest order. An owner already in the key table wins; a key the table does not hold yet goes
to the (namespace, name) of the batch's first valid event naming it (by ``ingest_seq``, i.e. file and line;
within one event, by the order of its references: job, inputs, outputs, dataset). Events already stored
(duplicates) are never rejected; they still take part in choosing the owner, so that a batch that a crash
interrupted after storing its events decides as the uninterrupted run did.

The key table holds one row per owned key (``ENTITY_KEYS``): kind, key, namespace, name, and the
``ingest_seq`` and batch of the first kept event naming it. Ingest adds the batch's new owners, with an
anti-join on the key, before it stores the batch's events; a re-run of an interrupted batch finds them
owned by the same names and decides the same. A key whose batch owner is named only by rejected events is
not recorded (the name it refused stays refused only in that batch). A warehouse ingested before the table
existed gets it once from the stored events (``owners_of_stored``), earliest stored event first.

Cost: the batch's references (namespace and name only, from the staged Parquet) are grouped into distinct
entities, joined with the key table on the key, and the contested ones collected (almost always none);
the rejected events are looked up only when there are some.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from python_jobs.keys import entity_key_sql

ENTITY_KEYS_TABLE = ("raw", "lineage_entity_keys")
ENTITY_KEYS = StructType(
    [
        StructField("entity_kind", StringType(), nullable=False),  # job | dataset
        StructField("entity_key", StringType(), nullable=False),  # the uuid every model keys it by
        StructField("namespace_name", StringType(), nullable=False),
        StructField("name", StringType(), nullable=False),
        StructField("first_ingest_seq", LongType(), nullable=False),  # first kept event naming it
        StructField("first_batch_id", StringType(), nullable=False),  # that event's ingest batch
    ]
)
KEY_COLUMNS = ["entity_kind", "entity_key"]
ENTITY_COLUMNS = [*KEY_COLUMNS, "namespace_name", "name"]


def _dataset_references(column: str, position_base: str) -> str:
    """The (namespace, name) of each entry of an ``inputs``/``outputs`` column, read as two string arrays
    (``inputs.namespace``, ``inputs.name``). Every part of ``ENTITY_REFERENCES_SQL`` names such sub-fields
    only, never a whole reference column, so Parquet reads neither the facets nor the rest."""
    return (
        f"transform(coalesce({column}.namespace, array()), (ns, i) -> named_struct("
        f"'kind', 'dataset', 'namespace', ns, 'name', {column}.name[i], 'position', {position_base} + i))"
    )


def _count(column: str) -> str:
    return f"size(coalesce({column}.namespace, array()))"


# A reference without a namespace or name (a null job, a null ``dataset``) is dropped after the explode.
ENTITY_REFERENCES_SQL = (
    "concat("
    "array(named_struct('kind', 'job', 'namespace', job_namespace, 'name', job_name, 'position', 0)), "
    + _dataset_references("inputs", "1")
    + ", "
    + _dataset_references("outputs", f"1 + {_count('inputs')}")
    + ", array(named_struct('kind', 'dataset', 'namespace', dataset.namespace, 'name', dataset.name, "
    f"'position', 1 + {_count('inputs')} + {_count('outputs')}))"
    ")"
)


def entity_references(events: DataFrame, *keep: str) -> DataFrame:
    """A row per job or dataset an event names (its job; its inputs, outputs and DatasetEvent dataset, as the
    models read them): ``keep``, ``ref_position``, ``entity_kind``, ``namespace_name``, ``name``,
    ``entity_key``. ``events`` has the columns of ``raw.lineage_events``; references without a namespace
    or name are left out (the models key none)."""
    exploded = events.select(*keep, F.explode(F.expr(ENTITY_REFERENCES_SQL)).alias("ref")).select(
        *keep,
        F.col("ref.position").cast("int").alias("ref_position"),
        F.col("ref.kind").alias("entity_kind"),
        F.col("ref.namespace").alias("namespace_name"),
        F.col("ref.name").alias("name"),
    )
    named = exploded.where(F.col("namespace_name").isNotNull() & F.col("name").isNotNull())
    return named.withColumn("entity_key", F.expr(entity_key_sql("entity_kind", "namespace_name", "name")))


def owners_of_stored(raw_events: DataFrame) -> DataFrame:
    """The key table's rows for events already stored (the one-time backfill): each key goes to the
    (namespace, name) of its earliest stored reference by ``ingest_seq`` and reference order."""
    refs = entity_references(raw_events, "ingest_seq", "ingest_batch_id")
    first = F.min(F.struct("ingest_seq", "ref_position", "namespace_name", "name", "ingest_batch_id"))
    return refs.groupBy(*KEY_COLUMNS).agg(first.alias("first")).select(
        *KEY_COLUMNS,
        F.col("first.namespace_name").alias("namespace_name"),
        F.col("first.name").alias("name"),
        F.col("first.ingest_seq").alias("first_ingest_seq"),
        F.col("first.ingest_batch_id").alias("first_batch_id"),
    )


def collision_reason(kind: str, namespace: str, name: str, key: str, owner_namespace: str, owner_name: str) -> str:
    """The audit reason of an event refused for naming ``(namespace, name)``, whose key another holds."""
    return (
        f"{kind} key collision: {(namespace, name)!r} has the key {key}, which {(owner_namespace, owner_name)!r} "
        "already holds (keys join namespace and name with ':' as Marquez does); rename one of them"
    )


@dataclass(frozen=True)
class KeyCheck:
    """``rejected``: event id → reason, for the batch's new events that name a key another entity owns;
    ``new_owners``: the key table's rows to add (the batch's owners of keys it did not hold)."""

    rejected: dict[str, str]
    new_owners: DataFrame


def check_entity_keys(
    spark: SparkSession, valid: DataFrame, new_event_ids: DataFrame, key_table: str, batch_id: str
) -> KeyCheck:
    """``valid``: the batch's staged rows with an ``event_id`` (columns of ``raw.lineage_events``);
    ``new_event_ids``: ``event_id`` of the events not stored yet (the first copy of each).

    The batch's distinct entities (kind, key, namespace, name, first position) are joined with the key
    table's rows for their keys; the owner of a key is the table's row, else the batch's first entity of
    that key. Entities that are not their key's owner are contested: collected (few, normally none),
    and only then are the events naming them looked up."""
    refs = entity_references(valid, "event_id", "ingest_seq")
    entities = refs.groupBy(*ENTITY_COLUMNS).agg(F.min(F.struct("ingest_seq", "ref_position")).alias("first"))
    stored = spark.table(key_table).select(
        *KEY_COLUMNS, F.col("namespace_name").alias("stored_namespace"), F.col("name").alias("stored_name")
    )
    in_batch_first = F.min(F.struct(F.col("first"), "namespace_name", "name")).over(Window.partitionBy(*KEY_COLUMNS))
    owned = (
        entities.join(stored, KEY_COLUMNS, "left")
        .withColumn("batch_owner", in_batch_first)
        .select(
            *ENTITY_COLUMNS,
            F.col("first.ingest_seq").alias("first_ingest_seq"),
            F.col("stored_namespace").isNotNull().alias("is_stored"),
            F.coalesce(F.col("stored_namespace"), F.col("batch_owner.namespace_name")).alias("owner_namespace"),
            F.coalesce(F.col("stored_name"), F.col("batch_owner.name")).alias("owner_name"),
        )
        .persist()
    )
    try:
        is_owner = (F.col("namespace_name") == F.col("owner_namespace")) & (F.col("name") == F.col("owner_name"))
        contested = owned.where(~is_owner).select(*ENTITY_COLUMNS, "owner_namespace", "owner_name").collect()
        batch_owners = owned.where(~F.col("is_stored") & is_owner)
        if not contested:
            new_owners = batch_owners.select(*ENTITY_COLUMNS, "first_ingest_seq")
            return KeyCheck({}, _owner_rows(new_owners, batch_id).localCheckpoint())
        rejected = _rejected_events(spark, refs, new_event_ids, contested)
        kept_refs = refs.join(
            spark.createDataFrame([(event_id,) for event_id in rejected], "event_id string"), "event_id", "left_anti"
        )
        named_by_kept = kept_refs.groupBy(*ENTITY_COLUMNS).agg(F.min("ingest_seq").alias("first_ingest_seq"))
        new_owners = batch_owners.select(*ENTITY_COLUMNS).join(named_by_kept, ENTITY_COLUMNS)
        return KeyCheck(rejected, _owner_rows(new_owners, batch_id).localCheckpoint())
    finally:
        owned.unpersist()


def _owner_rows(owners: DataFrame, batch_id: str) -> DataFrame:
    return owners.select(
        *ENTITY_COLUMNS,
        F.col("first_ingest_seq").cast("long").alias("first_ingest_seq"),
        F.lit(batch_id).alias("first_batch_id"),
    )


def _rejected_events(spark: SparkSession, refs: DataFrame, new_event_ids: DataFrame, contested: list) -> dict[str, str]:
    """event id → reason for each new event naming a contested entity; the reason names its first such
    reference (in the event's reference order)."""
    owner_of = {
        (row["entity_kind"], row["namespace_name"], row["name"]): (row["entity_key"], row["owner_namespace"],
                                                                  row["owner_name"])
        for row in contested
    }
    contested_frame = spark.createDataFrame(
        [(kind, namespace, name) for kind, namespace, name in owner_of],
        "entity_kind string, namespace_name string, name string",
    )
    first_hit = (
        refs.join(F.broadcast(contested_frame), ["entity_kind", "namespace_name", "name"], "left_semi")
        .join(new_event_ids, "event_id", "left_semi")
        .groupBy("event_id")
        .agg(F.min(F.struct("ref_position", "entity_kind", "namespace_name", "name")).alias("hit"))
        .collect()
    )
    rejected: dict[str, str] = {}
    for row in first_hit:
        kind, namespace, name = row["hit"]["entity_kind"], row["hit"]["namespace_name"], row["hit"]["name"]
        key, owner_namespace, owner_name = owner_of[(kind, namespace, name)]
        rejected[row["event_id"]] = collision_reason(kind, namespace, name, key, owner_namespace, owner_name)
    return rejected
