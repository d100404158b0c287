"""snapshot_to_changelog on real Spark and dbt: exact changelog rows, incremental runs, state, dbt tests.

The tests build a small dbt project beside the real one: the real dbt_project.yml and macros, plus
test models over datasets of their own. Each test loads snapshots into an isolated schema prefix.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from snapshot_files import write_csv  # tests/python is on sys.path

from python_jobs.contracts import copy_source_contracts
from python_jobs.dbt import run_dbt
from python_jobs.ingest.snapshot import ingest_snapshot
from python_jobs.settings import PROJECT_DIR, Settings

APPEND, RETRACT, CORRECT_FROM, CORRECT_TO = 0, 1, 2, 3
T0 = datetime(2024, 5, 1, 2, 0)
LOAD_DELAY = timedelta(minutes=5)

MODELS = {
    "people": "{{ snapshot_to_changelog(source('snapshots', 'people_snapshots'), 'person_id') }}",
    "orders": (
        "{{ snapshot_to_changelog(source('snapshots', 'orders_snapshots'), ['region', 'order_no'],"
        " compare_columns=['amount'], event_time_column='placed_at') }}"
    ),
    "tags": "{{ snapshot_to_changelog(source('snapshots', 'tags_snapshots'), ['tag']) }}",
    "kinds": "{{ snapshot_to_changelog(source('snapshots', 'kinds_snapshots'), ['id']) }}",
    "late": "{{ snapshot_to_changelog(source('snapshots', 'late_snapshots'), 'late_id') }}",
}
KEYS = {
    "people": ["person_id"], "orders": ["region", "order_no"], "tags": ["tag"], "kinds": ["id"], "late": ["late_id"],
}
COMPARE = {"orders": ["amount"]}


def _model_yaml() -> dict:
    models = []
    for name in MODELS:
        round_trip = {"snapshots": f"{{{{ source('snapshots', '{name}_snapshots') }}}}", "primary_key": KEYS[name]}
        if name in COMPARE:
            round_trip["compare_columns"] = COMPARE[name]
        models.append(
            {
                "name": name,
                "data_tests": [
                    {"changelog_paired_corrections": {"arguments": {"primary_key": KEYS[name]}}},
                    {"changelog_round_trip": {"arguments": round_trip}},
                ],
                "columns": [
                    {"name": "offset", "data_tests": ["changelog_gapless_offsets"]},
                    {"name": "op", "data_tests": ["changelog_valid_op"]},
                ],
            }
        )
    sources = [
        {
            "name": "snapshots",
            "schema": "{{ var('schema_prefix', '') }}raw",
            "tables": [{"name": f"{name}_snapshots"} for name in MODELS],
        }
    ]
    return {"version": 2, "models": models, "sources": sources}


@pytest.fixture(scope="module")
def project_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("changelog_project")
    shutil.copy(PROJECT_DIR / "dbt_project.yml", root / "dbt_project.yml")
    shutil.copytree(PROJECT_DIR / "macros", root / "macros")
    copy_source_contracts(root)  # the on-run-start hooks create the raw tables from them
    models = root / "models" / "changelog"
    models.mkdir(parents=True)
    for name, body in MODELS.items():
        (models / f"{name}.sql").write_text(body + "\n")
    (models / "late_current.sql").write_text(
        "{{ config(materialized='view') }}\n{{ changelog_current_state(ref('late'), 'late_id') }}\n"
    )
    # JSON is YAML; it spares a YAML writer.
    (models / "_models.yml").write_text(json.dumps(_model_yaml(), indent=2))
    return root


@pytest.fixture()
def warehouse(isolated_settings, project_dir, tmp_path) -> Settings:
    return replace(isolated_settings, project_dir=project_dir)


def dbt(settings: Settings, *args: str, check: bool = True):
    target = settings.project_dir / "target"
    return run_dbt(settings, [*args, "--target-path", str(target)], check=check)


def load(spark, settings: Settings, dataset: str, path: Path, day: int, key=None):
    taken = T0 + timedelta(days=day)
    return ingest_snapshot(
        spark, settings, dataset, path, taken, taken + LOAD_DELAY, KEYS[dataset] if key is None else key
    )


def at(day: int) -> datetime:
    return T0 + timedelta(days=day)


def loaded(day: int) -> datetime:
    return at(day) + LOAD_DELAY


def changelog(spark, settings: Settings, name: str) -> list[tuple]:
    frame = spark.table(settings.table("changelog", name))
    return [tuple(row) for row in frame.orderBy("offset").collect()]


# ------------------------------------------------------------------ people: all columns compared

PEOPLE_HEADER = ["person_id", "name", "email", "score"]
PEOPLE_SNAPSHOTS = [
    [
        ("p1", "Ann", "ann@x.org", "10"),
        ("p2", "Bob", None, "20"),
        ("p3", "Cy", "cy@x.org", None),
        ("p5", "Eve", "eve@x.org", "50"),
    ],
    # out of order; p1 deleted, p2 NULL -> value, p3 unchanged with NULL, p4 new, p5 value -> NULL
    [
        ("p5", "Eve", None, "50"),
        ("p4", "Dee", "dee@x.org", "40"),
        ("p3", "Cy", "cy@x.org", None),
        ("p2", "Bob", "bob@x.org", "20"),
    ],
    # p1 reappears with a new score, p4 deleted
    [
        ("p1", "Ann", "ann@x.org", "11"),
        ("p2", "Bob", "bob@x.org", "20"),
        ("p3", "Cy", "cy@x.org", None),
        ("p5", "Eve", None, "50"),
    ],
    # only p2 changes
    [
        ("p1", "Ann", "ann@x.org", "11"),
        ("p2", "Bob", "bob@x.org", "21"),
        ("p3", "Cy", "cy@x.org", None),
        ("p5", "Eve", None, "50"),
    ],
]


def expected_people() -> list[tuple]:
    def row(offset, op, snapshot, event_day, *data):
        return (offset, op, loaded(snapshot), at(event_day), *data)

    return [
        row(0, APPEND, 0, 0, "p1", "Ann", "ann@x.org", "10"),
        row(1, APPEND, 0, 0, "p2", "Bob", None, "20"),
        row(2, APPEND, 0, 0, "p3", "Cy", "cy@x.org", None),
        row(3, APPEND, 0, 0, "p5", "Eve", "eve@x.org", "50"),
        row(4, RETRACT, 1, 0, "p1", "Ann", "ann@x.org", "10"),
        row(5, CORRECT_FROM, 1, 0, "p2", "Bob", None, "20"),
        row(6, CORRECT_TO, 1, 1, "p2", "Bob", "bob@x.org", "20"),
        row(7, APPEND, 1, 1, "p4", "Dee", "dee@x.org", "40"),
        row(8, CORRECT_FROM, 1, 0, "p5", "Eve", "eve@x.org", "50"),
        row(9, CORRECT_TO, 1, 1, "p5", "Eve", None, "50"),
        row(10, APPEND, 2, 2, "p1", "Ann", "ann@x.org", "11"),
        row(11, RETRACT, 2, 1, "p4", "Dee", "dee@x.org", "40"),
        row(12, CORRECT_FROM, 3, 1, "p2", "Bob", "bob@x.org", "20"),
        row(13, CORRECT_TO, 3, 3, "p2", "Bob", "bob@x.org", "21"),
    ]


def people_file(tmp_path: Path, index: int) -> Path:
    return write_csv(tmp_path / f"people_{index}.csv", PEOPLE_HEADER, PEOPLE_SNAPSHOTS[index])


def test_people_run_by_run_equals_one_run_over_pending_snapshots(spark, warehouse, tmp_path):
    """Inserts, deletes, updates, no change, NULLs, out-of-order rows, retract-then-reappear; state and reruns."""
    settings = warehouse
    table = settings.table("changelog", "people")

    load(spark, settings, "people", people_file(tmp_path, 0), 0)
    dbt(settings, "run", "--select", "people")
    assert [tuple(f.name for f in spark.table(table).schema.fields)] == [
        ("offset", "op", "system_time", "event_time", "person_id", "name", "email", "score")
    ]
    assert [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema.fields[:4]] == [
        ("offset", "bigint"),
        ("op", "int"),
        ("system_time", "timestamp"),
        ("event_time", "timestamp"),
    ]
    load(spark, settings, "people", people_file(tmp_path, 1), 1)
    dbt(settings, "run", "--select", "people")
    assert changelog(spark, settings, "people") == expected_people()[:10]

    # No new snapshot: nothing is appended.
    dbt(settings, "run", "--select", "people")
    assert changelog(spark, settings, "people") == expected_people()[:10]

    # Two pending snapshots in one run, then the dbt tests (round trip, pairs, offsets, ops).
    load(spark, settings, "people", people_file(tmp_path, 2), 2)
    load(spark, settings, "people", people_file(tmp_path, 3), 3)
    dbt(settings, "build", "--select", "people")
    assert changelog(spark, settings, "people") == expected_people()

    # The state table follows the changelog: the latest snapshot's rows, with their event times.
    assert_state_is_latest_people(spark, table)
    properties = {r.key: r.value for r in spark.sql(f"show tblproperties {table}__state").collect()}
    assert (properties["changelog.state_seq"], properties["changelog.state_offset"]) == ("3", "13")

    # Without its state table the model falls back to projecting the changelog, and continues correctly.
    spark.sql(f"drop table {table}__state")
    write_csv(tmp_path / "people_4.csv", PEOPLE_HEADER, PEOPLE_SNAPSHOTS[3][:2] + PEOPLE_SNAPSHOTS[3][3:])
    load(spark, settings, "people", tmp_path / "people_4.csv", 4)
    dbt(settings, "run", "--select", "people")
    assert changelog(spark, settings, "people") == [
        *expected_people(),
        (14, RETRACT, loaded(4), at(0), "p3", "Cy", "cy@x.org", None),
    ]

    # The same snapshots loaded at once and built in one run give the same table, offset for offset.
    batch = replace(settings.with_prefix(settings.schema_prefix + "batch_"), project_dir=settings.project_dir)
    from python_jobs.settings import LAYERS
    from python_jobs.spark import ensure_schemas

    ensure_schemas(spark, batch, LAYERS)
    for index in range(4):
        load(spark, batch, "people", people_file(tmp_path, index), index)
    dbt(batch, "run", "--select", "people")
    assert changelog(spark, batch, "people") == expected_people()

    # A full refresh rebuilds the same rows; the round trip test catches a tampered changelog.
    dbt(batch, "run", "--select", "people", "--full-refresh")
    assert changelog(spark, batch, "people") == expected_people()
    spark.sql(
        f"insert into {batch.table('changelog', 'people')} select 14, {APPEND}, system_time, event_time,"
        f" 'p9', 'Ghost', null, '0' from {batch.table('changelog', 'people')} where `offset` = 13"
    )
    outcome = dbt(batch, "test", "--select", "people", check=False)
    failed = {f.split(":")[0] for f in outcome.failures}
    assert not outcome.success
    assert any("changelog_round_trip" in name for name in failed)
    assert not any("gapless" in name or "paired" in name for name in failed)


def run_with(spark, settings: Settings, model: str, **dbt_vars) -> dict:
    """Runs one model with extra vars; returns what the run did, as its materialization records it."""
    run_dbt(settings, ["run", "--select", model], extra_vars=dbt_vars)
    return json.loads(table_properties(spark, settings.table("changelog", model))["changelog.last_run"])


def table_properties(spark, table: str) -> dict:
    return {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}


def state_properties(spark, table: str) -> dict:
    return table_properties(spark, f"{table}__state")


def test_prior_state_from_raw_state_tail_compaction_and_fallback(spark, warehouse, tmp_path):
    """The narrow prior state comes from the processed snapshot in raw; the state table only absorbs the tail
    past changelog_compact_ratio; without the processed snapshot in raw the run reads the state and its tail."""
    settings = warehouse
    table = settings.table("changelog", "people")
    never = {"changelog_compact_ratio": 1000}

    load(spark, settings, "people", people_file(tmp_path, 0), 0)
    assert run_with(spark, settings, "people", **never)["prior_from_raw"] is False
    # The first run has no state to extend: it writes one whatever the ratio.
    properties = state_properties(spark, table)
    assert (properties["changelog.state_seq"], properties["changelog.state_offset"]) == ("0", "3")

    # Three rounds without compaction: the state table keeps snapshot 0; the tail (offsets 4..13) grows.
    for index in (1, 2, 3):
        load(spark, settings, "people", people_file(tmp_path, index), index)
        assert run_with(spark, settings, "people", **never)["prior_from_raw"] is True
    assert changelog(spark, settings, "people") == expected_people()
    properties = state_properties(spark, table)
    assert (properties["changelog.state_seq"], properties["changelog.state_offset"]) == ("0", "3")
    assert (properties["changelog.processed_seq"], properties["changelog.processed_offset"]) == ("3", "13")
    assert [r[0] for r in spark.sql(f"show partitions {table}__state").collect()] == ["cl_state_offset=3"]

    # A re-run without a new snapshot appends nothing and moves nothing.
    run_with(spark, settings, "people", **never)
    assert changelog(spark, settings, "people") == expected_people()
    assert state_properties(spark, table) == properties

    # The tail is 10 rows over a 4-row state: a ratio of 2.5 keeps it (10 is not above 10), 2.4 compacts it.
    run_with(spark, settings, "people", changelog_compact_ratio=2.5)
    assert state_properties(spark, table)["changelog.state_offset"] == "3"
    run_with(spark, settings, "people", changelog_compact_ratio=2.4)
    properties = state_properties(spark, table)
    assert [properties[f"changelog.state_{name}"] for name in ("seq", "offset", "rows")] == ["3", "13", "4"]
    assert [r[0] for r in spark.sql(f"show partitions {table}__state").collect()] == ["cl_state_offset=13"]
    assert_state_is_latest_people(spark, table)
    assert changelog(spark, settings, "people") == expected_people()

    # Raw loses snapshot 4 after it was processed: the next run falls back to the state table plus its tail
    # (offset 14) and still emits the right rows.
    write_csv(tmp_path / "people_4.csv", PEOPLE_HEADER, PEOPLE_SNAPSHOTS[3][:2] + PEOPLE_SNAPSHOTS[3][3:])
    load(spark, settings, "people", tmp_path / "people_4.csv", 4)
    assert run_with(spark, settings, "people", **never)["prior_from_raw"] is True
    spark.sql(f"alter table {settings.table('raw', 'people_snapshots')} drop partition (snapshot_seq = 4)")
    write_csv(tmp_path / "people_5.csv", PEOPLE_HEADER, [("p1", "Ann", "ann@x.org", "12"), PEOPLE_SNAPSHOTS[3][3]])
    load(spark, settings, "people", tmp_path / "people_5.csv", 5)
    assert run_with(spark, settings, "people", **never)["prior_from_raw"] is False
    assert changelog(spark, settings, "people")[len(expected_people()) :] == [
        (14, RETRACT, loaded(4), at(0), "p3", "Cy", "cy@x.org", None),
        (15, CORRECT_FROM, loaded(5), at(2), "p1", "Ann", "ann@x.org", "11"),
        (16, CORRECT_TO, loaded(5), at(5), "p1", "Ann", "ann@x.org", "12"),
        (17, RETRACT, loaded(5), at(3), "p2", "Bob", "bob@x.org", "21"),
    ]


# ------------------------------------------------------------------ orders: multi-column key, compare subset


def orders_file(tmp_path: Path, index: int, rows: list[dict]) -> Path:
    path = tmp_path / f"orders_{index}.ndjson"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def order(region, order_no, amount, note, placed_at) -> dict:
    return {"region": region, "order_no": order_no, "amount": amount, "note": note, "placed_at": placed_at}


def test_orders_whole_key_compare_subset_event_time_all_null_rows(spark, warehouse, tmp_path):
    settings = warehouse
    snapshots = [
        [
            order("eu", 1, 100, "a", "2024-04-01T10:00:00Z"),
            order("us", 1, 200, "b", None),
            order("eu", 2, None, None, None),
        ],
        # note-only change: nothing; amount change; (eu, 2) gone although (eu, 1) stays; all-NULL (us, 2) arrives
        [
            order("us", 1, 250, "b", "2024-04-02T00:00:00Z"),
            order("eu", 1, 100, "new note", "2024-04-01T10:00:00Z"),
            order("us", 2, None, None, None),
        ],
        # amount changes again: -C carries the row as emitted (note 'a'), +C all the new values
        [
            order("eu", 1, 150, "new note", "2024-04-03T00:00:00Z"),
            order("us", 1, 250, "b", "2024-04-02T00:00:00Z"),
            order("us", 2, None, None, None),
        ],
    ]
    load(spark, settings, "orders", orders_file(tmp_path, 0, snapshots[0]), 0)
    dbt(settings, "run", "--select", "orders")
    load(spark, settings, "orders", orders_file(tmp_path, 1, snapshots[1]), 1)
    load(spark, settings, "orders", orders_file(tmp_path, 2, snapshots[2]), 2)
    dbt(settings, "build", "--select", "orders")

    columns = [f.name for f in spark.table(settings.table("changelog", "orders")).schema.fields]
    assert columns == ["offset", "op", "system_time", "event_time", "region", "order_no", "amount", "note", "placed_at"]
    april = datetime(2024, 4, 1, 10, 0)
    assert changelog(spark, settings, "orders") == [
        (0, APPEND, loaded(0), april, "eu", 1, 100, "a", "2024-04-01T10:00:00Z"),
        (1, APPEND, loaded(0), at(0), "eu", 2, None, None, None),
        (2, APPEND, loaded(0), at(0), "us", 1, 200, "b", None),
        (3, RETRACT, loaded(1), at(0), "eu", 2, None, None, None),
        (4, CORRECT_FROM, loaded(1), at(0), "us", 1, 200, "b", None),
        (5, CORRECT_TO, loaded(1), datetime(2024, 4, 2), "us", 1, 250, "b", "2024-04-02T00:00:00Z"),
        (6, APPEND, loaded(1), at(1), "us", 2, None, None, None),
        (7, CORRECT_FROM, loaded(2), april, "eu", 1, 100, "a", "2024-04-01T10:00:00Z"),
        (8, CORRECT_TO, loaded(2), datetime(2024, 4, 3), "eu", 1, 150, "new note", "2024-04-03T00:00:00Z"),
    ]


# ------------------------------------------------------------------ tags: key-only snapshots (Parquet)


def tags_file(tmp_path: Path, index: int, tags: list[str]) -> Path:
    path = tmp_path / f"tags_{index}.parquet"
    pq.write_table(pa.table({"tag": pa.array(tags, pa.string())}), path)
    return path


def test_key_only_snapshots_append_and_retract(spark, warehouse, tmp_path):
    settings = warehouse
    for index, tags in enumerate([["b", "a", "c"], ["d", "c", "b"], []]):
        load(spark, settings, "tags", tags_file(tmp_path, index, tags), index)
    dbt(settings, "build", "--select", "tags")
    assert changelog(spark, settings, "tags") == [
        (0, APPEND, loaded(0), at(0), "a"),
        (1, APPEND, loaded(0), at(0), "b"),
        (2, APPEND, loaded(0), at(0), "c"),
        (3, RETRACT, loaded(1), at(0), "a"),
        (4, APPEND, loaded(1), at(1), "d"),
        (5, RETRACT, loaded(2), at(0), "b"),
        (6, RETRACT, loaded(2), at(0), "c"),
        (7, RETRACT, loaded(2), at(1), "d"),
    ]

    # Another empty snapshot changes nothing; the state records that it was processed all the same.
    load(spark, settings, "tags", tags_file(tmp_path, 3, []), 3)
    dbt(settings, "run", "--select", "tags")
    assert len(changelog(spark, settings, "tags")) == 8
    state = settings.table("changelog", "tags") + "__state"
    properties = {r.key: r.value for r in spark.sql(f"show tblproperties {state}").collect()}
    assert (properties["changelog.processed_seq"], properties["changelog.processed_offset"]) == ("3", "7")

    # The processed snapshot is empty, so it has no partition in raw: it still stands for the (empty) prior state.
    load(spark, settings, "tags", tags_file(tmp_path, 4, ["a"]), 4)
    assert run_with(spark, settings, "tags")["prior_from_raw"] is True
    assert changelog(spark, settings, "tags")[8:] == [(8, APPEND, loaded(4), at(4), "a")]


# ------------------------------------------------------------------ keys checked by the macro


def test_duplicate_keys_loaded_without_a_key_fail_the_model_and_write_nothing(spark, warehouse, tmp_path):
    settings = warehouse
    load(spark, settings, "people", people_file(tmp_path, 0), 0, key=[])
    dbt(settings, "run", "--select", "people")
    before = changelog(spark, settings, "people")
    state_before = spark.sql(f"show tblproperties {settings.table('changelog', 'people')}__state").collect()

    rows = [("p1", "Ann", None, "1"), ("p1", "Ann", None, "2"), ("p2", "Bob", None, "3")]
    write_csv(tmp_path / "dupes.csv", PEOPLE_HEADER, rows)
    load(spark, settings, "people", tmp_path / "dupes.csv", 1, key=[])
    outcome = dbt(settings, "run", "--select", "people", check=False)
    assert not outcome.success
    message = " ".join(outcome.failures)
    assert "NULL or duplicate primary keys (person_id), e.g. snapshot 1 (person_id=p1) x2" in message
    assert "Nothing was written" in message
    assert changelog(spark, settings, "people") == before
    after = spark.sql(f"show tblproperties {settings.table('changelog', 'people')}__state").collect()
    assert after == state_before


# ------------------------------------------------------------------ kinds: what the row hash must tell apart


def kinds_file(tmp_path: Path, index: int, rows: list[dict]) -> Path:
    path = tmp_path / f"kinds_{index}.parquet"
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("a", pa.string()),
            ("b", pa.string()),
            ("d", pa.float64()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("bin", pa.binary()),
            ("arr", pa.list_(pa.string())),
        ]
    )
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    pq.write_table(pa.table(columns, schema=schema), path)
    return path


def test_row_hash_tells_apart_exactly_what_null_safe_comparison_does(spark, warehouse, tmp_path):
    """Runs classify rows by a hash of the compared columns; it must change exactly when `<=>` says so."""
    moment = datetime(2024, 1, 1, 0, 0, 0, 1)
    before = [
        {"id": "concat", "a": "ab", "b": "c"},
        {"id": "null-empty", "a": None, "b": ""},
        {"id": "null-marker", "a": "-", "b": None},
        {"id": "zero", "d": 0.0},
        {"id": "micros", "ts": moment},
        {"id": "bytes", "bin": b"\x00\x01"},
        {"id": "array", "arr": ["a, b"]},
        {"id": "same", "a": "x", "d": 1.5, "ts": moment, "bin": b"", "arr": [None, "y"]},
    ]
    after = [
        {"id": "concat", "a": "a", "b": "bc"},
        {"id": "null-empty", "a": "", "b": None},
        {"id": "null-marker", "a": None, "b": "-"},
        {"id": "zero", "d": -0.0},
        {"id": "micros", "ts": moment + timedelta(microseconds=1)},
        {"id": "bytes", "bin": b"\x00\x02"},
        {"id": "array", "arr": ["a", "b"]},
        {"id": "same", "a": "x", "d": 1.5, "ts": moment, "bin": b"", "arr": [None, "y"]},
    ]
    for index, rows in enumerate([before, after]):
        load(spark, warehouse, "kinds", kinds_file(tmp_path, index, rows), index)
        dbt(warehouse, "run", "--select", "kinds")
    changed = [(row[1], row[4]) for row in changelog(spark, warehouse, "kinds") if row[0] >= len(before)]
    expected_keys = ["array", "bytes", "concat", "micros", "null-empty", "null-marker"]
    assert changed == [(op, key) for key in expected_keys for op in (CORRECT_FROM, CORRECT_TO)]

    # A state table hashed over other columns (or by an older encoding) is not trusted: the run projects the
    # changelog instead and the post-hook rebuilds the state.
    state = warehouse.table("changelog", "kinds") + "__state"
    spark.sql(f"alter table {state} set tblproperties ('changelog.state_hash' = 'v0:elsewhere')")
    load(spark, warehouse, "kinds", kinds_file(tmp_path, 2, [*after[:-1], {"id": "same", "a": "z"}]), 2)
    dbt(warehouse, "build", "--select", "kinds")
    last = [(row[1], row[4], row[5]) for row in changelog(spark, warehouse, "kinds")[-2:]]
    assert last == [(CORRECT_FROM, "same", "x"), (CORRECT_TO, "same", "z")]
    properties = {r.key: r.value for r in spark.sql(f"show tblproperties {state}").collect()}
    assert properties["changelog.state_hash"].startswith("v1:")


def assert_state_is_latest_people(spark, table: str) -> None:
    """The state table holds the latest people snapshot's rows, each with the event time it was last emitted at."""
    state = spark.sql(f"select person_id, score, event_time from {table}__state order by person_id").collect()
    assert [tuple(r) for r in state] == [
        ("p1", "11", at(2)),
        ("p2", "21", at(3)),
        ("p3", None, at(0)),
        ("p5", "50", at(1)),
    ]


