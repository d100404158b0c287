"""``schema show <namespace> <dataset>``: the history of a dataset's schema, one line per schema event."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pyspark.sql import functions as F

from python_jobs.errors import UserFacingError
from python_jobs.keys import dataset_uuid
from python_jobs.settings import load_settings
from python_jobs.spark import get_spark


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    show = groups["schema"].add_parser("show", help="print a dataset's schema history with its changes")
    show.add_argument("namespace")
    show.add_argument("dataset")
    show.add_argument("--ddl", action="store_true", help="also print each version's Spark DDL")
    show.set_defaults(handler=run_show)


def _change_text(row: dict[str, Any]) -> str:
    parts = []
    if row["sequence_number"] == 1:
        return f"initial schema, {row['field_count']} fields"
    for label, key in (("added", "fields_added"), ("removed", "fields_removed"),
                       ("type changed", "fields_type_changed"), ("doc changed", "fields_description_changed")):
        if row[key]:
            parts.append(f"{label}: {', '.join(row[key])}")
    return "; ".join(parts) or "no field change"


def format_history(rows: Sequence[dict[str, Any]], with_ddl: bool = False) -> str:
    header = ("seq", "first seen (UTC)", "schema version", "fields", "compatible", "change")
    lines = [
        (
            str(row["sequence_number"]),
            row["event_time"].strftime("%Y-%m-%d %H:%M:%S") if row["event_time"] else "-",
            row["schema_version_uuid"],
            str(row["field_count"]),
            "yes" if row["is_compatible"] else "NO",
            _change_text(row),
        )
        for row in rows
    ]
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) for i in range(len(header) - 1)]
    rendered = ["  ".join(h.ljust(w) for h, w in zip(header, [*widths, 0], strict=True)).rstrip()]
    for line, row in zip(lines, rows, strict=True):
        rendered.append("  ".join(v.ljust(w) for v, w in zip(line, [*widths, 0], strict=True)).rstrip())
        if with_ddl:
            rendered.append(f"      ddl: {row['ddl']}")
    return "\n".join(rendered)


def run_show(args: argparse.Namespace) -> int:
    settings = load_settings()
    spark = get_spark(settings)
    # Keyed like every dataset (keys.dataset_uuid), so changelog streams are found as well as OpenLineage datasets.
    events = (
        spark.table(settings.table("lineage", "dataset_schema_events"))
        .where(F.col("dataset_uuid") == dataset_uuid(args.namespace, args.dataset))
        .orderBy("sequence_number")
        .collect()
    )
    if not events:
        raise UserFacingError(
            f"no schema events for dataset {args.namespace}:{args.dataset} in "
            f"{settings.table('lineage', 'dataset_schema_events')}"
        )
    print(f"schema history of {args.namespace}:{args.dataset} ({len(events)} versions)")
    if events:
        print(format_history([event.asDict() for event in events], with_ddl=args.ddl))
    return 0
