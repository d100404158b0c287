"""The adapter reads table properties and column names from the text dbt-spark caches per table."""

from dbt.adapters.spark_python.relation_text import table_property, top_level_columns

INFORMATION = """Database: lineage
Table: jobs
Type: MANAGED
Provider: parquet
Table Properties: [lineage.input_through=2012, transient_lastDdlTime=1764150000]
Location: file:/tmp/warehouse/lineage.db/jobs
Schema: root
 |-- uuid: string (nullable = true)
 |-- head: struct (nullable = true)
 |    |-- dataset_uuid: string (nullable = true)
 |-- ingest_seq: long (nullable = true)
"""


def test_a_set_property_is_read_and_an_unset_one_is_none():
    assert table_property(INFORMATION, "lineage.input_through") == "2012"
    assert table_property(INFORMATION, "lineage.view_fingerprint") is None
    assert table_property("Type: MANAGED\n", "lineage.input_through") is None


def test_a_property_name_is_matched_whole():
    assert table_property("Table Properties: [xlineage.input_through=1, lineage.input_through=7]\n",
                          "lineage.input_through") == "7"


def test_columns_are_the_top_level_fields_in_order():
    assert top_level_columns(INFORMATION) == ["uuid", "head", "ingest_seq"]
    assert top_level_columns("") == []
