"""``ingest snapshot``: parsing, and every way a snapshot is refused without writing anything."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from snapshot_files import write_csv  # tests/python is on sys.path

from python_jobs.errors import UserFacingError
from python_jobs.ingest.snapshot import (
    SnapshotRejected,
    column_name_problems,
    ingest_snapshot,
    parse_timestamp,
    schema_difference,
    snapshot_table_name,
)

T0 = datetime(2024, 5, 1, 2, 0)
HEADER = ["person_id", "name", "score"]


def test_parse_timestamp_normalises_to_naive_utc():
    assert parse_timestamp("2024-05-01T04:00:00+02:00", "--snapshot-time") == datetime(2024, 5, 1, 2, 0)
    assert parse_timestamp("2024-05-01T02:00:00Z", "--snapshot-time") == datetime(2024, 5, 1, 2, 0)
    assert parse_timestamp("2024-05-01 02:00", "--snapshot-time") == datetime(2024, 5, 1, 2, 0)
    with pytest.raises(UserFacingError, match="--system-time 'yesterday' is not an ISO-8601 timestamp"):
        parse_timestamp("yesterday", "--system-time")


def test_column_names_reserved_duplicated_or_empty():
    assert column_name_problems(["id", "name"]) == []
    problems = column_name_problems(["id", "OP", "system_time", "Id", ""])
    assert any("'OP', 'system_time'" in p and "reserved" in p for p in problems)
    assert any("'id'" in p and "more than once" in p for p in problems)
    assert any("empty name" in p for p in problems)


def test_schema_difference_is_case_insensitive_and_names_both_sides():
    assert schema_difference(["id", "Name"], ["name", "ID"]) is None
    assert schema_difference(["id", "name"], ["id", "email"]) == "missing ['name']; unexpected ['email']"


def test_dataset_names_are_checked():
    assert snapshot_table_name("crm_accounts") == "crm_accounts_snapshots"
    with pytest.raises(UserFacingError, match="lower-case letters"):
        snapshot_table_name("CRM-accounts")


def _audit_reasons(spark, settings) -> list[str]:
    table = settings.table("audit", "snapshot_rejections")
    if not spark.catalog.tableExists(table):
        return []
    return [r.reason for r in spark.table(table).orderBy("ingested_at").collect()]


def test_rejections_write_nothing_and_are_audited(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    table = settings.table("raw", "people_snapshots")

    def load(name: str, header: list[str], rows: list[tuple], when: datetime, key=("person_id",)):
        path = write_csv(tmp_path / f"{name}.csv", header, rows)
        return ingest_snapshot(spark, settings, "people", path, when, when + timedelta(minutes=5), key)

    with pytest.raises(SnapshotRejected, match=r"'op'.*reserved system column names"):
        load("reserved", ["person_id", "op"], [("p1", "x")], T0)
    assert not spark.catalog.tableExists(table)

    first = load("s0", HEADER, [("p1", "Ann", "10"), ("p2", "Bob", "20")], T0)
    assert (first.snapshot_seq, first.rows, first.already_loaded) == (0, 2, False)

    with pytest.raises(SnapshotRejected, match=r"duplicate primary keys, e.g. \(person_id='p1'\) x2"):
        load("dupes", HEADER, [("p1", "Ann", "10"), ("p1", "Ann B", "11"), ("p2", "Bob", "20")], T0 + timedelta(1))
    with pytest.raises(SnapshotRejected, match=r"NULL primary key values, e.g. \(person_id=None\)"):
        load("nulls", HEADER, [("p1", "Ann", "10"), (None, "Nobody", "0")], T0 + timedelta(1))
    with pytest.raises(SnapshotRejected, match="older than the newest loaded snapshot"):
        load("older", HEADER, [("p1", "Ann", "10")], T0 - timedelta(1))
    with pytest.raises(SnapshotRejected, match=r"a different snapshot with snapshot time .* is already loaded"):
        load("same_time", HEADER, [("p1", "Ann", "99")], T0)
    with pytest.raises(SnapshotRejected, match=r"columns differ .*missing \['score'\]; unexpected \['points'\]"):
        load("renamed", ["person_id", "name", "points"], [("p1", "Ann", "10")], T0 + timedelta(1))
    with pytest.raises(SnapshotRejected, match="loaded with primary key"):
        load("other_key", HEADER, [("p1", "Ann", "10")], T0 + timedelta(1), key=("name",))

    # The same file again, rows in another order: a no-op, not a second snapshot.
    again = load("s0_again", HEADER, [("p2", "Bob", "20"), ("p1", "Ann", "10")], T0)
    assert again.already_loaded and again.snapshot_seq == 0

    # The key recorded by the first load is checked even when the caller does not repeat it.
    with pytest.raises(SnapshotRejected, match="duplicate primary keys"):
        load("dupes_no_key", HEADER, [("p1", "Ann", "10"), ("p1", "Ann", "10")], T0 + timedelta(2), key=())

    rows = spark.table(table).groupBy("snapshot_seq").count().collect()
    assert [(r.snapshot_seq, r["count"]) for r in rows] == [(0, 2)]
    assert _audit_reasons(spark, settings) == [
        "reserved_or_invalid_column",
        "bad_primary_key",
        "bad_primary_key",
        "snapshot_out_of_order",
        "snapshot_time_taken",
        "schema_mismatch",
        "primary_key_mismatch",
        "bad_primary_key",
    ]
    # Counted per snapshot: every file offered is loaded whole (its rows in raw) or rejected whole
    # (its rows read recorded in the audit row, none in raw).
    audit = spark.table(settings.table("audit", "snapshot_rejections")).orderBy("ingested_at").collect()
    by_file = {Path(r.source_file).stem: (r.reason, r.rows_read, r.detail) for r in audit}
    assert by_file["dupes"][:2] == ("bad_primary_key", 3)
    assert by_file["dupes"][2].endswith("dupes.csv: duplicate primary keys, e.g. (person_id='p1') x2")
    assert by_file["nulls"][:2] == ("bad_primary_key", 2)
    assert by_file["nulls"][2].endswith("nulls.csv: NULL primary key values, e.g. (person_id=None)")
    assert by_file["older"][:2] == ("snapshot_out_of_order", 1)
    assert "older.csv: snapshot time 2024-04-30 02:00:00 is older than the newest loaded snapshot " \
        "(2024-05-01 02:00:00, snapshot 0); snapshots must be loaded in time order" in by_file["older"][2]
    assert by_file["dupes_no_key"][:2] == ("bad_primary_key", 2)
    assert spark.table(table).count() == first.rows == 2


def test_malformed_csv_and_lossy_types_reject_the_whole_snapshot(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    ndjson = tmp_path / "typed.ndjson"
    ndjson.write_text('{"person_id": "p1", "score": 10}\n{"person_id": "p2", "score": 20}\n')
    loaded = ingest_snapshot(spark, settings, "typed", ndjson, T0, T0, ("person_id",))
    schema = spark.table(settings.table("raw", "typed_snapshots")).schema
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields][:2] == [
        ("person_id", "string"),
        ("score", "bigint"),
    ]
    assert loaded.rows == 2

    lossy = write_csv(tmp_path / "lossy.csv", ["person_id", "score"], [("p1", "10"), ("p2", "twenty")])
    with pytest.raises(SnapshotRejected, match=r"values do not fit the dataset's column types.*twenty"):
        ingest_snapshot(spark, settings, "typed", lossy, T0 + timedelta(1), T0 + timedelta(1))

    malformed = tmp_path / "malformed.ndjson"
    malformed.write_text('{"person_id": "p1", "score": 10}\n{"person_id": "p2", "score": \n')
    with pytest.raises(SnapshotRejected, match=r"1 malformed record\(s\), e.g. .*\"p2\""):
        ingest_snapshot(spark, settings, "typed", malformed, T0 + timedelta(1), T0 + timedelta(1))

    assert spark.table(settings.table("raw", "typed_snapshots")).count() == 2
    rejection = spark.table(settings.table("audit", "snapshot_rejections")).orderBy("ingested_at").collect()
    assert [(r.reason, r.rows_read, r.dataset) for r in rejection] == [
        ("type_mismatch", 2, "typed"),
        ("malformed_record", 2, "typed"),
    ]
    assert rejection[1].source_file == str(malformed.resolve())
