"""The schema versions kept between refreshes (schema_versions.py): fields per version in Spark's order, versions
per dataset by creation, and a version with a field not found read again. Pure: no Spark (the API's Spark tests
compare an extended load with a full one)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from python_jobs.marquez_api.schema_versions import SchemaVersion, SchemaVersions, _bounds, fields_by_version

AT = datetime(2026, 3, 1, tzinfo=UTC)


def test_fields_come_by_name_then_type_and_a_version_missing_one_is_read_again():
    table = pa.table({
        "schema_version": ["v1", "v1", "v1", "v2", "v2"],
        "found": [True, True, True, True, False],
        "name": ["b", "a", "a", "x", None],
        "type": ["INT", "STRING", None, "INT", None],
        "description": [None, "the a", None, None, None],
    })
    fields, incomplete, read = fields_by_version(table)
    assert [(f["name"], f["type"]) for f in fields["v1"]] == [("a", None), ("a", "STRING"), ("b", "INT")]
    assert fields["v1"][1] == {"name": "a", "type": "STRING", "tags": [], "description": "the a"}
    assert [f["name"] for f in fields["v2"]] == ["x"]  # served without the field not found, as an inner join
    assert incomplete == {"v2"} and read == 5


def test_versions_per_dataset_by_creation_nulls_first_then_id():
    versions = SchemaVersions(
        fields={"s2": [{"name": "x"}]},
        versions={"s2": SchemaVersion("d1", AT), "s1": SchemaVersion("d1", AT), "s0": SchemaVersion("d1", None),
                  "s3": SchemaVersion("d2", AT)},
    )
    shown = versions.by_dataset(lambda moment: None if moment is None else "t")
    assert [v["id"] for v in shown["d1"]] == ["s0", "s1", "s2"]
    assert shown["d1"][2] == {"id": "s2", "createdAt": "t", "fields": [{"name": "x"}]}
    assert [v["id"] for v in shown["d2"]] == ["s3"]


def test_a_read_past_a_mark_names_the_versions_to_read_again():
    assert _bounds("seq", None, None, (), "uuid") == "(true)"
    assert _bounds("seq", 3, 9, (), "uuid") == "(seq > 3 and seq <= 9)"
    assert _bounds("seq", 3, None, ["b-1", "a-2", "x' or '1"], "uuid") == "((seq > 3) or uuid in ('a-2', 'b-1'))"
