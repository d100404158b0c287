"""Pure rules of the registry: SchemaVer, naming, flattening, order, types, recovery, validation, DDL."""

from __future__ import annotations

import json
import random

import pytest

from python_jobs.ingest.registry import RegistryRejection, RegistrySchema, check_schema_file, classify
from python_jobs.registry.columns import flatten, plan_model, schema_hash
from python_jobs.registry.ddl import migration_script
from python_jobs.registry.naming import column_name, json_path, snake_case, table_name
from python_jobs.registry.schemaver import (
    SchemaVer,
    SchemaVerError,
    gap_report,
    missing_versions,
    parse_iglu_uri,
    parse_schemaver,
)
from python_jobs.registry.types import fits, leaf_type
from python_jobs.registry.validation import Accepted, EventValidator, Rejected, event_id


def obj(properties: dict, required: list[str] | None = None, **extra) -> dict:
    schema = {"type": "object", "properties": properties, **extra}
    if required:
        schema["required"] = required  # draft-04 wants at least one entry when present
    return schema


def v(text: str) -> SchemaVer:
    return parse_schemaver(text)


# --- SchemaVer ---------------------------------------------------------------------------------


def test_versions_order_numerically_not_as_text():
    texts = ["1-0-10", "1-0-2", "1-1-0", "1-0-0", "1-0-1"]
    assert [str(x) for x in sorted(map(parse_schemaver, texts))] == ["1-0-0", "1-0-1", "1-0-2", "1-0-10", "1-1-0"]


@pytest.mark.parametrize("text", ["1-0", "1-0-0-0", "01-0-0", "1-00-1", "0-1-0", "a-b-c", "1.0.0", ""])
def test_invalid_schemaver_is_rejected_with_the_rule(text):
    with pytest.raises(SchemaVerError, match="SchemaVer"):
        parse_schemaver(text)


def test_iglu_uri_parses_into_key():
    key = parse_iglu_uri("iglu:com.acme/click_event/jsonschema/1-0-10")
    assert (key.vendor, key.name, key.format, key.version) == ("com.acme", "click_event", "jsonschema", v("1-0-10"))
    assert key.uri == "iglu:com.acme/click_event/jsonschema/1-0-10"
    with pytest.raises(SchemaVerError, match="Iglu URI"):
        parse_iglu_uri("com.acme/click/jsonschema/1-0-0")


def test_gaps_are_reported_per_model():
    assert missing_versions([v("1-0-0"), v("1-0-2")]) == [v("1-0-1")]
    assert missing_versions([v("1-0-0"), v("1-0-1"), v("1-1-0")]) == []
    assert missing_versions([v("1-1-0")]) == [v("1-0-0")]
    assert missing_versions([v("2-0-1")]) == [v("2-0-0")]
    report = gap_report("com.acme/click", [v("1-0-0"), v("1-0-2"), v("2-0-0")])
    assert report == ["com.acme/click model 1: 1-0-1 missing (registry has 1-0-0, 1-0-2)"]


# --- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("camelCase", "camel_case"),
        ("HTTPRequest", "http_request"),
        ("a-b", "a_b"),
        ("deviceID", "device_id"),
        ("already_snake", "already_snake"),
        ("URL", "url"),
        ("storeHTTPReferrer", "store_http_referrer"),
        ("with space", "with_space"),
        ("2fa", "_2fa"),
    ],
)
def test_snake_case(name, expected):
    assert snake_case(name) == expected


def test_nested_names_join_with_double_underscore_and_paths_quote_odd_keys():
    assert column_name(("customerInfo", "eMail")) == "customer_info__e_mail"
    assert json_path(("customerInfo", "eMail")) == "$.customerInfo.eMail"
    assert json_path(("a-b", "c")) == "$['a-b'].c"
    assert table_name("com.example", "pageView", 1) == "com_example_page_view_1"


# --- flattening and required-ness -------------------------------------------------------------


