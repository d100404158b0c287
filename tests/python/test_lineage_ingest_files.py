"""``ingest lineage`` writes the batch once: staged files move into the raw table's folder, only
files holding rejected or duplicate rows are rewritten, and no staging folder is left behind."""

from __future__ import annotations

import json
from pathlib import Path

from python_jobs.ingest.lineage import STAGING_PREFIX, HadoopFiles, _table_files, ingest_lineage

RUN_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


def event(i: int, event_type: str = "START") -> str:
    return json.dumps({
        "eventType": event_type,
        "eventTime": "2026-01-01T00:00:00Z",
        "run": {"runId": f"00000000-0000-4000-8000-{i:012d}"},
        "job": {"namespace": "tests", "name": f"job_{i}"},
        "producer": "https://example.com/tests",
        "schemaURL": RUN_URL,
    })


def table_folder(spark, settings) -> Path:
    files = _table_files(spark, HadoopFiles(spark), settings.table("raw", "lineage_events"))
    assert files is not None, "the raw table is plain Parquet"
    return Path(files.location.removeprefix("file:"))


def test_clean_files_are_moved_and_mixed_files_rewritten(spark, isolated_settings, tmp_path):
    clean, mixed = tmp_path / "a.ndjson", tmp_path / "b.ndjson"
    clean.write_text("\n".join(event(i) for i in range(5)) + "\n")
    # a rejected line and a copy of an event of the clean file: this file's staged rows are filtered
    mixed.write_text("\n".join([event(100), "{broken", event(3), event(101)]) + "\n")
    ingest_lineage(spark, isolated_settings, [clean])  # creates the table
    folder = table_folder(spark, isolated_settings)
    stale = folder / f"{STAGING_PREFIX}left-by-a-crash"
    stale.mkdir()
    (stale / "part-0.parquet").write_text("not parquet")
    # the files live in the partition folders (ingest_block=0 here)
    before = {p.name for p in folder.glob("ingest_block=*/*.parquet")}
    assert before

    report = ingest_lineage(spark, isolated_settings, [clean, mixed])
    assert (report.read, report.accepted, report.rejected, report.duplicates) == (9, 2, 1, 6)
    assert not [p for p in folder.iterdir() if p.name.startswith(STAGING_PREFIX)]
    assert {p.name for p in folder.glob("ingest_block=*/*.parquet")} > before

    raw = spark.table(isolated_settings.table("raw", "lineage_events"))
    stored = sorted((Path(r.source_file).name, r.source_line) for r in raw.collect())
    assert stored == [("a.ndjson", n) for n in range(1, 6)] + [("b.ndjson", 1), ("b.ndjson", 4)]
    rejected = spark.table(isolated_settings.table("audit", "lineage_events_rejected")).collect()
    assert [(Path(r.source_file).name, r.source_line, r.reason) for r in rejected] == [
        ("b.ndjson", 2, "not valid JSON or not a JSON object")
    ]
