"""What the main job ingests (``Inputs``): lineage events, snapshots oldest first, a registry and the events
it validates. The sample generator describes its sample this way (``SampleManifest.inputs()``); so can a
deployment's own folders."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotation only: the generator imports this module, and stays free of pyspark
    from python_jobs.ingest.snapshot import SnapshotLoad


@dataclass(frozen=True)
class SnapshotFile:
    """One full snapshot of a dataset, appended with ``ingest_snapshot``."""

    dataset: str
    path: Path
    primary_key: tuple[str, ...]
    snapshot_time: datetime
    system_time: datetime
    rows: int


@dataclass(frozen=True)
class Inputs:
    """Every kind of input the main job ingests, in the order it ingests them; the counts size the progress."""

    lineage: tuple[Path, ...]  # OpenLineage files or folders, ingested in one batch
    lineage_lines: int
    snapshots: tuple[SnapshotFile, ...]  # oldest first
    registry_dir: Path
    events_file: Path  # self-describing events, validated against the registry
    events: int


def describe_load(load: SnapshotLoad) -> str:
    """One line about a snapshot load (``ingest snapshot`` and the main job's summary print it)."""
    if load.already_loaded:
        return (
            f"{load.table}: snapshot {load.snapshot_seq} ({load.snapshot_time}) is already loaded with the same "
            "content; nothing changed"
        )
    return f"{load.table}: loaded snapshot {load.snapshot_seq} ({load.snapshot_time}), {load.rows} rows"