def test_nested_objects_flatten_and_arrays_or_free_objects_stay_json():
    schema = obj(
        {
            "user": obj({"id": {"type": "string"}, "geo": obj({"lat": {"type": "number"}}, ["lat"])}, ["id", "geo"]),
            "tags": {"type": "array", "items": {"type": "string"}},
            "payload": {"type": "object"},
            "extra": {"type": "object", "properties": {}},
        },
        ["user"],
    )
    leaves = {leaf.name: leaf for leaf in flatten(schema)}
    assert sorted(leaves) == ["extra", "payload", "tags", "user__geo__lat", "user__id"]
    assert (leaves["tags"].spark_type, leaves["tags"].kind) == ("STRING", "json")
    assert (leaves["payload"].spark_type, leaves["payload"].kind) == ("STRING", "json")
    assert leaves["user__geo__lat"].spark_type == "DOUBLE"


def test_required_only_when_every_ancestor_is_required_and_type_excludes_null():
    schema = obj(
        {
            "a": obj({"x": {"type": "string"}}, ["x"]),  # a optional -> a__x nullable
            "b": obj({"x": {"type": "string"}, "y": {"type": ["string", "null"]}}, ["x", "y"]),
            "c": {"type": ["object", "null"], "properties": {"x": {"type": "string"}}, "required": ["x"]},
            "d": {"type": "integer"},
            "e": {"enum": ["on", "off", None]},
        },
        ["b", "c", "d", "e"],
    )
    required = {leaf.name: leaf.required for leaf in flatten(schema)}
    assert required == {"a__x": False, "b__x": True, "b__y": False, "c__x": False, "d": True, "e": False}


# --- type mapping ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "spark_type", "kind", "nullable"),
    [
        ({"type": "string"}, "STRING", "typed", False),
        ({"type": "string", "format": "date"}, "DATE", "typed", False),
        ({"type": ["string", "null"], "format": "date-time"}, "TIMESTAMP", "typed", True),
        ({"type": "boolean"}, "BOOLEAN", "typed", False),
        ({"type": "integer", "minimum": 0, "maximum": 2147483647}, "INT", "typed", False),
        ({"type": "integer", "minimum": -2147483648, "maximum": 0}, "INT", "typed", False),
        ({"type": "integer", "minimum": 0, "maximum": 2147483648}, "BIGINT", "typed", False),
        ({"type": "integer", "minimum": 0}, "BIGINT", "typed", False),
        ({"type": "integer"}, "BIGINT", "typed", False),
        ({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1000000}, "DECIMAL(9,2)", "typed", False),
        ({"type": "number", "multipleOf": 0.25, "minimum": -10, "maximum": 10}, "DECIMAL(4,2)", "typed", False),
        ({"type": "number", "multipleOf": 5, "minimum": 0, "maximum": 100}, "DECIMAL(3,0)", "typed", False),
        ({"type": "number", "multipleOf": 0.01}, "DOUBLE", "typed", False),
        ({"type": "number", "minimum": 0, "maximum": 1}, "DOUBLE", "typed", False),
        ({"type": ["integer", "number"]}, "DOUBLE", "typed", False),
        ({"enum": ["a", "b"]}, "STRING", "typed", False),
        ({"enum": [1, 2, 3]}, "INT", "typed", False),
        ({"enum": [1, 3000000000]}, "BIGINT", "typed", False),
        ({"enum": [1.5, 10.25]}, "DECIMAL(4,2)", "typed", False),
        ({"enum": [True, False]}, "BOOLEAN", "typed", False),
        ({"enum": ["a", 1]}, "STRING", "json", False),
        ({"enum": ["a", None]}, "STRING", "typed", True),
        ({"type": ["string", "integer"]}, "STRING", "json", False),
        ({"type": ["string", "integer", "null"]}, "STRING", "json", True),
        ({"type": ["boolean", "null"]}, "BOOLEAN", "typed", True),
        ({"type": "array"}, "STRING", "json", False),
        ({}, "STRING", "json", True),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "STRING", "json", True),
    ],
)
def test_type_table(schema, spark_type, kind, nullable):
    typed = leaf_type(schema)
    assert (typed.spark_type, typed.kind, typed.allows_null) == (spark_type, kind, nullable)


