"""Registry ingest and typed tables on real Spark and dbt, each test in its own schema prefix."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from python_jobs.commands.registry import SAMPLE_EVENTS, SAMPLE_REGISTRY, load_samples
from python_jobs.dbt import run_dbt
from python_jobs.ingest.events import ingest_events
from python_jobs.ingest.registry import breaking_versions, ingest_registry
from python_jobs.registry.catalog import RegisteredSchema, model_plans
from python_jobs.registry.ddl import EVENT_COLUMNS, column_definitions
from python_jobs.registry.naming import table_name
from python_jobs.warehouse.fingerprint import table_fingerprint
from python_jobs.warehouse.main_job import SAMPLE_DBT_VARS

CHECKOUT_DIR = SAMPLE_REGISTRY / "schemas" / "com.example" / "checkout" / "jsonschema"
REGISTRY_MODELS = ["stg_registry_schemas", "stg_sd_events", "registry_columns", "registry_versions"]
EVENT_NAMES = [name for name, _ in EVENT_COLUMNS]


def registry_with(tmp_path: Path, versions: list[str]) -> Path:
    root = tmp_path / f"registry_{len(versions)}"
    target = root / "schemas" / "com.example" / "checkout" / "jsonschema"
    target.mkdir(parents=True)
    for version in versions:
        shutil.copy(CHECKOUT_DIR / version, target / version)
    return root


def checkout_event(version: str, order: str, **extra) -> str:
    data = {"orderId": order, "total": 12.34, "currency": "EUR", "itemCount": 2,
            "customer": {"id": f"c-{order}", "isMember": True}, **extra}
    return json.dumps({"schema": f"iglu:com.example/checkout/jsonschema/{version}", "data": data})


def events_file(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / f"{name}.ndjson"
    path.write_text("\n".join(lines) + "\n")
    return path


def build(settings, *models: str, command: str = "build") -> None:
    # cautious: the other typed tables' tests read registry_columns too, but their tables are not built here.
    # The com.example typed tables are the sample registry's: enabled by the var sample_inputs.
    run_dbt(settings, [command, "--indirect-selection", "cautious", "--select", *REGISTRY_MODELS, *models],
            extra_vars=SAMPLE_DBT_VARS)


def table_columns(spark, table: str) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema.fields]


def rows_by_order(spark, table: str, columns: list[str]) -> dict[str, dict]:
    return {row["order_id"]: row.asDict() for row in spark.table(table).select(*columns).collect()}


V101_EXTRA = {"channel": "web", "placedAt": "2026-03-01T10:00:00Z", "deliveryDate": "2026-03-05",
              "giftWrap": True, "discountRate": 0.5, "tags": ["a", "b"], "paymentDetails": {"k": [1, 2]},
              "shippingMethod": "express"}

V1_COLUMNS = ["currency", "customer__id", "customer__is_member", "item_count", "order_id", "total", "coupon",
              "customer__email"]
V101_COLUMNS = ["channel", "delivery_date", "discount_rate", "gift_wrap", "payment_details", "placed_at",
                "shipping_method", "tags"]
V102_COLUMNS = ["loyalty_points", "store_http_referrer"]


def test_table_evolves_through_three_versions_and_keeps_old_rows(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    table = settings.table("registry", "com_example_checkout_1")

    # 1-0-0: the table is created in registry order.
    ingest_registry(spark, settings, registry_with(tmp_path, ["1-0-0"]))
    first = events_file(tmp_path, "first", [checkout_event("1-0-0", "o1", coupon="SPRING"),
                                            checkout_event("1-0-0", "o2")])
    report = ingest_events(spark, settings, first)
    assert (report.read, report.accepted, report.new, report.rejected) == (2, 2, 2, 0)
    build(settings, "com_example_checkout_1", command="run")  # the data tests run once, in the last build
    assert [name for name, _ in table_columns(spark, table)] == EVENT_NAMES + V1_COLUMNS
    before = rows_by_order(spark, table, ["event_id", *V1_COLUMNS])
    assert before["o1"]["total"] == Decimal("12.34") and before["o1"]["coupon"] == "SPRING"

    # 1-0-1 adds eight properties (one required): appended after all 1-0-0 columns, old rows untouched.
    ingest_registry(spark, settings, registry_with(tmp_path, ["1-0-0", "1-0-1"]))
    second = events_file(tmp_path, "second", [checkout_event("1-0-1", "o3", **V101_EXTRA)])
    report = ingest_events(spark, settings, second)
    assert (report.read, report.new) == (1, 1)
    assert ingest_events(spark, settings, first).new == 0  # re-ingesting changes nothing
    build(settings, "com_example_checkout_1", command="run")
    assert [name for name, _ in table_columns(spark, table)] == EVENT_NAMES + V1_COLUMNS + V101_COLUMNS
    after = rows_by_order(spark, table, ["event_id", *V1_COLUMNS, *V101_COLUMNS])
    for order in ("o1", "o2"):
        assert {k: after[order][k] for k in before[order]} == before[order]
        assert all(after[order][c] is None for c in V101_COLUMNS)
    o3 = after["o3"]
    assert (o3["channel"], o3["gift_wrap"], o3["shipping_method"]) == ("web", True, "express")
    assert str(o3["placed_at"]) == "2026-03-01 10:00:00" and str(o3["delivery_date"]) == "2026-03-05"
    assert json.loads(o3["tags"]) == ["a", "b"] and json.loads(o3["payment_details"]) == {"k": [1, 2]}

    # 1-0-2 adds two more; the full DDL of ddl.py matches the table the materialization built.
    registry = registry_with(tmp_path, ["1-0-0", "1-0-1", "1-0-2"])
    ingest_registry(spark, settings, registry)
    third = events_file(tmp_path, "third", [
        checkout_event("1-0-2", "o4", **V101_EXTRA, loyaltyPoints=12345678901, storeHTTPReferrer="https://x/"),
    ])
    ingest_events(spark, settings, third)
    build(settings, "com_example_checkout_1", command="run")
    columns = table_columns(spark, table)
    assert [name for name, _ in columns] == EVENT_NAMES + V1_COLUMNS + V101_COLUMNS + V102_COLUMNS
    schemas = [RegisteredSchema("com.example", "checkout", "jsonschema", p.name, p.read_text())
               for p in (registry / "schemas/com.example/checkout/jsonschema").iterdir()]
    plan = model_plans(schemas)[("com.example", "checkout", 1)]
    assert [f"{name} {kind.upper()}" for name, kind in columns] == column_definitions(plan.columns)
    final = rows_by_order(spark, table, ["event_id", "schema_version", *V1_COLUMNS, *V101_COLUMNS, *V102_COLUMNS])
    assert {k: final["o3"][k] for k in after["o3"]} == after["o3"]
    assert final["o4"]["loyalty_points"] == 12345678901 and final["o4"]["store_http_referrer"] == "https://x/"
    assert final["o1"]["loyalty_points"] is None
    assert sorted(r["schema_version"] for r in final.values()) == ["1-0-0", "1-0-0", "1-0-1", "1-0-2"]

    # Column-count guard: the table gains a column this load does not know (a newer registry migrated it
    # while we ran). The load names its columns, so nothing shifts and the unknown column stays NULL.
    spark.sql(f"alter table {table} add columns (future_column string)")
    fourth = events_file(tmp_path, "fourth", [checkout_event("1-0-2", "o5", **V101_EXTRA, loyaltyPoints=7)])
    ingest_events(spark, settings, fourth)
    build(settings, "com_example_checkout_1")
    guarded = {row["order_id"]: row.asDict() for row in spark.table(table).collect()}
    assert len(guarded) == 5 and spark.table(table).count() == 5  # nothing loaded twice
    assert guarded["o5"]["loyalty_points"] == 7 and guarded["o5"]["channel"] == "web"
    assert guarded["o5"]["future_column"] is None and guarded["o5"]["total"] == Decimal("12.34")
    assert {k: guarded["o4"][k] for k in final["o4"]} == final["o4"]


def test_samples_breaking_change_recovery_rejections_and_idempotent_ingest(spark, isolated_settings):
    settings = isolated_settings
    load_samples(spark, settings)
    load_samples(spark, settings)  # the second ingest adds nothing anywhere
    raw_events = spark.table(settings.table("raw", "sd_events"))
    rejected = spark.table(settings.table("audit", "sd_events_rejected"))
    read = sum(1 for line in (SAMPLE_EVENTS / "events.ndjson").read_text().splitlines() if line.strip())
    distinct = raw_events.count()
    duplicates_in_file = 1
    assert distinct + duplicates_in_file + rejected.count() == read
    reasons = {row.source_line: row.reason for row in rejected.collect()}
    assert reasons[12] == "unknown property 'voucher' at /"
    assert reasons[13] == "wrong type at /total: expected number, got string"
    assert "missing required property 'channel' at /" in reasons[14]
    assert "missing required property 'isMember' at /customer" in reasons[14]
    assert reasons[15].startswith("wrong format at /placedAt: expected date-time")
    assert reasons[16].startswith("unknown schema: iglu:com.example/refund/jsonschema/1-0-0")
    assert reasons[17].startswith("invalid JSON")
    assert reasons[18].startswith("not a self-describing event")
    registry_rejections = {
        row.source_file: row.reason for row in spark.table(settings.table("audit", "registry_rejected")).collect()
    }
    assert registry_rejections == {
        "schemas/com.example/broken/jsonschema/1-0-0": "self.name is 'checkout' but the path says 'broken'",
        "schemas/com.example/broken/jsonschema/1-0-x": (
            "'1-0-x' is not a SchemaVer: expected MODEL-REVISION-ADDITION, three non-negative integers without "
            "leading zeros, e.g. 1-0-2"
        ),
    }

    [breaking] = breaking_versions(spark, settings)
    assert breaking.startswith("com.example/page_view 1-1-0: `referrer`: STRING since 1-0-0, BIGINT in 1-1-0 -> ")
    assert breaking.endswith("not com_example_page_view_1")

    selection = ["--select", *REGISTRY_MODELS, "path:models/registry/tables"]
    run_dbt(settings, ["build", *selection], extra_vars=SAMPLE_DBT_VARS)
    registry_tables = [f"{settings.schema('registry')}.{row.tableName}"
                       for row in spark.sql(f"show tables in {settings.schema('registry')}").collect()
                       # dbt's `__dbt_tmp` views are session temp views; `__staged_append` tables are the
                       # published appends' staging tables
                       if not row.isTemporary and "__" not in row.tableName]
    assert len(registry_tables) == 6  # 2 catalog tables, 3 typed tables, 1 recovery table
    before = {table: table_fingerprint(spark, table) for table in registry_tables}
    # a second run over the same input changes nothing
    run_dbt(settings, ["run", *selection], extra_vars=SAMPLE_DBT_VARS)
    assert {table: table_fingerprint(spark, table) for table in registry_tables} == before
    page_views = settings.table("registry", "com_example_page_view_1")
    versions = {r.version: r.asDict() for r in spark.table(settings.table("registry", "registry_versions")).collect()
                if r.name == "page_view"}
    suffix = versions["1-1-0"]["table_suffix"]
    assert suffix.startswith("_recovered_") and len(suffix) == len("_recovered_") + 8
    assert versions["1-1-0"]["conflicts"] == "`referrer`: STRING since 1-0-0, BIGINT in 1-1-0"
    recovered = spark.table(page_views + suffix)
    assert dict(table_columns(spark, page_views + suffix))["referrer"] == "bigint"
    assert [(r.schema_version, r.referrer, r.title) for r in recovered.collect()] == [("1-1-0", 42, "Docs")]
    assert {r.schema_version for r in spark.table(page_views).collect()} == {"1-0-0"}
    assert dict(table_columns(spark, page_views))["referrer"] == "string"
    signup = {r.version: r.missing_before for r in spark.table(settings.table("registry", "registry_versions"))
              .where("name = 'signup'").collect()}
    assert signup == {"1-0-0": "", "1-0-2": "1-0-1"}


# --- bad input: quarantined with the reason, counted (ingest only, no dbt) -------------------------


def rejected_reasons(spark, settings, table: str, key: str) -> dict:
    return {row[key]: row.reason for row in spark.table(settings.table("audit", table)).collect()}


def test_invalid_schemaver_is_quarantined_with_the_rule_and_counted(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    root = registry_with(tmp_path, ["1-0-0"])
    folder = root / "schemas" / "com.example" / "checkout" / "jsonschema"
    base = json.loads((CHECKOUT_DIR / "1-0-0").read_text())
    for bad in ("1-0-x", "1-01-0", "0-1-0"):  # the self block agrees with the path, so SchemaVer is what fails
        (folder / bad).write_text(json.dumps({**base, "self": {**base["self"], "version": bad}}))
    report = ingest_registry(spark, settings, root)
    assert (report.files, report.accepted, report.already_present, report.rejected) == (4, 1, 0, 3)
    rule = "is not a SchemaVer: expected MODEL-REVISION-ADDITION, three non-negative integers without leading zeros, " \
        "e.g. 1-0-2"
    expected = {
        "schemas/com.example/checkout/jsonschema/1-0-x": f"'1-0-x' {rule}",
        "schemas/com.example/checkout/jsonschema/1-01-0": f"'1-01-0' {rule}",
        "schemas/com.example/checkout/jsonschema/0-1-0": "'0-1-0' is not a SchemaVer: MODEL starts at 1",
    }
    assert rejected_reasons(spark, settings, "registry_rejected", "source_file") == expected
    assert spark.table(settings.table("raw", "registry_schemas")).count() == report.accepted
    # Again: the same files are counted again, and quarantined once.
    again = ingest_registry(spark, settings, root)
    assert (again.files, again.accepted, again.already_present, again.rejected) == (4, 0, 1, 3)
    assert spark.table(settings.table("audit", "registry_rejected")).count() == 3


def test_schema_gaps_are_registered_with_a_warning(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    report = ingest_registry(spark, settings, registry_with(tmp_path, ["1-0-0", "1-0-2"]))
    assert (report.files, report.accepted, report.already_present, report.rejected) == (2, 2, 0, 0)
    gap = "com.example/checkout model 1: 1-0-1 missing (registry has 1-0-0, 1-0-2)"
    assert report.gaps == [gap] and f"warning: version gap: {gap}" in report.lines()
    assert spark.table(settings.table("raw", "registry_schemas")).count() == 2
    assert spark.table(settings.table("audit", "registry_rejected")).count() == 0
    # The missing version published later closes the gap.
    filled = ingest_registry(spark, settings, registry_with(tmp_path, ["1-0-0", "1-0-1", "1-0-2"]))
    assert (filled.files, filled.accepted, filled.already_present, filled.rejected, filled.gaps) == (3, 1, 2, 0, [])


def test_events_that_fail_their_schema_are_quarantined_with_the_reason_and_counted(spark, isolated_settings, tmp_path):
    """Also the self-describing side of timestamps: a date-time without a zone fails its schema; one with
    nanoseconds is valid (kept as sent in data_json)."""
    settings = isolated_settings
    ingest_registry(spark, settings, registry_with(tmp_path, ["1-0-0", "1-0-1"]))
    nanoseconds = {**V101_EXTRA, "placedAt": "2026-03-01T10:00:00.123456789Z"}
    lines = [
        checkout_event("1-0-0", "o1"),
        checkout_event("1-0-0", "o1"),  # the same event twice: accepted, stored once
        checkout_event("1-0-0", "o2", voucher="x"),
        checkout_event("1-0-0", "o3", total="12.34"),
        checkout_event("1-0-1", "o4", **{**V101_EXTRA, "placedAt": "2026-03-01T10:00:00"}),
        checkout_event("1-0-1", "o5", **nanoseconds),
    ]
    path = events_file(tmp_path, "events", lines)
    report = ingest_events(spark, settings, path)
    assert (report.read, report.accepted, report.new, report.rejected) == (6, 3, 2, 3)
    assert report.read == report.accepted + report.rejected
    assert rejected_reasons(spark, settings, "sd_events_rejected", "source_line") == {
        3: "unknown property 'voucher' at /",
        4: "wrong type at /total: expected number, got string",
        5: 'wrong format at /placedAt: expected date-time, got "2026-03-01T10:00:00"',
    }
    stored = spark.table(settings.table("raw", "sd_events")).collect()
    assert sorted(r.source_line for r in stored) == [1, 6] and len(stored) == report.new
    assert json.loads(next(r.data_json for r in stored if r.source_line == 6))["placedAt"] == nanoseconds["placedAt"]
    again = ingest_events(spark, settings, path)  # nothing new anywhere
    assert (again.read, again.accepted, again.new, again.rejected) == (6, 3, 0, 3)
    assert spark.table(settings.table("audit", "sd_events_rejected")).count() == 3


def test_events_of_unknown_schemas_are_quarantined_not_dropped(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    ingest_registry(spark, settings, registry_with(tmp_path, ["1-0-0"]))
    refund = json.dumps({"schema": "iglu:com.example/refund/jsonschema/1-0-0", "data": {"orderId": "o1"}})
    path = events_file(tmp_path, "events", [checkout_event("1-0-0", "o1"), checkout_event("1-0-1", "o2"), refund])
    report = ingest_events(spark, settings, path)
    assert (report.read, report.accepted, report.new, report.rejected) == (3, 1, 1, 2)
    rejected = spark.table(settings.table("audit", "sd_events_rejected")).collect()
    assert sorted((r.source_line, r.schema_uri, r.reason) for r in rejected) == [
        (2, "iglu:com.example/checkout/jsonschema/1-0-1",
         "unknown schema: iglu:com.example/checkout/jsonschema/1-0-1 is not in the registry (registry has 1-0-0)"),
        (3, "iglu:com.example/refund/jsonschema/1-0-0",
         "unknown schema: iglu:com.example/refund/jsonschema/1-0-0 is not in the registry "
         "(registry has no com.example/refund)"),
    ]
    assert all(r.raw_text for r in rejected)
    assert spark.table(settings.table("raw", "sd_events")).count() == report.new


def write_schema(root: Path, vendor: str, name: str, version: str, properties: dict, required=(), **extra) -> Path:
    """A self-describing schema file of a registry rooted at ``root``."""
    folder = root / "schemas" / vendor / name / "jsonschema"
    folder.mkdir(parents=True, exist_ok=True)
    schema = {"self": {"vendor": vendor, "name": name, "format": "jsonschema", "version": version},
              "type": "object", "properties": properties, "additionalProperties": False, **extra}
    if required:
        schema["required"] = list(required)
    (folder / version).write_text(json.dumps(schema))
    return folder / version


OUTSIDE_REF = "http://127.0.0.1:9/nothing.json"  # loopback port 9 (discard): nothing answers, nothing is fetched
RESOLVABLE = "only iglu: URIs of registered schemas and local #/ pointers resolve"


def test_refs_outside_the_registry_are_refused_and_iglu_refs_validate_against_the_registry(
    spark, isolated_settings, tmp_path
):
    settings = isolated_settings
    root = tmp_path / "refs"
    write_schema(root, "com.acme", "address", "1-0-0", {"city": {"type": "string"}}, ["city"])
    write_schema(root, "com.acme", "order", "1-0-0",
                 {"id": {"type": "string"}, "shipTo": {"$ref": "iglu:com.acme/address/jsonschema/1-0-0"},
                  "qty": {"$ref": "#/definitions/qty"}},
                 ["id", "shipTo"], definitions={"qty": {"type": "integer", "minimum": 1}})
    write_schema(root, "com.acme", "remote", "1-0-0", {"a": {"$ref": OUTSIDE_REF}})
    # Refers to a schema that is refused in the same batch: refused too, naming the ref it reaches.
    write_schema(root, "com.acme", "wrapper", "1-0-0", {"r": {"$ref": "iglu:com.acme/remote/jsonschema/1-0-0"}})
    write_schema(root, "com.acme", "nowhere", "1-0-0", {"a": {"$ref": "#/definitions/missing"}})
    report = ingest_registry(spark, settings, root)
    assert (report.files, report.accepted, report.already_present, report.rejected) == (5, 2, 0, 3)
    assert rejected_reasons(spark, settings, "registry_rejected", "source_file") == {
        "schemas/com.acme/remote/jsonschema/1-0-0":
            f"$ref '{OUTSIDE_REF}' at /properties/a is outside the registry: {RESOLVABLE}",
        "schemas/com.acme/wrapper/jsonschema/1-0-0":
            f"$ref '{OUTSIDE_REF}' at iglu:com.acme/remote/jsonschema/1-0-0#/properties/a (reached through $ref at "
            f"/properties/r) is outside the registry: {RESOLVABLE}",
        "schemas/com.acme/nowhere/jsonschema/1-0-0":
            "$ref '#/definitions/missing' at /properties/a points at nothing: no such location in the schema",
    }
    assert sorted(r.schema_uri for r in spark.table(settings.table("raw", "registry_schemas")).collect()) == [
        "iglu:com.acme/address/jsonschema/1-0-0", "iglu:com.acme/order/jsonschema/1-0-0"]

    def order(**data) -> str:
        return json.dumps({"schema": "iglu:com.acme/order/jsonschema/1-0-0", "data": data})

    path = events_file(tmp_path, "orders", [
        order(id="o1", shipTo={"city": "Oslo"}, qty=2),
        order(id="o2", shipTo={}),
        order(id="o3", shipTo={"city": 7}),
        order(id="o4", shipTo={"city": "Rome"}, qty=0),
    ])
    events = ingest_events(spark, settings, path)
    assert (events.read, events.accepted, events.new, events.rejected) == (4, 1, 1, 3)
    assert rejected_reasons(spark, settings, "sd_events_rejected", "source_line") == {
        2: "missing required property 'city' at /shipTo",
        3: "wrong type at /shipTo/city: expected string, got integer",
        4: "minimum violated at /qty: 0 is less than the minimum of 1",
    }
    assert [r.source_line for r in spark.table(settings.table("raw", "sd_events")).collect()] == [1]


def test_an_event_whose_schema_ref_does_not_resolve_is_quarantined_and_the_batch_loads(
    spark, isolated_settings, tmp_path
):
    """A schema registered before `ingest registry` checked `$ref`s: its events are quarantined with the
    reason, nothing is fetched, and the valid events of the batch load."""
    from python_jobs.ingest.registry import REGISTRY_SCHEMAS, _append, _schema_row, check_schema_file

    settings = isolated_settings
    ingest_registry(spark, settings, registry_with(tmp_path, ["1-0-0"]))
    legacy = tmp_path / "legacy"
    remote_file = write_schema(legacy, "com.acme", "remote", "1-0-0", {"a": {"$ref": OUTSIDE_REF}})
    remote = check_schema_file(remote_file.relative_to(legacy / "schemas").parts, remote_file.read_text())
    assert remote.key.uri == "iglu:com.acme/remote/jsonschema/1-0-0"  # the per-file checks pass
    _append(spark, settings.table("raw", "registry_schemas"), REGISTRY_SCHEMAS,
            [_schema_row(remote, "legacy", datetime(2026, 1, 1))])
    remote_event = json.dumps({"schema": remote.key.uri, "data": {"a": 1}})
    path = events_file(tmp_path, "mixed", [checkout_event("1-0-0", "o1"), remote_event, checkout_event("1-0-0", "o2")])
    report = ingest_events(spark, settings, path)
    assert (report.read, report.accepted, report.new, report.rejected) == (3, 2, 2, 1)
    assert rejected_reasons(spark, settings, "sd_events_rejected", "source_line") == {
        2: f"could not validate against {remote.key.uri}: $ref '{OUTSIDE_REF}' does not resolve within the "
           f"registry ({RESOLVABLE})",
    }
    assert sorted(r.source_line for r in spark.table(settings.table("raw", "sd_events")).collect()) == [1, 3]


def test_properties_that_become_system_columns_are_refused(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    root = tmp_path / "system"
    write_schema(root, "com.acme", "clash", "1-0-0",
                 {"loaded_at": {"type": "string"}, "eventId": {"type": "string"}, "fine": {"type": "string"}})
    write_schema(root, "com.acme", "clash_later", "1-0-0", {"fine": {"type": "string"}})
    write_schema(root, "com.acme", "clash_later", "1-0-1",
                 {"fine": {"type": "string"}, "Source-File": {"type": "string"}})
    # Two properties that normalise to one column name: the later one in (required, name, path) order
    # gets a suffix, and the table can be created.
    write_schema(root, "com.acme", "twins", "1-0-0", {"aB": {"type": "string"}, "a_b": {"type": "integer"}})
    report = ingest_registry(spark, settings, root)
    assert (report.files, report.accepted, report.already_present, report.rejected) == (4, 2, 0, 2)
    system = "system column of the typed table (event_id, schema_version, source_file, source_line, loaded_at)"
    assert rejected_reasons(spark, settings, "registry_rejected", "source_file") == {
        "schemas/com.acme/clash/jsonschema/1-0-0":
            f"property 'eventId' at /properties/eventId becomes column event_id, which is a {system}: "
            "rename the property; "
            f"property 'loaded_at' at /properties/loaded_at becomes column loaded_at, which is a {system}: "
            "rename the property",
        "schemas/com.acme/clash_later/jsonschema/1-0-1":
            f"property 'Source-File' at /properties/Source-File becomes column source_file, which is a {system}: "
            "rename the property",
    }
    # Everything that was registered can have its typed table: the DDL runs on Spark.
    rows = spark.table(settings.table("raw", "registry_schemas")).select(
        "vendor", "name", "format", "version", "schema_json").collect()
    plans = model_plans([RegisteredSchema(*row) for row in rows])
    assert sorted(plans) == [("com.acme", "clash_later", 1), ("com.acme", "twins", 1)]
    for (vendor, name, model), plan in plans.items():
        table = settings.table("registry", table_name(vendor, name, model))
        spark.sql(f"create table {table} ({', '.join(column_definitions(plan.columns))}) using parquet")
        names = [n for n, _ in table_columns(spark, table)]
        assert names[: len(EVENT_NAMES)] == EVENT_NAMES and len(set(names)) == len(names)
    twins = settings.table("registry", "com_acme_twins_1")
    assert table_columns(spark, twins)[len(EVENT_NAMES):] == [("a_b", "string"), ("a_b_2", "bigint")]


def test_a_schema_file_that_is_not_utf8_is_refused_with_the_byte(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    root = registry_with(tmp_path, ["1-0-0"])
    latin1 = root / "schemas" / "com.acme" / "latin" / "jsonschema" / "1-0-0"
    latin1.parent.mkdir(parents=True)
    latin1.write_bytes(b'{"description": "caf\xe9"}')
    report = ingest_registry(spark, settings, root)
    assert (report.files, report.accepted, report.rejected) == (2, 1, 1)
    assert rejected_reasons(spark, settings, "registry_rejected", "source_file") == {
        "schemas/com.acme/latin/jsonschema/1-0-0":
            "not UTF-8 text: byte 0xe9 at offset 20 cannot be decoded (JSON schemas are UTF-8; re-save the file "
            "as UTF-8)",
    }
