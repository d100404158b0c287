"""The parse-and-write floor with a Python JSON parser inside Spark, beside ``from_json``'s.

The NDJSON lines reach Python workers as Arrow batches (``mapInArrow``), are parsed with ``orjson``
into the shape of the ingest's text parse (``TEXT_PARSE_SCHEMA``: scalars as text, each facet as its
compact JSON text) and written as Parquet. If this measured cheaper than ``from_json`` it would be
the ingest's parser; ``bench scale`` prints both floors so that the choice rests on a figure.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructType

from python_jobs.lineage.event_parsing import CORRUPT_COLUMN, PARSE_OPTIONS, TEXT_PARSE_SCHEMA
from python_jobs.tools.bench.harness import jvm_cpu_seconds, jvm_pid, process_tree_cpu_seconds, timed
from python_jobs.tools.bench.report import Cost

FACET_MAPS = ("facets", "inputFacets", "outputFacets")


def _scalar(value: Any, dumps) -> str | None:
    """Spark's text rendering of a JSON value read as a string: a string as is, anything else its JSON."""
    if value is None or isinstance(value, str):
        return value
    return dumps(value).decode()


def _facets(value: Any, dumps) -> list[tuple[str, str]] | None:
    if not isinstance(value, dict):
        return None
    return [(name, _scalar(body, dumps)) for name, body in value.items()]


def _entity(value: Any, dumps, fields: tuple[str, ...]) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    return {name: _facets(value.get(name), dumps) if name in FACET_MAPS else _scalar(value.get(name), dumps)
            for name in fields}


def event_row(text: str, loads, dumps) -> dict[str, Any]:
    """One line as the text parse's struct; a line that is not a JSON object keeps only its text."""
    try:
        event = loads(text)
    except ValueError:
        event = None
    if not isinstance(event, dict):
        return {CORRUPT_COLUMN: text}
    datasets = {key: [_entity(entry, dumps, ("namespace", "name", "facets", f"{key[:-1]}Facets"))
                      for entry in event.get(key) or []] if isinstance(event.get(key), list) else None
                for key in ("inputs", "outputs")}
    return {
        **{name: _scalar(event.get(name), dumps) for name in ("eventTime", "eventType", "producer", "schemaURL")},
        "run": _entity(event.get("run"), dumps, ("runId", "facets")),
        "job": _entity(event.get("job"), dumps, ("namespace", "name", "facets")),
        **datasets,
        "dataset": _entity(event.get("dataset"), dumps, ("namespace", "name", "facets")),
        CORRUPT_COLUMN: None,
    }


def orjson_batches(schema: StructType):
    """The ``mapInArrow`` function: ``value`` lines in, rows of ``schema`` (the text parse's) out."""
    arrow_type = pa.struct([pa.field(f.name, _arrow_type(f.dataType)) for f in schema.fields])

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import orjson  # on the worker: only this benchmark needs it (a dev dependency)

        for batch in batches:
            rows = [event_row(text, orjson.loads, orjson.dumps) for text in batch.column("value").to_pylist()]
            yield pa.RecordBatch.from_struct_array(pa.array(rows, type=arrow_type))

    return parse


def _arrow_type(spark_type) -> pa.DataType:
    return to_arrow_type(spark_type)


def python_parse_floor(spark: SparkSession, path: Path, out_dir: Path) -> Cost:
    """The floor with ``orjson`` in Python workers: the JVM's CPU and the JVM's with its workers' (the
    parse runs outside the JVM, so only the second compares with ``from_json``'s)."""
    schema = StructType.fromDDL(TEXT_PARSE_SCHEMA.removeprefix("struct<").removesuffix(">"))
    frame = spark.read.text(str(path)).mapInArrow(orjson_batches(schema), schema)
    return _timed_write(spark, frame, out_dir)


def text_parse_floor(spark: SparkSession, path: Path, out_dir: Path) -> Cost:
    """``from_json`` with the ingest's text-parse schema, measured the same way as ``python_parse_floor``."""
    frame = spark.read.text(str(path)).select(
        F.from_json("value", TEXT_PARSE_SCHEMA, PARSE_OPTIONS).alias("event")).select("event.*")
    return _timed_write(spark, frame, out_dir)


def _timed_write(spark: SparkSession, frame, out_dir: Path) -> Cost:
    pid = jvm_pid(spark)
    jvm_before, tree_before = jvm_cpu_seconds(spark), process_tree_cpu_seconds(pid)
    seconds, _ = timed(lambda: frame.write.mode("overwrite").parquet(str(out_dir)))
    cost = Cost(seconds, jvm_cpu_seconds(spark) - jvm_before, process_tree_cpu_seconds(pid) - tree_before)
    shutil.rmtree(out_dir, ignore_errors=True)
    return cost