def test_fits_only_where_no_value_changes():
    assert fits(("INT", "typed"), ("BIGINT", "typed"))
    assert fits(("INT", "typed"), ("DECIMAL(12,2)", "typed"))
    assert fits(("DECIMAL(5,2)", "typed"), ("DECIMAL(9,3)", "typed"))
    assert fits(("DATE", "typed"), ("TIMESTAMP", "typed"))
    assert fits(("BIGINT", "typed"), ("STRING", "json"))
    assert not fits(("BIGINT", "typed"), ("INT", "typed"))
    assert not fits(("STRING", "typed"), ("BIGINT", "typed"))
    assert not fits(("BIGINT", "typed"), ("STRING", "typed"))
    assert not fits(("DECIMAL(9,3)", "typed"), ("DECIMAL(9,2)", "typed"))
    assert not fits(("STRING", "json"), ("STRING", "typed"))


# --- order -------------------------------------------------------------------------------------


CHECKOUT_100 = obj(
    {
        "orderId": {"type": "string"},
        "total": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1000},
        "coupon": {"type": ["string", "null"]},
        "customer": obj({"id": {"type": "string"}, "email": {"type": "string"}}, ["id"]),
        "Zeta": {"type": "boolean"},
    },
    ["orderId", "total", "customer", "Zeta"],
)


def with_properties(base: dict, extra: dict, extra_required: tuple[str, ...] = ()) -> dict:
    return obj({**base["properties"], **extra}, [*base.get("required", []), *extra_required])


def names(columns) -> list[str]:
    return [c.name for c in columns]


def test_first_version_orders_required_then_nullable_each_by_name():
    plan = plan_model([(v("1-0-0"), CHECKOUT_100)])
    assert names(plan.columns) == ["customer__id", "order_id", "total", "zeta", "coupon", "customer__email"]
    assert [c.nullable for c in plan.columns] == [False, False, False, False, True, True]
    assert [c.position for c in plan.columns] == [1, 2, 3, 4, 5, 6]
    assert {c.introduced_in for c in plan.columns} == {"1-0-0"}
    assert plan.columns[0].json_path == "$.customer.id"


SIX_ADDITIONS = {
    "shippingMethod": {"type": "string"},
    "placedAt": {"type": "string", "format": "date-time"},
    "giftWrap": {"type": "boolean"},
    "channel": {"type": "string"},
    "deliveryDate": {"type": "string", "format": "date"},
    "aNote": {"type": ["string", "null"]},
}


def test_later_versions_append_in_version_order_required_first_then_by_name():
    v101 = with_properties(CHECKOUT_100, SIX_ADDITIONS, ("channel", "placedAt"))
    v102 = with_properties(v101, {"loyaltyPoints": {"type": "integer"}})
    # Versions arrive shuffled and 1-0-10 sorts after 1-0-2.
    v1010 = with_properties(v102, {"aardvark": {"type": "string"}})
    plan = plan_model([(v("1-0-10"), v1010), (v("1-0-2"), v102), (v("1-0-0"), CHECKOUT_100), (v("1-0-1"), v101)])
    assert names(plan.columns) == [
        "customer__id", "order_id", "total", "zeta", "coupon", "customer__email",
        "channel", "placed_at", "a_note", "delivery_date", "gift_wrap", "shipping_method",  # 1-0-1
        "loyalty_points",  # 1-0-2
        "aardvark",  # 1-0-10
    ]  # fmt: skip
    appended = plan.columns[6:]
    assert all(c.nullable for c in appended)
    assert [c.introduced_in for c in appended] == ["1-0-1"] * 6 + ["1-0-2", "1-0-10"]
    assert [p.added for p in plan.versions][1] == tuple(names(appended[:6]))


def test_order_does_not_depend_on_property_order_in_the_file():
    v101 = with_properties(CHECKOUT_100, SIX_ADDITIONS, ("channel",))
    expected = names(plan_model([(v("1-0-0"), CHECKOUT_100), (v("1-0-1"), v101)]).columns)
    rng = random.Random(7)
    for _ in range(20):
        keys = list(v101["properties"])
        rng.shuffle(keys)
        shuffled = obj({k: v101["properties"][k] for k in keys}, list(reversed(v101["required"])))
        reparsed = json.loads(json.dumps(shuffled))
        assert names(plan_model([(v("1-0-1"), reparsed), (v("1-0-0"), CHECKOUT_100)]).columns) == expected


