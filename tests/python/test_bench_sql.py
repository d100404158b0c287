"""``bench sql``'s figures from timings (no Spark, no endpoint): the latency summary, the printed tables, and the
``bench all`` table of a result shaped as ``measure_sql`` returns it."""

from __future__ import annotations

from random import Random

import pytest

from python_jobs.tools.bench import areas, sql
from python_jobs.tools.bench.report import Row


def fake_sql_bench(errors_during_round: int = 0) -> sql.SqlBench:
    """Endpoint queries twice as slow as in-process ones; during the round, fewer queries and no join answered
    in-process."""
    latencies = {}
    for condition in sql.CONDITIONS:
        for path in sql.PATHS:
            for kind in sql.KINDS:
                base = (2.0 if path == sql.ENDPOINT else 1.0) * (1 + sql.KINDS.index(kind))
                count = 20 if condition == sql.IDLE else 4
                latency = sql.Latency([base * (1 + i / 10) for i in range(count)])
                if condition == sql.DURING_ROUND and path == sql.IN_PROCESS and kind == sql.JOIN:
                    latency = sql.Latency()
                    for _ in range(errors_during_round):
                        latency.fail("Table or view not found")
                latencies[(condition, path, kind)] = latency
    return sql.SqlBench(
        events=3_000, counts="1,500 runs / 1,600 dataset versions / 40 schema versions",
        jdbc_url="jdbc:hive2://127.0.0.1:10001/bench_sql_3000_lineage", config=sql.SqlBenchConfig(queries=20),
        latencies=latencies,
        throughput={sql.ENDPOINT: sql.Throughput(2, 20, 0.5, 0), sql.IN_PROCESS: sql.Throughput(2, 20, 0.25, 0)},
        round=sql.RoundResult(1_000, 1_000, 3.0, 9.0, 12.0), runs_before=1_500, runs_after=2_000,
        load_before="1.00 / 1.00 / 1.00", load_after="1.50 / 1.00 / 1.00",
    )


def test_latency_summary() -> None:
    latency = sql.Latency([10.0, 20.0, 30.0, 40.0])
    latency.fail("boom")
    latency.fail("again")
    assert (latency.p50(), latency.p95(), latency.slowest(), latency.attempts) == (25.0, 40.0, 40.0, 6)
    assert latency.per_second() == 4 / 0.1  # four answered queries in 100 ms
    assert latency.text() == "25.0 / 40.0 ms (40.0/s, 2 errors)" and latency.first_error == "boom"
    nothing = sql.Latency()
    assert nothing.text() == "-" and nothing.p50() is None and nothing.per_second() is None
    nothing.fail("x")
    assert nothing.text() == "- (1 error)"


def test_answers_are_checked_by_their_row_count() -> None:
    assert sql.expected_rows(sql.POINT, 1) and not sql.expected_rows(sql.POINT, 0)
    assert sql.expected_rows(sql.AGGREGATE, 10) and not sql.expected_rows(sql.AGGREGATE, 11)
    assert sql.expected_rows(sql.JOIN, 25) and not sql.expected_rows(sql.JOIN, 0)


def test_statements_quote_names_and_read_the_prefixed_schema() -> None:
    workload = sql.Workload("bench_sql_3000_lineage", ("run-1",), (("ns", "o'brien"),))
    rng = Random(1)
    assert workload.statement(sql.POINT, rng).endswith("from bench_sql_3000_lineage.runs where uuid = 'run-1'")
    join = workload.statement(sql.JOIN, rng)
    assert "v.dataset_name = 'o\\'brien'" in join and "bench_sql_3000_lineage.dataset_fields f" in join


def test_printed_tables_show_every_kind_path_and_condition() -> None:
    measured = fake_sql_bench(errors_during_round=3)
    context, table = sql.sql_figures(measured)
    rows = {(row[0], row[1], row[2]): row for row in table.rows}
    assert len(rows) == len(sql.CONDITIONS) * len(sql.KINDS) * len(sql.PATHS) + 2  # + the two clients-at-once rows
    idle_point = rows[(sql.IDLE, sql.POINT, sql.ENDPOINT)]
    assert idle_point[3:] == ("20", "3.9 / 5.6 / 5.8", "256.4", "0")  # 2.0 ... 5.8 ms, 78 ms in all
    assert rows[(sql.DURING_ROUND, sql.JOIN, sql.IN_PROCESS)][3:] == ("0", "-", "-", "3")
    figures = dict((row[1], row[2]) for row in context.rows)
    assert figures["build round"] == ("+1,000 events (accepted 1,000): ingest 3.0 s + build 9.0 s = 12.0 s; "
                                      "23 queries ran during it")
    assert figures["runs through the endpoint after the round (refresh_readers)"] == "2,000 (+500)"
    assert sql.first_errors(measured) == [f"{sql.DURING_ROUND}, {sql.IN_PROCESS}, {sql.JOIN}: Table or view not found"]


def test_bench_all_table_puts_the_endpoint_beside_in_process() -> None:
    area = areas.sql_table(fake_sql_bench())
    assert area.title == "SQL endpoint" and area.baseline_name == "in-process (same queries)"
    by_figure: dict[str, Row] = {row.figure: row for row in area.rows}
    idle_join = by_figure[f"{sql.JOIN} ({sql.IDLE}): p50 / p95 (queries/s)"]
    assert idle_join.ratio == pytest.approx(2.0)  # twice as slow through the endpoint
    assert by_figure["2 clients at once, the three kinds in turn, idle: queries/s"].ratio == pytest.approx(0.5)
    assert by_figure["build round (+1,000 events): ingest + build, queries that ran during it"].measured == (
        "12.0 s, 20 queries")
    assert any("+500" in note for note in area.notes)
