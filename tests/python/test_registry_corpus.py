"""Conformance over real public Iglu schemas (../shared/corpus/iglu, a static registry root)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from python_jobs.ingest.registry import RegistrySchema, check_schema_file, ingest_registry, registry_files
from python_jobs.registry.catalog import RegisteredSchema, model_plans
from python_jobs.registry.ddl import migration_script
from python_jobs.registry.naming import table_name
from python_jobs.registry.schemaver import SchemaVer

pytestmark = pytest.mark.corpus
IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


@pytest.fixture(scope="module")
def iglu_root(shared_corpus: Path) -> Path:
    return shared_corpus / "iglu"


@pytest.fixture(scope="module")
def corpus_schemas(iglu_root: Path) -> list[RegistrySchema]:
    checked = [
        check_schema_file(path.relative_to(iglu_root / "schemas").parts, path.read_text(encoding="utf-8"))
        for path in registry_files(iglu_root)
    ]
    rejected = [c for c in checked if not isinstance(c, RegistrySchema)]
    assert rejected == [], "every published Iglu Central schema should pass the registry checks"
    return [c for c in checked if isinstance(c, RegistrySchema)]


def registered(schemas: list[RegistrySchema]) -> list[RegisteredSchema]:
    return [RegisteredSchema(s.key.vendor, s.key.name, s.key.format, str(s.key.version), s.text) for s in schemas]


def test_every_corpus_family_gets_a_valid_deterministic_column_order(corpus_schemas):
    plans = model_plans(registered(corpus_schemas))
    assert len(plans) == len({(s.key.vendor, s.key.name, s.key.version.model) for s in corpus_schemas})
    reversed_plans = model_plans(list(reversed(registered(corpus_schemas))))
    for key, plan in plans.items():
        names = [c.name for c in plan.columns]
        assert names == [c.name for c in reversed_plans[key].columns], key
        assert len(names) == len(set(names)) and all(IDENTIFIER.match(n) for n in names), key
        assert [c.position for c in plan.columns] == list(range(1, len(names) + 1))
        first = str(plan.versions[0].version)
        first_columns = [c for c in plan.columns if c.introduced_in == first]
        # Required first, then nullable, each group by name (in the first version).
        expected_first = sorted(first_columns, key=lambda c: (c.nullable, c.name))
        assert names[: len(first_columns)] == [c.name for c in expected_first]
        appended = plan.columns[len(first_columns):]
        assert all(c.nullable for c in appended), key
        order = [SchemaVer(*map(int, c.introduced_in.split("-"))) for c in appended]
        assert order == sorted(order), key


def test_corpus_types_follow_the_type_table(corpus_schemas):
    plans = model_plans(registered(corpus_schemas))
    mobile = {c.name: c for c in plans[("com.snowplowanalytics.snowplow", "mobile_context", 1)].columns}
    assert [c for c in mobile][:4] == ["device_manufacturer", "device_model", "os_type", "os_version"]
    assert mobile["battery_level"].spark_type == "INT"  # integer 0..100
    assert mobile["physical_memory"].spark_type == "BIGINT"  # integer 0..2^63-1
    assert mobile["scale"].spark_type == "DOUBLE"  # number without multipleOf
    assert mobile["network_type"].introduced_in == "1-0-1" and mobile["network_type"].nullable
    geo = {c.name: c for c in plans[("com.snowplowanalytics.snowplow", "geolocation_context", 1)].columns}
    assert geo["latitude"].spark_type == "DOUBLE" and not geo["latitude"].nullable


def test_corpus_registry_ingests_and_its_ddl_runs_on_spark(spark, isolated_settings, iglu_root, corpus_schemas):
    report = ingest_registry(spark, isolated_settings, iglu_root)
    assert (report.files, report.accepted, report.rejected) == (len(corpus_schemas), len(corpus_schemas), 0)
    assert report.gaps == [] and report.breaking == []
    again = ingest_registry(spark, isolated_settings, iglu_root)
    assert (again.accepted, again.already_present) == (0, len(corpus_schemas))
    plans = model_plans(registered(corpus_schemas))
    for (vendor, name, model), plan in plans.items():
        table = isolated_settings.table("registry", table_name(vendor, name, model))
        for statement in migration_script(table, plan).split(";"):
            sql = "\n".join(line for line in statement.splitlines() if not line.startswith("--")).strip()
            if sql:
                spark.sql(sql)
        fields = [f.name for f in spark.table(table).schema.fields]
        assert fields[5:] == [c.name for c in plan.columns]
