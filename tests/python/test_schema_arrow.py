"""Arrow schemas from OpenLineage schema facets: type dialects, round trip, DDL and change classification."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import StructType

from python_jobs.schema.arrow_schema import arrow_schema, deserialize, render_json, serialize, spark_ddl
from python_jobs.schema.changes import classify
from python_jobs.schema.types import FALLBACK_KEY, ORIGINAL_TYPE_KEY, TypeMapping, parse_type


@pytest.mark.parametrize(
    ("type_string", "expected"),
    [
        ("integer", pa.int32()),
        ("INT", pa.int32()),
        ("Int4", pa.int32()),
        ("bigint", pa.int64()),
        ("BIGINT", pa.int64()),
        ("smallint", pa.int16()),
        ("tinyint", pa.int8()),
        ("varchar(255)", pa.utf8()),
        ("VARCHAR (255)", pa.utf8()),
        ("character varying(40)", pa.utf8()),
        ("string", pa.utf8()),
        ("text", pa.utf8()),
        ("decimal(10,2)", pa.decimal128(10, 2)),
        ("DECIMAL(10, 2)", pa.decimal128(10, 2)),
        ("numeric(38,0)", pa.decimal128(38, 0)),
        ("numeric(50,10)", pa.decimal256(50, 10)),
        ("decimal", pa.decimal128(10, 0)),
        ("timestamp with time zone", pa.timestamp("us", tz="UTC")),
        ("TIMESTAMP WITH TIME ZONE", pa.timestamp("us", tz="UTC")),
        ("timestamp(6) with time zone", pa.timestamp("us", tz="UTC")),
        ("timestamptz", pa.timestamp("us", tz="UTC")),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestamp_ntz", pa.timestamp("us")),
        ("timestamp without time zone", pa.timestamp("us")),
        ("date", pa.date32()),
        ("DATE", pa.date32()),
        ("boolean", pa.bool_()),
        ("BOOL", pa.bool_()),
        ("double precision", pa.float64()),
        ("DOUBLE", pa.float64()),
        ("float", pa.float32()),
        ("real", pa.float32()),
        ("binary", pa.binary()),
        ("bytea", pa.binary()),
        ("array<string>", pa.list_(pa.utf8())),
        ("ARRAY<BIGINT>", pa.list_(pa.int64())),
        ("struct<a:int,b:string>", pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.utf8())])),
        ("map<string,int>", pa.map_(pa.utf8(), pa.int32())),
        (
            "array<struct<amount:decimal(10,2),tags:array<string>>>",
            pa.list_(pa.struct([pa.field("amount", pa.decimal128(10, 2)), pa.field("tags", pa.list_(pa.utf8()))])),
        ),
        ("map<string, struct<`x y`: double>>", pa.map_(pa.utf8(), pa.struct([pa.field("x y", pa.float64())]))),
    ],
)
def test_type_dialects_map_to_arrow(type_string, expected):
    assert parse_type(type_string) == expected


@pytest.mark.parametrize("type_string", ["geometry", "array<", "struct<a int>", "decimal(2,5)", "", None, "map<int>"])
def test_unknown_types_fall_back_to_string_and_are_counted(type_string):
    mapping = TypeMapping()
    schema = arrow_schema([{"name": "shape", "type": type_string}], mapping)
    assert schema.field("shape").type == pa.utf8()
    assert mapping.fallbacks == 1
    metadata = schema.field("shape").metadata
    assert metadata[FALLBACK_KEY.encode()] == b"true"
    if type_string:
        assert metadata[ORIGINAL_TYPE_KEY.encode()] == type_string.encode()


def test_nested_fields_in_the_facet_become_structs_lists_and_maps():
    schema = arrow_schema(
        [
            {
                "name": "customer",
                "type": "struct",
                "fields": [
                    {"name": "id", "type": "bigint"},
                    {"name": "address", "type": "record", "fields": [{"name": "city", "type": "varchar(40)"}]},
                ],
            },
            {"name": "tags", "type": "array", "fields": [{"name": "element", "type": "string"}]},
            {
                "name": "attrs",
                "type": "map",
                "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": "int"}],
            },
        ]
    )
    customer = schema.field("customer").type
    assert [customer.field(i).name for i in range(customer.num_fields)] == ["id", "address"]
    assert customer.field("id").type == pa.int64()
    assert customer.field("address").type.field("city").type == pa.utf8()
    assert schema.field("tags").type == pa.list_(pa.utf8())
    assert schema.field("attrs").type == pa.map_(pa.utf8(), pa.int32())


def test_ordinal_position_decides_field_order():
    schema = arrow_schema(
        [
            {"name": "b", "type": "int", "ordinal_position": 2},
            {"name": "a", "type": "int", "ordinal_position": 1},
            {
                "name": "c",
                "type": "struct",
                "ordinal_position": 3,
                "fields": [
                    {"name": "y", "type": "int", "ordinal_position": 2},
                    {"name": "x", "type": "int", "ordinal_position": 1},
                ],
            },
        ]
    )
    assert schema.names == ["a", "b", "c"]
    assert [f.name for f in schema.field("c").type] == ["x", "y"]


def test_spec_example_with_arrays_maps_and_unions():
    schema = arrow_schema(
        [
            {"name": "currency", "type": "object"},
            {"name": "phones", "type": "array", "fields": [{"name": "_element", "type": "string"}]},
            {
                "name": "custom_properties",
                "type": "map",
                "fields": [
                    {"name": "key", "type": "string"},
                    {
                        "name": "value",
                        "type": "union",
                        "fields": [
                            {"name": "_0", "type": "string"},
                            {"name": "_1", "type": "int64"},
                        ],
                    },
                ],
            },
        ]
    )
    assert schema.field("currency").type == pa.utf8()
    assert schema.field("phones").type == pa.list_(pa.utf8())
    value_type = schema.field("custom_properties").type.item_type
    assert [(f.name, f.type) for f in value_type] == [("_0", pa.utf8()), ("_1", pa.int64())]


def test_ipc_round_trip_keeps_schema_and_metadata():
    schema = arrow_schema(
        [
            {"name": "id", "type": "bigint", "description": "primary key"},
            {"name": "amount", "type": "decimal(12,2)"},
            {"name": "payload", "type": "struct<a:int,b:array<string>>", "description": "naïve ünïcode ✓"},
            {"name": "shape", "type": "geometry"},
        ],
        metadata={"dataset": "warehouse:orders"},
    )
    restored = deserialize(serialize(schema))
    assert restored.equals(schema, check_metadata=True)
    assert restored.metadata == {b"dataset": b"warehouse:orders"}
    assert restored.field("payload").metadata[b"description"] == "naïve ünïcode ✓".encode()


def test_json_rendering_is_readable_and_stable():
    schema = arrow_schema([{"name": "id", "type": "int", "description": "key"}])
    rendered = render_json(schema)
    assert rendered == render_json(arrow_schema([{"name": "id", "type": "int", "description": "key"}]))
    assert '"name": "id"' in rendered and '"type": "int32"' in rendered and '"description": "key"' in rendered


def test_spark_ddl_parses_back_in_spark(spark):
    schema = arrow_schema(
        [
            {"name": "id", "type": "bigint", "description": "it's the key"},
            {"name": "when", "type": "timestamp_ntz"},
            {"name": "nested", "type": "struct<a:decimal(10,2),b:map<string,array<int>>>"},
        ]
    )
    ddl = spark_ddl(schema)
    assert ddl.startswith("`id` BIGINT COMMENT 'it\\'s the key', `when` TIMESTAMP_NTZ")
    parsed = StructType.fromDDL(ddl)
    assert parsed.names == ["id", "when", "nested"]
    assert parsed["nested"].dataType.simpleString() == "struct<a:decimal(10,2),b:map<string,array<int>>>"


def test_change_classification():
    v1 = arrow_schema([{"name": "id", "type": "int"}, {"name": "addr", "type": "struct<city:string>"}])
    only_added = arrow_schema(
        [
            {"name": "id", "type": "int", "description": "now documented"},
            {"name": "addr", "type": "struct<city:string,zip:string>"},
            {"name": "email", "type": "string"},
        ]
    )
    change = classify(v1, only_added)
    assert change.added == ["addr.zip", "email"]
    assert change.removed == [] and change.type_changed == []
    assert change.description_changed == ["id"]
    assert change.is_compatible

    breaking = arrow_schema([{"name": "id", "type": "bigint"}])
    change = classify(v1, breaking)
    assert change.removed == ["addr", "addr.city"]
    assert change.type_changed == ["id"]
    assert not change.is_compatible

    assert classify(None, v1).added == [] and classify(None, v1).is_compatible
    assert classify(v1, v1).summary() == "no change"