# ------------------------------------------------------------------ a dataset with no snapshot yet


def test_a_changelog_with_no_snapshot_yet_builds_empty_then_fills_from_the_first(spark, warehouse, tmp_path):
    """A part with no input yet is skipped, not failed: before its first snapshot the model, its tests and a
    current-state view over it build green and empty; the first snapshot replaces the empty table."""
    settings = warehouse
    table = settings.table("changelog", "late")
    current = settings.table("changelog", "late_current")
    for _ in range(2):
        dbt(settings, "build", "--select", "late", "late_current")
        assert spark.table(table).count() == 0 and spark.table(current).count() == 0
    assert [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema.fields] == [
        ("offset", "bigint"), ("op", "int"), ("system_time", "timestamp"), ("event_time", "timestamp"),
        ("late_id", "string"),
    ]
    assert table_properties(spark, table)["changelog.waiting_for"] == "late_snapshots"
    assert not spark.catalog.tableExists(f"{table}__state")

    header = ["late_id", "amount"]
    load(spark, settings, "late", write_csv(tmp_path / "late_0.csv", header, [("a", "1"), ("b", "2")]), 0)
    # Compiling plans the first build but writes nothing: the empty table stays until a run replaces it.
    dbt(settings, "compile", "--select", "late")
    assert table_properties(spark, table)["changelog.waiting_for"] == "late_snapshots"
    dbt(settings, "build", "--select", "late", "late_current")
    assert changelog(spark, settings, "late") == [
        (0, APPEND, loaded(0), at(0), "a", "1"),
        (1, APPEND, loaded(0), at(0), "b", "2"),
    ]
    assert "changelog.waiting_for" not in table_properties(spark, table)
    assert spark.catalog.tableExists(f"{table}__state")

    load(spark, settings, "late", write_csv(tmp_path / "late_1.csv", header, [("a", "1"), ("c", "3")]), 1)
    for _ in range(2):  # the second build finds nothing new
        dbt(settings, "build", "--select", "late", "late_current")
        assert changelog(spark, settings, "late")[2:] == [
            (2, RETRACT, loaded(1), at(0), "b", "2"),
            (3, APPEND, loaded(1), at(1), "c", "3"),
        ]
    assert sorted(tuple(row)[:2] for row in spark.table(current).collect()) == [("a", "1"), ("c", "3")]