def test_removed_optional_property_keeps_its_column_and_relaxed_required_becomes_nullable():
    v101 = obj({k: p for k, p in CHECKOUT_100["properties"].items() if k != "coupon"}, ["orderId", "total", "customer"])
    plan = plan_model([(v("1-0-0"), CHECKOUT_100), (v("1-0-1"), v101)])
    assert names(plan.columns) == names(plan_model([(v("1-0-0"), CHECKOUT_100)]).columns)
    assert not plan.versions[1].is_recovery
    assert {c.name: c.nullable for c in plan.columns}["zeta"] is True


# --- breaking changes --------------------------------------------------------------------------


def test_type_change_that_cannot_widen_goes_to_a_recovery_table_named_by_schema_hash():
    changed = json.loads(json.dumps(CHECKOUT_100))
    changed["properties"]["orderId"] = {"type": "integer"}
    later = with_properties(CHECKOUT_100, {"note": {"type": "string"}})
    plan = plan_model([(v("1-0-0"), CHECKOUT_100), (v("1-0-1"), changed), (v("1-0-2"), later)])
    broken = plan.versions[1]
    assert broken.is_recovery
    assert broken.table_suffix == "_recovered_" + schema_hash(changed)[:8]
    assert broken.conflicts == ("`order_id`: STRING since 1-0-0, BIGINT in 1-0-1",)
    assert names(plan.recovery_columns[broken.table_suffix])[:4] == ["customer__id", "order_id", "total", "zeta"]
    assert plan.recovery_columns[broken.table_suffix][1].spark_type == "BIGINT"
    # The main table is untouched by the broken version and still evolves with the next one.
    assert plan.columns[1].spark_type == "STRING"
    assert names(plan.columns)[-1] == "note" and plan.columns[-1].introduced_in == "1-0-2"


def test_removing_a_required_property_is_breaking_and_widening_in_place_is_refused():
    dropped = obj({k: p for k, p in CHECKOUT_100["properties"].items() if k != "total"}, ["orderId", "customer"])
    wider = json.loads(json.dumps(CHECKOUT_100))
    wider["properties"]["total"] = {"type": "number"}
    plan = plan_model([(v("1-0-0"), CHECKOUT_100), (v("1-0-1"), dropped), (v("1-0-2"), wider)])
    assert plan.versions[1].conflicts == ("`total`: required since 1-0-0, removed in 1-0-1",)
    assert plan.versions[2].conflicts == ("`total`: DECIMAL(6,2) since 1-0-0, DOUBLE in 1-0-2",)
    assert len(plan.recovery_columns) == 2


def test_narrower_type_in_a_later_version_loads_into_the_existing_column():
    first = obj({"n": {"type": "integer"}}, ["n"])
    narrower = obj({"n": {"type": "integer", "minimum": 0, "maximum": 10}}, ["n"])
    plan = plan_model([(v("1-0-0"), first), (v("1-0-1"), narrower)])
    assert not plan.versions[1].is_recovery and plan.columns[0].spark_type == "BIGINT"


# --- DDL ---------------------------------------------------------------------------------------


def test_migration_script_creates_then_adds_columns_per_version():
    v101 = with_properties(CHECKOUT_100, SIX_ADDITIONS)
    changed = json.loads(json.dumps(v101))
    changed["properties"]["giftWrap"] = {"type": "string"}
    plan = plan_model([(v("1-0-0"), CHECKOUT_100), (v("1-0-1"), v101), (v("1-0-2"), v101), (v("1-1-0"), changed)])
    script = migration_script("registry.t_1", plan)
    assert script.index("-- 1-0-0: create") < script.index("-- 1-0-1: add 6 column(s)")
    assert "create table if not exists registry.t_1 (\n    event_id STRING," in script
    assert "alter table registry.t_1 add columns (\n    a_note STRING,\n    channel STRING," in script
    assert "-- 1-0-2: no new columns" in script
    suffix = plan.versions[3].table_suffix
    assert f"-- 1-1-0: BREAKING, rows go to registry.t_1{suffix}" in script
    assert "`gift_wrap`: BOOLEAN since 1-0-1, STRING in 1-1-0" in script


# --- registry files ----------------------------------------------------------------------------


def self_describing(vendor="com.acme", name="click", version="1-0-0", **extra) -> str:
    return json.dumps(
        {"self": {"vendor": vendor, "name": name, "format": "jsonschema", "version": version}, **obj({}), **extra}
    )


