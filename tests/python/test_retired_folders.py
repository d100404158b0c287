"""Retired folders (``ops/retired_folders.py``): which expire when, and that a sweep never deletes a current
location. No Spark: the file operations run on an in-memory tree."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from python_jobs.ops.retired_folders import (
    DEFAULT_GRACE,
    GRACE_ENV,
    MARKER,
    Retired,
    expired,
    find_retired,
    grace,
    holds_a_current_location,
    information_field,
    marker_text,
    parse_marker,
    remove_expired,
    retire,
)

NOW = datetime(2026, 11, 26, 23, 30, tzinfo=UTC)
GRACE = timedelta(minutes=15)


class MemoryFolders:
    """Folders as a set of paths of files and folders."""

    def __init__(self, files: dict[str, str]):
        self.files = dict(files)
        self.folders = {path[:end] for path in files for end in range(1, len(path)) if path[end] == "/"}

    def children(self, folder: str) -> list[tuple[str, bool, int]]:
        entries = [(path.rpartition("/")[2], False, len(text)) for path, text in self.files.items()
                   if path.rpartition("/")[0] == folder]
        entries += [(path.rpartition("/")[2], True, 0) for path in self.folders if path.rpartition("/")[0] == folder]
        return sorted(entries)

    def read_text(self, file: str) -> str | None:
        return self.files.get(file)

    def write_text(self, file: str, text: str) -> None:
        self.files[file] = text

    def delete(self, folder: str) -> None:
        self.files = {path: text for path, text in self.files.items() if not path.startswith(folder + "/")}
        self.folders = {path for path in self.folders if path != folder and not path.startswith(folder + "/")}


def test_markers_read_back_in_the_project_and_the_adapter_format() -> None:
    text = marker_text("lineage.jobs", NOW)
    assert json.loads(text) == {"table": "lineage.jobs", "retired_at": "2026-11-26T23:30:00.000000Z"}
    assert parse_marker("/w/jobs", text) == Retired("/w/jobs", "lineage.jobs", NOW)
    adapter = json.dumps({"table": "lineage.jobs", "retired_at": NOW.isoformat()})  # ...+00:00
    assert parse_marker("/w/jobs", adapter).retired_at == NOW
    for broken in ("", "{", '{"table": "t"}', '{"retired_at": "yesterday"}', "[]"):
        assert parse_marker("/w/jobs", broken).retired_at is None


def test_a_folder_expires_after_the_grace_unless_a_table_points_at_it_or_into_it() -> None:
    old, fresh = NOW - GRACE, NOW - GRACE + timedelta(seconds=1)
    retired = [Retired("/w/db/a", "db.a", old), Retired("/w/db/b", "db.b", fresh), Retired("/w/db/c", "db.c", old),
               Retired("/w/db/d", "db.d", old), Retired("/w/db/e", "db.e", None)]
    current = ["/w/db/c/", "/w/db/d/p=1", "/w/db/a2"]
    assert [entry.folder for entry in expired(retired, NOW, GRACE, current)] == ["/w/db/a"]
    assert [entry.folder for entry in expired(retired, NOW + timedelta(seconds=1), GRACE, ())] == [
        "/w/db/a", "/w/db/b", "/w/db/c", "/w/db/d"]
    assert holds_a_current_location("/w/db/d", ["/w/db/d/p=1"])
    assert not holds_a_current_location("/w/db/a", ["/w/db/a2"])


def test_the_grace_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(GRACE_ENV, raising=False)
    assert grace() == DEFAULT_GRACE == timedelta(minutes=15)
    monkeypatch.setenv(GRACE_ENV, "2.5")
    assert grace() == timedelta(seconds=2.5)


def test_a_sweep_finds_retired_folders_beside_tables_and_partition_folders_inside_them() -> None:
    long_ago = marker_text("db.t", NOW - timedelta(hours=1))
    files = MemoryFolders(
        {
            "/w/db.db/t/part-0": "x",  # a table's folder: no marker
            f"/w/db.db/t__gen-1/{MARKER}": long_ago,  # its previous generation, retired
            "/w/db.db/t__gen-1/part-0": "x",
            f"/w/db.db/u/{MARKER}": long_ago,  # marked, but still the table's folder (a failed switch)
            f"/w/db.db/raw/ingest_block=1/{MARKER}": long_ago,  # a raw block's folder that compaction replaced
            "/w/db.db/raw/_compacted-ingest_block=1__compacted-0123/part-0": "x",
            f"/w/db.db/v/append-1/{MARKER}": long_ago,  # not where retired folders are: never looked at
            f"/w/db.db/w/{MARKER}": "{",  # a marker a writer stopped writing
        }
    )
    found = find_retired(files, ["/w/db.db/"])
    assert sorted(entry.folder for entry in found) == [
        "/w/db.db/raw/ingest_block=1", "/w/db.db/t__gen-1", "/w/db.db/u", "/w/db.db/w"]
    current = ["/w/db.db/t", "/w/db.db/u", "/w/db.db/raw", "/w/db.db/raw/_compacted-ingest_block=1__compacted-0123"]

    removed = remove_expired(files, found, current, now=NOW, grace_period=GRACE)
    assert removed == ["/w/db.db/raw/ingest_block=1", "/w/db.db/t__gen-1"]
    assert files.children("/w/db.db/t__gen-1") == []
    assert files.read_text(f"/w/db.db/u/{MARKER}") == long_ago
    assert files.read_text("/w/db.db/raw/_compacted-ingest_block=1__compacted-0123/part-0") == "x"
    # The unreadable marker is rewritten: the folder goes one grace from now, not never.
    assert parse_marker("/w/db.db/w", files.read_text(f"/w/db.db/w/{MARKER}")).retired_at == NOW
    later = find_retired(files, ["/w/db.db"])
    assert remove_expired(files, later, current, now=NOW + GRACE, grace_period=GRACE) == ["/w/db.db/w"]


def test_retiring_again_starts_the_grace_over() -> None:
    files = MemoryFolders({f"/w/db.db/t/{MARKER}": marker_text("db.t", NOW - timedelta(hours=1))})
    retire(files, "/w/db.db/t/", "db.t", now=NOW)
    (entry,) = find_retired(files, ["/w/db.db"])
    assert entry.retired_at == NOW and expired([entry], NOW, GRACE, ()) == []


def test_show_table_extended_fields() -> None:
    information = "Catalog: spark_catalog\nType: MANAGED\nLocation: file:/w/db.db/t\nPartition Columns: [`b`]\n"
    assert information_field(information, "Location") == "file:/w/db.db/t"
    assert information_field(information, "Partition Columns") == "[`b`]"
    assert information_field("Type: VIEW\n", "Location") is None
