"""When a refresh may keep the snapshot it has (warehouse_listing.py): the pure rules, and the local listing."""

from __future__ import annotations

import os
import time
from pathlib import Path

from python_jobs.marquez_api.warehouse_listing import WarehouseListing, _local_files

FILES = frozenset({("/w/raw.db/events/part-0.parquet", 10, 1_000_000),
                   ("/w/lineage.db/runs/part-0.parquet", 5, 990_000)})


def test_a_listing_is_settled_once_its_newest_file_is_old_enough():
    assert WarehouseListing(FILES, listed_at=1_030.0).settled(30)
    assert not WarehouseListing(FILES, listed_at=1_029.9).settled(30)


def test_the_same_files_keep_the_snapshot_only_after_a_settled_listing():
    settled, fresh = WarehouseListing(FILES, 2_000.0), WarehouseListing(FILES, 1_000.5)
    now = WarehouseListing(FILES, 3_000.0)
    assert now.unchanged_since(settled, 30)
    assert not now.unchanged_since(fresh, 30)  # a partition registered after the files could be missing
    assert not now.unchanged_since(None, 30)  # the snapshot was loaded before its tables existed
    grown = WarehouseListing(FILES | {("/w/raw.db/events/part-1.parquet", 7, 2_500_000)}, 3_000.0)
    assert not grown.unchanged_since(settled, 30)
    rewritten = WarehouseListing(frozenset({(p, size, modified + 1) for p, size, modified in FILES}), 3_000.0)
    assert not rewritten.unchanged_since(settled, 30)


def test_the_local_listing_has_every_file_with_its_size_and_time(tmp_path: Path):
    (tmp_path / "t" / "block=1").mkdir(parents=True)
    (tmp_path / "t" / "block=1" / "part-0.parquet").write_bytes(b"abc")
    (tmp_path / "t" / "_SUCCESS").write_bytes(b"")
    os.utime(tmp_path / "t" / "_SUCCESS", (time.time(), 1_700_000_000.5))
    listed = {(Path(path).relative_to(tmp_path).as_posix(), size, modified)
              for path, size, modified in _local_files(str(tmp_path))}
    assert ("t/_SUCCESS", 0, 1_700_000_000_500) in listed
    assert {(path, size) for path, size, _ in listed} == {("t/block=1/part-0.parquet", 3), ("t/_SUCCESS", 0)}
    assert list(_local_files(str(tmp_path / "missing"))) == []