def test_registry_file_checks():
    good = check_schema_file(("com.acme", "click", "jsonschema", "1-0-0"), self_describing())
    assert isinstance(good, RegistrySchema) and good.key.uri == "iglu:com.acme/click/jsonschema/1-0-0"
    cases = {
        ("com.acme", "click", "jsonschema", "1-0-1"): (self_describing(), "self.version is '1-0-0' but the path"),
        ("com.acme", "clack", "jsonschema", "1-0-0"): (self_describing(), "self.name is 'click' but the path"),
        ("com.acme", "click", "jsonschema", "1-0-x"): (self_describing(version="1-0-x"), "not a SchemaVer"),
        ("com.acme", "click", "jsonschema", "1-0-0"): ("{nope", "invalid JSON"),
        ("com.acme", "click", "jsonschema"): (self_describing(), "not at schemas/<vendor>"),
        ("com.acme", "click", "avro", "1-0-0"): (json.dumps({"self": {}}), "`self` block lacks"),
    }
    for parts, (text, reason) in cases.items():
        rejected = check_schema_file(parts, text)
        assert isinstance(rejected, RegistryRejection) and reason in rejected.reason, (parts, rejected)
    no_self = check_schema_file(("com.acme", "click", "jsonschema", "1-0-0"), json.dumps(obj({})))
    assert isinstance(no_self, RegistryRejection) and "no `self` block" in no_self.reason
    bad_schema = check_schema_file(("com.acme", "click", "jsonschema", "1-0-0"), self_describing(minimum="x"))
    assert isinstance(bad_schema, RegistryRejection) and "draft-04" in bad_schema.reason


def test_a_published_version_is_immutable():
    first = check_schema_file(("com.acme", "click", "jsonschema", "1-0-0"), self_describing())
    edited = check_schema_file(("com.acme", "click", "jsonschema", "1-0-0"), self_describing(description="x"))
    assert isinstance(first, RegistrySchema) and isinstance(edited, RegistrySchema)
    new, already, rejected = classify([first], {first.key.uri: first.digest})
    assert (new, already, rejected) == ([], 1, [])
    new, already, rejected = classify([edited], {first.key.uri: first.digest})
    assert new == [] and already == 0 and "already registered with different content" in rejected[0].reason


def test_vendor_and_name_that_cannot_name_a_table_are_refused():
    hostile = ("com.acme; drop table", "x", "jsonschema", "1-0-0")
    rejected = check_schema_file(hostile, self_describing(vendor="com.acme; drop table", name="x"))
    assert isinstance(rejected, RegistryRejection)
    assert rejected.source_file == "schemas/com.acme; drop table/x/jsonschema/1-0-0"
    assert rejected.reason == (
        "vendor 'com.acme; drop table' is not a valid Iglu vendor: use only letters, digits, '.', '-' and '_' "
        "(the folder names the schema)")
    quoted = check_schema_file(("com.acme", "it's", "jsonschema", "1-0-0"), self_describing(name="it's"))
    assert isinstance(quoted, RegistryRejection) and quoted.reason.startswith('name "it\'s" is not a valid Iglu name')


def test_families_that_share_a_table_name_are_refused():
    first = check_schema_file(("com.acme", "click", "jsonschema", "1-0-0"), self_describing())
    twin = check_schema_file(("com.Acme", "click", "jsonschema", "1-0-0"), self_describing(vendor="com.Acme"))
    dashed = check_schema_file(("com-acme", "click", "jsonschema", "1-0-0"), self_describing(vendor="com-acme"))
    assert isinstance(first, RegistrySchema) and isinstance(twin, RegistrySchema) and isinstance(dashed, RegistrySchema)
    new, already, rejected = classify([first, twin], {})
    assert new == [first] and already == 0
    assert [r.reason for r in rejected] == [
        "com.Acme/click model 1 would load into the typed table com_acme_click_1, which belongs to com.acme/click; "
        "rename the vendor or the name"]
    # Against what the warehouse already holds, too.
    new, _, rejected = classify([dashed], {first.key.uri: first.digest})
    assert new == [] and "belongs to com.acme/click" in rejected[0].reason


# --- event validation --------------------------------------------------------------------------

