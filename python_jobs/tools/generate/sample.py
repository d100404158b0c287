"""The realistic sample: lineage events, CRM exports and a registry with its events, in one folder.

``generate_sample(SampleSpec(size, seed), out)`` writes (``size`` is about the number of lineage events;
every other part scales with it)::

    out/lineage/events-<day>.ndjson          OpenLineage events of several pipelines, a file per day
    out/snapshots/crm_accounts/<time>.ndjson nightly full exports of crm_accounts
    out/registry/schemas/<vendor>/<name>/jsonschema/<M-R-A>
    out/events/sd_events.ndjson              self-describing events for the registry
    out/manifest.json                        what was written and what the warehouse must show for it

The same spec gives byte-identical files: every random choice comes from generators seeded by
``seed`` and a fixed name, and every time is a fixed offset from fixed epochs.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

from python_jobs.settings import Settings
from python_jobs.tools.generate import crm, pipelines, registry
from python_jobs.warehouse.inputs import Inputs, SnapshotFile

DEFAULT_SIZE = 2_000
MIB = 1 << 20


@dataclass(frozen=True)
class SampleSpec:
    size: int = DEFAULT_SIZE
    seed: int = 7

    @property
    def large_facets(self) -> int:
        return 2 + self.size // 200_000

    @property
    def large_facet_bytes(self) -> int:
        """Multi-MB plans at full size; smaller (never under 256 KiB) for small samples."""
        return min(4 * MIB, max(MIB // 4, self.size * 512))

    @property
    def malformed_lines(self) -> int:
        return len(pipelines.MALFORMED) + self.size // 50_000

    @property
    def duplicate_lines(self) -> int:
        return max(5, self.size // 100)

    @property
    def accounts(self) -> int:
        return max(40, self.size // 5)

    @property
    def exports(self) -> int:
        return 6

    @property
    def sd_events(self) -> int:
        return max(200, self.size // 2)

    def pipeline_spec(self) -> pipelines.PipelineSpec:
        return pipelines.spec_for_events(self.size, self.seed, self.large_facets, self.large_facet_bytes)


@dataclass(frozen=True)
class LineageFacts:
    events: int  # distinct valid events
    lines: int  # events + duplicates + malformed
    duplicates: int
    malformed: int
    failed_runs: int
    aborted_runs: int
    large_facets: int
    days: int
    copies: int


@dataclass(frozen=True)
class SampleManifest:
    spec: SampleSpec
    root: Path
    lineage_files: tuple[Path, ...]
    snapshots: tuple[SnapshotFile, ...]
    registry_dir: Path
    events_file: Path
    lineage: LineageFacts
    changelog_ops: tuple[dict[int, int], ...]  # per snapshot, in order: op -> rows the changelog must add
    reappearing_keys: tuple[str, ...]
    sd_events: int  # lines in events_file
    sd_invalid: int  # of which the validator must reject
    registry_schemas: tuple[str, ...]  # relative paths under registry_dir

    @property
    def file_count(self) -> int:
        return len(self.lineage_files) + len(self.snapshots) + len(self.registry_schemas) + 1

    def inputs(self, extra_lineage: Sequence[Path] = ()) -> Inputs:
        """The sample as the main job's inputs (``extra_lineage``: more lineage files or folders, ingested
        in the same batch)."""
        return Inputs(
            lineage=(self.root / "lineage", *extra_lineage), lineage_lines=self.lineage.lines,
            snapshots=self.snapshots, registry_dir=self.registry_dir, events_file=self.events_file,
            events=self.sd_events,
        )

    def as_json(self) -> dict[str, object]:
        def relative(path: Path) -> str:
            return str(path.relative_to(self.root))

        return {
            "spec": asdict(self.spec),
            "lineage": {**asdict(self.lineage), "files": [relative(p) for p in self.lineage_files]},
            "snapshots": [
                {"dataset": s.dataset, "file": relative(s.path), "primary_key": list(s.primary_key),
                 "snapshot_time": s.snapshot_time.isoformat(), "system_time": s.system_time.isoformat(),
                 "rows": s.rows, "changelog_ops": {str(op): n for op, n in sorted(ops.items())}}
                for s, ops in zip(self.snapshots, self.changelog_ops, strict=True)
            ],
            "reappearing_keys": list(self.reappearing_keys),
            "registry": {"dir": relative(self.registry_dir), "schemas": list(self.registry_schemas),
                         "breaking": registry.BREAKING_VERSION},
            "sd_events": {"file": relative(self.events_file), "lines": self.sd_events, "invalid": self.sd_invalid},
        }


def sample_dir(settings: Settings) -> Path:
    """Where the ``main`` command writes the sample: ``LINEAGE_HOME/sample``."""
    return settings.lineage_home / "sample"


def write_lines(path: Path, lines: Iterable[str]) -> int:
    """Writes NDJSON (or any lines), ``\\n``-terminated; returns the number of lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(line)
            out.write("\n")
            count += 1
    return count


