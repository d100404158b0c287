"""Unfinished writes that a killed writer left inside table folders, removed before the next one writes.

Spark commits a file write through Hadoop's ``FileOutputCommitter`` (algorithm 1): each task moves its files
into ``<table folder>/_temporary/0/task_*`` when it finishes, and the job moves every ``task_*`` folder found
there into the table when all tasks are done. A writer killed between the two leaves committed task folders
behind, and the next write to the same table, which uses the same ``_temporary/0`` folder, moves them in with
its own files: the killed run's rows appear twice once the command is re-run (the fault suite found this as
extra rows in ``int_lineage_sighting_revisions``). Dynamic partition overwrites stage in
``.spark-staging-<job id>`` folders, which are never merged but would stay forever.

Only a process that holds the warehouse writer lock writes, so when the lock is freshly taken any such folder
belongs to a writer that is gone. ``remove_stale_writes`` deletes them; the lock calls it on acquisition.

Retired folders (``ops/retired_folders.py``: folders that compaction and the rebuilds of Python table models
switched tables away from, kept for a grace period) are another leftover, removed by
``remove_expired_retired`` when a writer *releases* the lock, not when it takes it: deleting one needs the
metastore, to be sure no table or partition points at it (the adapter marks a folder before its switch), and the
lock is taken before Spark starts, while by its release a writer that wrote the warehouse has a session. Every
writer takes the lock, plain ``dbt build`` included, so retired folders do not pile up between compactions.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from python_jobs.settings import Settings

COMMITTER_FOLDER = "_temporary"
STAGING_PREFIX = ".spark-staging-"


def warehouse_folder(settings: Settings) -> Path:
    """The folder that holds every database folder: the shared warehouse on a cluster target."""
    shared = os.environ.get("LINEAGE_SHARED_WAREHOUSE", "").strip()
    if settings.target != "local" and shared and ("://" not in shared or shared.startswith("file://")):
        return Path(shared.removeprefix("file://"))
    return settings.lineage_home / "warehouse"


def is_unfinished_write(name: str) -> bool:
    return name == COMMITTER_FOLDER or name.startswith(STAGING_PREFIX)


def _subfolders(folder: Path) -> Iterator[Path]:
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    yield Path(entry.path)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return


def stale_write_folders(warehouse: Path) -> list[Path]:
    """Unfinished-write folders in every table folder (``<db>.db/<table>``) and in its partition folders.

    Spark puts them at the root of the folder it writes (a table's, or a partition's for a write aimed at
    one partition's location), never deeper, so three levels are listed and nothing more.
    """
    found: list[Path] = []
    for database in _subfolders(warehouse):
        for table in _subfolders(database):
            for child in _subfolders(table):
                if is_unfinished_write(child.name):
                    found.append(child)
                    continue
                found.extend(grandchild for grandchild in _subfolders(child) if is_unfinished_write(grandchild.name))
    return sorted(found)


def remove_stale_writes(settings: Settings) -> list[Path]:
    """Deletes what killed writers left unfinished; call it only while holding the writer lock."""
    removed = []
    for folder in stale_write_folders(warehouse_folder(settings)):
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    if removed:
        shown = ", ".join(str(path) for path in removed[:3]) + (" ..." if len(removed) > 3 else "")
        print(f"writer lock: removed {len(removed)} unfinished write folder(s) left by a killed writer: {shown}",
              file=sys.stderr, flush=True)
    return removed


def remove_expired_retired(settings: Settings) -> list[str]:
    """Deletes the retired folders whose grace is over, when this process has a Spark session (without one it
    wrote nothing through Spark, and cannot ask the metastore); call it only while holding the writer lock. A
    failure is reported and does not fail the writer: the next one sweeps again."""
    # Imported here: a cycle. retired_folders uses HadoopFiles (ingest/lineage.py), which imports
    # python_jobs.spark, which imports this module (through metastore.py and lock.py).
    from python_jobs.ops.retired_folders import active_session, sweep

    spark = active_session()
    if spark is None:
        return []
    try:
        return sweep(spark, settings)
    except Exception as error:  # a cleanup: it must neither fail the write nor hide the write's own error
        print(f"writer lock: could not remove expired retired folders: {error}", file=sys.stderr, flush=True)
        return []