EVENT_SCHEMA = obj(
    {
        "orderId": {"type": "string"},
        "total": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1000},
        "placedAt": {"type": "string", "format": "date-time"},
        "day": {"type": ["string", "null"], "format": "date"},
        "customer": obj({"id": {"type": "string"}}, ["id"], additionalProperties=False),
    },
    ["orderId", "total", "customer"],
    additionalProperties=False,
)
URI = "iglu:com.acme/checkout/jsonschema/1-0-0"


def check(data, uri=URI):
    return EventValidator({URI: EVENT_SCHEMA}).check(json.dumps({"schema": uri, "data": data}))


def test_valid_event_is_accepted_with_a_content_id():
    data = {"orderId": "o1", "total": 19.99, "placedAt": "2026-01-02T03:04:05+01:00", "day": None,
            "customer": {"id": "c"}}
    outcome = check(data)
    assert isinstance(outcome, Accepted)
    assert outcome.event_id == event_id(URI, dict(reversed(list(data.items()))))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"orderId": "o", "total": 1, "customer": {"id": "c"}, "coupon": "x"}, "unknown property 'coupon' at /"),
        ({"orderId": "o", "total": 1, "customer": {"id": "c", "vip": True}}, "unknown property 'vip' at /customer"),
        ({"orderId": 7, "total": 1, "customer": {"id": "c"}}, "wrong type at /orderId: expected string, got integer"),
        ({"orderId": "o", "total": "1", "customer": {"id": "c"}}, "wrong type at /total: expected number, got string"),
        ({"total": 1, "customer": {"id": "c"}}, "missing required property 'orderId' at /"),
        ({"orderId": "o", "total": 1, "customer": {}}, "missing required property 'id' at /customer"),
        ({"orderId": "o", "total": 1, "customer": {"id": "c"}, "placedAt": "noon"}, "wrong format at /placedAt"),
        ({"orderId": "o", "total": 1, "customer": {"id": "c"}, "day": "2026-02-30"}, "wrong format at /day"),
        ({"orderId": "o", "total": 1.001, "customer": {"id": "c"}}, "multipleOf violated at /total"),
    ],
)
def test_invalid_events_name_what_is_wrong(data, reason):
    outcome = check(data)
    assert isinstance(outcome, Rejected) and reason in outcome.reason and outcome.schema_uri == URI


def test_several_problems_are_reported_together_in_a_stable_order():
    outcome = check({"orderId": 1, "extra": 1, "customer": {}})
    assert isinstance(outcome, Rejected)
    assert outcome.reason == (
        "missing required property 'id' at /customer; missing required property 'total' at /; "
        "unknown property 'extra' at /; wrong type at /orderId: expected string, got integer"
    )


def test_unknown_schema_and_malformed_envelopes_are_rejected_not_dropped():
    unknown = check({}, uri="iglu:com.acme/checkout/jsonschema/1-0-1")
    assert isinstance(unknown, Rejected)
    assert "unknown schema" in unknown.reason and "registry has 1-0-0" in unknown.reason
    validator = EventValidator({URI: EVENT_SCHEMA})
    assert "invalid JSON" in validator.check("{").reason
    envelope = '{"schema": "' + URI + '", "data": '
    assert "NaN is not JSON" in validator.check(envelope + '{"total": NaN}}').reason
    assert "duplicate key(s) 'a'" in validator.check(envelope + '{"a": 1, "a": 2}}').reason
    assert "not a self-describing event" in validator.check('{"data": {}}').reason
    assert "invalid schema URI" in validator.check('{"schema": "com.acme/x", "data": {}}').reason


# --- CLI ---------------------------------------------------------------------------------------


def test_registry_ddl_command_prints_every_version(capsys):
    from python_jobs.cli import main
    from python_jobs.commands.registry import SAMPLE_REGISTRY

    assert main(["registry", "ddl", "com.example/checkout", "--registry", str(SAMPLE_REGISTRY)]) == 0
    out = capsys.readouterr().out
    assert "-- 1-0-0: create\ncreate table if not exists registry.com_example_checkout_1 (" in out
    add_101 = "-- 1-0-1: add 8 column(s)\nalter table registry.com_example_checkout_1 add columns (\n    channel STRING"
    assert add_101 in out
    assert "-- 1-0-2: add 2 column(s)" in out
    assert main(["registry", "ddl", "com.example/signup", "--registry", str(SAMPLE_REGISTRY)]) == 0
    assert "-- warning: version gap: com.example/signup model 1: 1-0-1 missing" in capsys.readouterr().out
    assert main(["registry", "ddl", "com.example/nothing", "--registry", str(SAMPLE_REGISTRY)]) == 2
    assert "no jsonschema versions of com.example/nothing" in capsys.readouterr().err