def write_lineage(spec: SampleSpec, folder: Path) -> tuple[tuple[Path, ...], LineageFacts]:
    pipeline = spec.pipeline_spec()
    files = []
    lines_written = 0
    totals = pipelines.Counts()
    for day, lines, counts in pipelines.pipeline_lines(pipeline, spec.malformed_lines, spec.duplicate_lines):
        date = pipelines.EPOCH + timedelta(days=day)
        path = folder / f"events-{date.strftime('%Y-%m-%d')}.ndjson"
        lines_written += write_lines(path, lines)
        files.append(path)
        totals = counts
    facts = LineageFacts(
        events=totals.events, lines=lines_written, duplicates=spec.duplicate_lines, malformed=spec.malformed_lines,
        failed_runs=totals.failed_runs, aborted_runs=totals.aborted_runs, large_facets=totals.large_facets,
        days=pipeline.days, copies=pipeline.copies,
    )
    return tuple(files), facts


def write_exports(spec: SampleSpec, folder: Path) -> tuple[tuple[SnapshotFile, ...], list[crm.Export]]:
    exports = crm.crm_exports(spec.accounts, spec.exports, spec.seed)
    files = []
    for export in exports:
        path = folder / f"{crm.DATASET}_{export.snapshot_time.strftime('%Y-%m-%dT%H%M')}.ndjson"
        write_lines(path, (json.dumps({c: row[c] for c in crm.COLUMNS}) for row in export.rows))
        files.append(SnapshotFile(crm.DATASET, path, crm.PRIMARY_KEY, export.snapshot_time, export.system_time,
                                  len(export.rows)))
    return tuple(files), exports


def generate_sample(spec: SampleSpec, out: Path) -> SampleManifest:
    """Writes the sample under ``out`` (replacing what a previous run left there) and describes it."""
    out = out.resolve()
    for part in ("lineage", "snapshots", "registry", "events"):
        shutil.rmtree(out / part, ignore_errors=True)
    lineage_files, facts = write_lineage(spec, out / "lineage")
    snapshots, exports = write_exports(spec, out / "snapshots" / crm.DATASET)
    schemas = registry.sample_registry()
    for relative, text in schemas.items():
        (out / "registry" / relative).parent.mkdir(parents=True, exist_ok=True)
        (out / "registry" / relative).write_text(text, encoding="utf-8", newline="\n")
    events_file = out / "events" / "sd_events.ndjson"
    sd_lines = write_lines(events_file, registry.sample_events(spec.sd_events, spec.seed))
    manifest = SampleManifest(
        spec=spec, root=out, lineage_files=lineage_files, snapshots=snapshots, registry_dir=out / "registry",
        events_file=events_file, lineage=facts,
        changelog_ops=tuple(dict(sorted(ops.items())) for ops in crm.expected_changelog(exports)),
        reappearing_keys=tuple(crm.reappearing_keys(exports)), sd_events=sd_lines,
        sd_invalid=registry.invalid_events(sd_lines),
        registry_schemas=tuple(sorted(schemas)),
    )
    (out / "manifest.json").write_text(json.dumps(manifest.as_json(), indent=2) + "\n", encoding="utf-8")
    return manifest
