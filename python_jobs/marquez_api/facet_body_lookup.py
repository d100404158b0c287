"""Where the read API finds facet bodies in ``staging.facet_body_store`` without reading the whole store.

The store holds each distinct canonical body once, keyed by its SHA-256 hex hash and partitioned by the hash's
first character (``body_shard``). Its public view, ``facet_bodies``, shows the bodies first stored through the
facet commit mark. Joining a few rows with the view reads and shuffles every body, however few are wanted (0.88
GB at 10M events). So a reader that wants some bodies looks in this order:

1. the bodies it kept from an earlier read (bodies are content-addressed: a hash's text never changes);
2. the bodies first stored since its previous mark: the store gains files per build, in ``first_ingest_seq``
   order, so that bound skips the older files by their statistics;
3. the rest by hash, in their shards only.

Each step returns a DataFrame, so that a caller selects what it needs of the body (its text, or values at JSON
paths) in Spark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pyspark.sql import DataFrame, SparkSession

from python_jobs.settings import Settings

SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


def store_table(settings: Settings) -> str:
    return settings.table("staging", "facet_body_store")


def wanted_hashes(hashes: Iterable[str | None]) -> list[str]:
    """The distinct well-formed hashes of ``hashes``, sorted (anything else cannot name a stored body, and is
    never put into a query)."""
    return sorted({h for h in hashes if h is not None and SHA256_HEX.match(h)})


def bodies_stored_between(spark: SparkSession, settings: Settings, after: int, through: int) -> DataFrame:
    """The store's rows first stored with ``after < first_ingest_seq <= through``."""
    return spark.table(store_table(settings)).where(
        f"first_ingest_seq > {int(after)} and first_ingest_seq <= {int(through)}")


def bodies_by_hash(spark: SparkSession, settings: Settings, hashes: list[str], through: int) -> DataFrame | None:
    """The store's rows of ``hashes`` (well-formed ones only) first stored through ``through``, reading only their
    shards; None when no hash is well formed."""
    wanted = wanted_hashes(hashes)
    if not wanted:
        return None
    shards = ", ".join(f"'{shard}'" for shard in sorted({h[0] for h in wanted}))
    keys = spark.createDataFrame([(h,) for h in wanted], "body_hash string")
    return (spark.table(store_table(settings))
            .where(f"body_shard in ({shards}) and first_ingest_seq <= {int(through)}")
            .join(keys, "body_hash", "left_semi"))


def of_hashes(rows: DataFrame, hashes: list[str]) -> DataFrame:
    """``rows`` (store rows) restricted to ``hashes``: a semi-join with a small list, which Spark broadcasts."""
    keys = rows.sparkSession.createDataFrame([(h,) for h in wanted_hashes(hashes)], "body_hash string")
    return rows.join(keys, "body_hash", "left_semi")