# --- $ref: resolved within the registry, never fetched ---------------------------------------

OUTSIDE_REF = "http://127.0.0.1:9/nothing.json"  # loopback port 9: never a real address, never fetched
RESOLVABLE = "only iglu: URIs of registered schemas and local #/ pointers resolve"
ADDRESS = "iglu:com.acme/address/jsonschema/1-0-0"


def test_reference_problems_name_each_ref_that_does_not_resolve_within_the_registry():
    from python_jobs.registry.references import reference_problems, schema_registry

    registry = schema_registry({ADDRESS: obj({"city": {"type": "string"}}, ["city"])})
    good = obj({"to": {"$ref": ADDRESS}, "city": {"$ref": ADDRESS + "#/properties/city"},
                "n": {"$ref": "#/definitions/n"}}, definitions={"n": {"type": "integer"}})
    assert reference_problems(good, registry) == []
    cases = {
        OUTSIDE_REF: f"$ref '{OUTSIDE_REF}' at /properties/a is outside the registry: {RESOLVABLE}",
        "file:///etc/hostname": f"$ref 'file:///etc/hostname' at /properties/a is outside the registry: {RESOLVABLE}",
        "other.json": f"$ref 'other.json' at /properties/a is outside the registry: {RESOLVABLE}",
        "iglu:com.acme/address/jsonschema/1-0-1": (
            f"$ref 'iglu:com.acme/address/jsonschema/1-0-1' at /properties/a names a schema that is not in the "
            f"registry: {RESOLVABLE}"),
        "#/definitions/none": "$ref '#/definitions/none' at /properties/a points at nothing: no such location in "
                              "the schema",
        "#/required": "$ref '#/required' at /properties/a points at a JSON list, not a schema",
    }
    for ref, reason in cases.items():
        assert reference_problems(obj({"a": {"$ref": ref}}, ["a"]), registry) == [reason], ref
    # A ref reached only through a local pointer into a non-schema keyword is found too.
    hidden = obj({"a": {"$ref": "#/extra/b"}}, extra={"b": {"$ref": OUTSIDE_REF}})
    assert reference_problems(hidden, registry) == [
        f"$ref '{OUTSIDE_REF}' at /properties/a (through $ref '#/extra/b') is outside the registry: {RESOLVABLE}"]
    assert reference_problems({"$ref": "#"}, registry) == ["$ref '#' at / is a $ref cycle: it never reaches a schema"]


def test_validation_never_fetches_and_a_failing_validation_rejects_the_event():
    remote = "iglu:com.acme/remote/jsonschema/1-0-0"
    loop = "iglu:com.acme/loop/jsonschema/1-0-0"
    validator = EventValidator({
        ADDRESS: obj({"city": {"type": "string"}}, ["city"]),
        URI: obj({"to": {"$ref": ADDRESS}}, ["to"]),
        remote: obj({"a": {"$ref": OUTSIDE_REF}}),
        loop: obj({"a": {"$ref": "#/definitions/x"}}, definitions={"x": {"$ref": "#/definitions/x"}}),
    })

    def run(uri, data):
        return validator.check(json.dumps({"schema": uri, "data": data}))

    assert isinstance(run(URI, {"to": {"city": "Oslo"}}), Accepted)
    assert run(URI, {"to": {}}) == Rejected("missing required property 'city' at /to", URI)
    assert run(remote, {"a": 1}) == Rejected(
        f"could not validate against {remote}: $ref '{OUTSIDE_REF}' does not resolve within the registry "
        f"({RESOLVABLE})", remote)
    assert run(loop, {"a": 1}) == Rejected(
        f"could not validate against {loop}: the schema recurses without end ($ref cycle)", loop)
    assert isinstance(run(remote, {}), Accepted)  # the ref is only followed where the data has a value


# --- registry scaffold ----------------------------------------------------------------------------


