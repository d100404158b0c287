"""The generator (pure Python, no Spark): same spec, same bytes; the sample has every property the main
job and the docs promise; the benchmarks' workloads are the ones they always measured."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

from python_jobs.tools.generate import crm, facets, lineage, pipelines, registry
from python_jobs.tools.generate.sample import SampleManifest, SampleSpec, generate_sample

SMALL = SampleSpec(size=1_200, seed=3)


def files_digest(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*")) if path.is_file()
    }


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> SampleManifest:
    return generate_sample(SMALL, tmp_path_factory.mktemp("sample"))


@pytest.fixture(scope="module")
def lineage_lines(sample) -> list[str]:
    return [line for path in sample.lineage_files for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def events(lineage_lines) -> list[dict]:
    """The distinct well-formed events."""
    parsed = {}
    for line in lineage_lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.get("run", {}).get("runId") and event["eventTime"][:2] == "20":
            parsed[line] = event
    return list(parsed.values())


def test_same_spec_gives_the_same_bytes_and_another_seed_or_size_does_not(sample, tmp_path):
    again = generate_sample(SMALL, tmp_path / "again")
    assert files_digest(again.root) == files_digest(sample.root)
    other_seed = generate_sample(SampleSpec(size=SMALL.size, seed=4), tmp_path / "seed")
    assert files_digest(other_seed.root) != files_digest(sample.root)
    bigger = generate_sample(SampleSpec(size=SMALL.size * 3, seed=SMALL.seed), tmp_path / "bigger")
    assert bigger.lineage.events > 2.5 * sample.lineage.events
    assert bigger.snapshots[0].rows == 3 * sample.snapshots[0].rows
    assert bigger.sd_events > sample.sd_events


def test_lines_reconcile_with_events_duplicates_and_malformed_lines(sample, lineage_lines, events):
    facts = sample.lineage
    assert abs(facts.events - SMALL.size) < 0.1 * SMALL.size
    assert len(lineage_lines) == facts.lines == facts.events + facts.duplicates + facts.malformed
    assert len(events) == facts.events
    repeats = sum(n - 1 for n in Counter(lineage_lines).values())
    assert repeats == facts.duplicates > 0
    assert facts.malformed >= len(pipelines.MALFORMED)
    for line in lineage_lines:  # each malformed kind is there
        assert line.startswith("{") or line.startswith("<html>")


def test_airflow_spark_and_dbt_jobs_with_their_producers_names_and_parents(events):
    by_producer = defaultdict(set)
    runs = {e["run"]["runId"]: e["job"] for e in events}
    for event in events:
        by_producer[event["producer"]].add(event["job"]["name"])
        parent = event["run"]["facets"].get("parent")
        if parent:
            assert parent["run"]["runId"] in runs, "a parent run is a run of the sample"
            assert runs[parent["run"]["runId"]]["name"] == parent["job"]["name"]
    assert set(by_producer) == {pipelines.AIRFLOW_PRODUCER, pipelines.SPARK_PRODUCER, pipelines.DBT_PRODUCER}
    assert all(".execute_insert_into_hadoop_fs_relation_command." in n for n in by_producer[pipelines.SPARK_PRODUCER])
    dbt_jobs = by_producer[pipelines.DBT_PRODUCER]
    assert any(n.startswith("dbt-run-") for n in dbt_jobs) and any(n.startswith("model.") for n in dbt_jobs)
    spark_parents = {runs[e["run"]["facets"]["parent"]["run"]["runId"]]["name"]
                     for e in events if e["producer"] == pipelines.SPARK_PRODUCER}
    assert spark_parents <= by_producer[pipelines.AIRFLOW_PRODUCER]
    for event in events:
        for body in [*event["run"]["facets"].values(), *event["job"]["facets"].values()]:
            assert body["_producer"] and body["_schemaURL"]


def test_schemas_evolve_with_added_removed_and_retyped_columns(events):
    schemas = defaultdict(list)
    for event in sorted(events, key=lambda e: e["eventTime"]):
        for output in event["outputs"]:
            fields = output.get("facets", {}).get("schema", {}).get("fields")
            if fields is not None:
                typed = {f["name"]: f["type"] for f in fields}
                if not schemas[output["name"]] or schemas[output["name"]][-1] != typed:
                    schemas[output["name"]].append(typed)
    added = removed = retyped = 0
    for history in schemas.values():
        for before, after in pairwise(history):
            added += bool(after.keys() - before.keys())
            removed += bool(before.keys() - after.keys())
            retyped += any(before[k] != after[k] for k in before.keys() & after.keys())
    assert added and removed and retyped


def test_input_only_datasets_failed_and_aborted_runs_column_lineage_and_large_facets(sample, events, lineage_lines):
    read = {(d["namespace"], d["name"]) for e in events for d in e["inputs"]}
    written = {(d["namespace"], d["name"]) for e in events for d in e["outputs"]}
    assert {(pipelines.CRM_DB, "crm.public.accounts"), (pipelines.KAFKA, "team_00.orders")} <= read - written
    types = Counter(e["eventType"] for e in events)
    assert types["FAIL"] and types["ABORT"] and types["RUNNING"] and types["START"] and types["COMPLETE"]
    assert sample.lineage.failed_runs and sample.lineage.aborted_runs
    lineage_facets = [d["facets"]["columnLineage"] for e in events for d in e["outputs"]
                      if "columnLineage" in d.get("facets", {})]
    assert lineage_facets and all(f["fields"] for f in lineage_facets)
    large = [line for line in lineage_lines if len(line) > SMALL.large_facet_bytes]
    assert 2 <= sample.lineage.large_facets == len({json.loads(line)["run"]["runId"] for line in large})


def test_crm_exports_churn_like_a_real_table(sample):
    assert [s.snapshot_time for s in sample.snapshots] == sorted(s.snapshot_time for s in sample.snapshots)
    first = sample.snapshots[0].path.read_text().splitlines()
    assert list(json.loads(first[0])) == list(crm.COLUMNS)
    assert sample.changelog_ops[0] == {crm.APPEND: sample.snapshots[0].rows}
    for ops in sample.changelog_ops[1:]:
        assert set(ops) == {crm.APPEND, crm.RETRACT, crm.CORRECT_FROM, crm.CORRECT_TO}
        assert ops[crm.CORRECT_FROM] == ops[crm.CORRECT_TO]
    assert sample.reappearing_keys
    rows = [s.rows for s in sample.snapshots]
    for ops, previous, current in zip(sample.changelog_ops[1:], rows[:-1], rows[1:], strict=True):
        assert previous + ops[crm.APPEND] - ops[crm.RETRACT] == current


def test_registry_versions_add_properties_and_one_breaks(sample):
    versions = defaultdict(list)
    for version in registry.SAMPLE_VERSIONS:
        text = (sample.registry_dir / version.path).read_text()
        schema = json.loads(text)
        assert schema["self"] == {"vendor": "com.example", "name": version.name, "format": "jsonschema",
                                  "version": version.version}
        versions[version.name].append(schema["properties"])
    assert set(versions) == {"checkout", "signup", "page_view"}
    for name, history in versions.items():
        for before, after in pairwise(history):
            assert before.keys() < after.keys()
            changed = [k for k in before if before[k] != after[k]]
            assert changed == (["referrer"] if name == "page_view" else [])


def test_self_describing_events_use_the_registry_with_some_invalid(sample):
    lines = sample.events_file.read_text().splitlines()
    assert len(lines) == sample.sd_events
    known = {v.uri for v in registry.SAMPLE_VERSIONS}
    used: list[str] = []
    broken = 0
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            broken += 1
            continue
        if "schema" in event and event["schema"] in known:
            used.append(event["schema"])
    assert broken and set(used) == known
    assert len(lines) - len(used) >= len(registry.INVALID_KINDS)
    checkout = [u for u in used if "/checkout/" in u]
    assert checkout == sorted(checkout), "each version takes over from the one before"


def sha256_of(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def test_benchmark_workloads_are_unchanged_by_the_move(tmp_path):
    # Digests of the workloads as the benchmarks generated them before the generators moved here.
    proposal = tmp_path / "proposal.ndjson"
    assert lineage.proposal_example(proposal) == 4_320
    assert sha256_of(proposal.read_bytes()) == "0fe6f13b4cb7476955309bbdb03b6e432f78275ce6d58990fa5bd13ed8b7ffae"
    bench = tmp_path / "bench.ndjson"
    lineage.write_events(lineage.SyntheticSpec(events=500, jobs=20, schema_change_every=5), bench)
    assert sha256_of(bench.read_bytes()) == "d7e9aaabcfc9402ee4af910821b6fe0c227d3933e832ffed817328caacbed68a"
    config = facets.SyntheticConfig(events=300, large_every=100, large_bytes=50_000)
    facet_text = "".join(json.dumps(e, sort_keys=True) for e in facets.synthetic_events(config))
    assert sha256_of(facet_text) == "e24ac421851e3c4ccf8236586b105a1ff81f30b12b202cdda5f82180f0a19346"
    checkout = "\n".join(registry.checkout_events(200, seed=1))
    assert sha256_of(checkout) == "a0898c643cca1ea018160bb0828dc5ff68910cc92eaf28d089ee3f09f2937eb0"


def test_generate_sample_command_writes_the_manifest(tmp_path, capsys):
    from python_jobs.cli import main

    assert main(["generate", "sample", "--size", "300", "--seed", "3", "--out", str(tmp_path)]) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["spec"] == {"size": 300, "seed": 3}
    assert manifest["registry"]["breaking"] == registry.BREAKING_VERSION
    assert "wrote" in capsys.readouterr().out
