"""The key macros against their Python twin and against Java's UUID.nameUUIDFromBytes (Marquez's
primitive), called through the Spark JVM: schema version ids for flat schemas must equal Marquez's."""

from __future__ import annotations

import pytest

from python_jobs.dbt import run_dbt
from python_jobs.keys import dataset_uuid, name_uuid

# (namespace, dataset name, [(field name, type or None), ...])
SCHEMAS = [
    ("ns", "empty", []),
    ("warehouse", "raw.orders", [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "decimal(12,2)")]),
    # duplicates collapse, description is not part of the pair, a null type sorts first
    ("ns", "dups", [("b", "int"), ("a", None), ("b", "int"), ("a", "string"), ("B", "int")]),
    # Java orders by UTF-16 code units: U+1F600 (a surrogate pair, 0xD83D...) before U+FFFF
    ("ns", "unicode", [("\uffff", "x"), ("\U0001f600", "x"), ("é", "t"), ("z", "t")]),
]


def _java_pair_order(pair: tuple[str, str | None]) -> tuple[bytes, bytes]:
    """Pair.compareTo: by name, then type with null first; strings by UTF-16 code units."""
    name, kind = pair
    return name.encode("utf-16-be"), b"" if kind is None else b"\x00" + kind.encode("utf-16-be")


def marquez_schema_version(jvm, namespace: str, name: str, fields: list[tuple[str, str | None]]) -> str:
    """Marquez's Utils.newDatasetSchemaVersionFor rebuilt step by step, with Java checking the
    ordering and computing the UUID: distinct pairs sorted by (name, type), null first, joined by ':'."""
    distinct = sorted(set(fields), key=_java_pair_order)
    # Cross-check the code-unit ordering against Java's own String.compareTo.
    java_names = jvm.java.util.ArrayList()
    for field_name, _ in distinct:
        java_names.add(field_name)
    jvm.java.util.Collections.sort(java_names)
    assert list(java_names) == [field_name for field_name, _ in distinct]
    tokens = ":".join(n if t is None else f"{n}:{t}" for n, t in distinct)
    text = f"{namespace}:{name}:{tokens}"
    return str(jvm.java.util.UUID.nameUUIDFromBytes(bytearray(text.encode("utf-8"))).toString())


def _field_array_sql(fields: list[tuple[str, str | None]]) -> str:
    def literal(value: str | None) -> str:
        if value is None:
            return "cast(null as string)"
        return "'" + value.replace("'", "''") + "'"

    if not fields:
        return "cast(array() as array<struct<name: string, type: string>>)"
    items = ", ".join(f"named_struct('name', {literal(n)}, 'type', {literal(t)})" for n, t in fields)
    return f"array({items})"


@pytest.fixture(scope="module")
def compiled_keys(settings, spark):
    """One dbt compile of every macro call the tests need; returns name → value computed by Spark."""
    selects = []
    for index, (namespace, name, fields) in enumerate(SCHEMAS):
        selects.append(
            f"{{{{ schema_version_uuid(\"'{namespace}'\", \"'{name}'\", \"{_field_array_sql(fields)}\") }}}}"
            f" as schema_{index}"
        )
    selects.append("{{ dataset_uuid(\"'warehouse'\", \"'raw.orders'\") }} as dataset_key")
    selects.append("{{ name_uuid(\"'héllo wörld ☃'\") }} as unicode_key")
    inline = "select " + ", ".join(selects)
    outcome = run_dbt(settings, ["compile", "--inline", inline, "--quiet"])
    sql = outcome.result.results[0].node.compiled_code
    return spark.sql(sql).first().asDict()


def test_name_uuid_macro_equals_java_and_python(compiled_keys, spark):
    jvm = spark.sparkContext._jvm
    text = "héllo wörld ☃"
    java = str(jvm.java.util.UUID.nameUUIDFromBytes(bytearray(text.encode("utf-8"))).toString())
    assert compiled_keys["unicode_key"] == java == name_uuid(text)
    assert compiled_keys["dataset_key"] == dataset_uuid("warehouse", "raw.orders")


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_schema_version_uuid_equals_marquez(compiled_keys, spark, index):
    namespace, name, fields = SCHEMAS[index]
    expected = marquez_schema_version(spark.sparkContext._jvm, namespace, name, fields)
    assert compiled_keys[f"schema_{index}"] == expected


def test_known_marquez_values(compiled_keys, spark):
    # Fixed ids of the Marquez strings (checked once against Java's UUID.nameUUIDFromBytes below),
    # so a change in the macro is caught even if the JVM oracle is not consulted.
    known = {
        "ns:empty:": "dcd6d4d0-c236-3e14-ad5b-a7acb41f1e81",
        "warehouse:raw.orders:amount:decimal(12,2):customer_id:bigint:order_id:bigint":
            "200587bd-6965-307b-8b60-cb0cf2033f74",
        "ns:dups:B:int:a:a:string:b:int": "628f66a1-4a08-3890-9fb3-ed741ccf3fd6",
    }
    jvm = spark.sparkContext._jvm
    for text, expected in known.items():
        assert str(jvm.java.util.UUID.nameUUIDFromBytes(bytearray(text.encode("utf-8"))).toString()) == expected
    assert [compiled_keys["schema_0"], compiled_keys["schema_1"], compiled_keys["schema_2"]] == list(known.values())