def scaffold(tmp_path, monkeypatch, capsys, root) -> tuple[int, str, str]:
    from python_jobs.cli import main
    from python_jobs.commands import registry as registry_command

    models = tmp_path / "models"
    models.mkdir(exist_ok=True)
    monkeypatch.setattr(registry_command, "MODEL_DIR", models)
    code = main(["registry", "scaffold", "--registry", str(root)])
    out, err = capsys.readouterr()
    return code, out, err


def write_registry_file(root, parts: tuple[str, str, str, str], data: bytes) -> None:
    path = root.joinpath("schemas", *parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_scaffold_reports_a_schema_file_that_is_not_utf8_in_one_line(tmp_path, monkeypatch, capsys):
    root = tmp_path / "registry"
    write_registry_file(root, ("com.acme", "click", "jsonschema", "1-0-0"), self_describing().encode())
    write_registry_file(root, ("com.acme", "latin", "jsonschema", "1-0-0"), b'{"description": "caf\xe9"}')
    code, out, err = scaffold(tmp_path, monkeypatch, capsys, root)
    assert code == 0
    assert err.splitlines() == [
        "skipped schemas/com.acme/latin/jsonschema/1-0-0: not UTF-8 text: byte 0xe9 at offset 20 cannot be decoded "
        "(JSON schemas are UTF-8; re-save the file as UTF-8)"]
    assert out.splitlines()[-1] == "1 model file(s) written, 0 already present, 0 name collision(s)"
    click = (tmp_path / "models" / "com_acme_click_1.sql").read_text()
    assert click == "{{ registry_table('com.acme', 'click', 1) }}\n"


def test_scaffold_names_the_owner_of_a_taken_model_name(tmp_path, monkeypatch, capsys):
    root = tmp_path / "registry"
    write_registry_file(root, ("com.acme", "view", "jsonschema", "1-0-0"), self_describing(name="view").encode())
    write_registry_file(root, ("com.acme", "buy", "jsonschema", "1-0-0"), self_describing(name="buy").encode())
    models = tmp_path / "models"
    models.mkdir()
    (models / "com_acme_view_1.sql").write_text("{{ registry_table('com-acme', 'view', 1) }}\n")
    (models / "com_acme_buy_1.sql").write_text("select 1 as hand_written\n")
    buy_taken = (
        f"error: com.acme/buy model 1: not written, {models / 'com_acme_buy_1.sql'} exists and holds no "
        "registry_table(...) call (a hand-written model owns the name); move that model or rename the vendor or "
        "the name")
    view_taken = (
        f"error: com.acme/view model 1: not written, {models / 'com_acme_view_1.sql'} is the model of com-acme/view "
        "model 1, which owns the typed table name com_acme_view_1; rename the vendor or the name")
    code, out, err = scaffold(tmp_path, monkeypatch, capsys, root)
    assert (code, err.splitlines()) == (1, [buy_taken, view_taken])
    assert out.splitlines() == ["0 model file(s) written, 0 already present, 2 name collision(s)"]
    assert (models / "com_acme_view_1.sql").read_text() == "{{ registry_table('com-acme', 'view', 1) }}\n"
    assert (models / "com_acme_buy_1.sql").read_text() == "select 1 as hand_written\n"

    # Two families of one registry that share a table name: the registry's own rule names the owner.
    write_registry_file(root, ("com.acme", "click", "jsonschema", "1-0-0"), self_describing().encode())
    write_registry_file(root, ("com.Acme", "click", "jsonschema", "1-0-0"),
                        self_describing(vendor="com.Acme").encode())
    code, out, err = scaffold(tmp_path, monkeypatch, capsys, root)
    assert (code, err.splitlines()) == (1, [
        "skipped schemas/com.acme/click/jsonschema/1-0-0: com.acme/click model 1 would load into the typed table "
        "com_acme_click_1, which belongs to com.Acme/click; rename the vendor or the name",
        buy_taken, view_taken])
    assert out.splitlines()[-1] == "1 model file(s) written, 0 already present, 2 name collision(s)"
    assert (models / "com_acme_click_1.sql").read_text() == "{{ registry_table('com.Acme', 'click', 1) }}\n"
    # What the scaffold wrote counts as present on the next run, not as a collision.
    _, out, _ = scaffold(tmp_path, monkeypatch, capsys, root)
    assert out.splitlines()[-1] == "0 model file(s) written, 1 already present, 2 name collision(s)"
