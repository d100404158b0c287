"""Which input files an ``ingest lineage`` run reads, and how each is framed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from python_jobs.errors import UserFacingError

# One event per line.
LINE_SUFFIXES = (".ndjson", ".jsonl")
# One event, or a JSON array of events, per file.
DOCUMENT_SUFFIXES = (".json",)


@dataclass(frozen=True, order=True)
class InputFile:
    path: str
    framing: str  # "lines" or "document"
    size: int
    modified_ns: int


def framing_of(path: Path) -> str | None:
    """``lines`` for NDJSON/JSONL, ``document`` for JSON; gzip (``.gz``) is decompressed by Spark."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    if name.endswith(LINE_SUFFIXES):
        return "lines"
    if name.endswith(DOCUMENT_SUFFIXES):
        return "document"
    return None


def discover(paths: Iterable[Path]) -> tuple[list[InputFile], list[str]]:
    """Input files under ``paths`` in a stable order, and the files of a folder that were skipped.

    A file named explicitly must have a supported suffix; inside folders, other files (README,
    YAML) are listed as skipped so the caller can report them.
    """
    found: dict[str, InputFile] = {}
    skipped: list[str] = []
    for given in paths:
        path = given.expanduser().resolve()
        if not path.exists():
            raise UserFacingError(f"input path does not exist: {given}")
        if path.is_file():
            framing = framing_of(path)
            if framing is None:
                raise UserFacingError(
                    f"unsupported input file {given}: expected .json, .ndjson or .jsonl (optionally .gz)"
                )
            found[str(path)] = _input_file(path, framing)
            continue
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            framing = framing_of(child)
            if framing is None:
                skipped.append(str(child))
            else:
                found[str(child)] = _input_file(child, framing)
    return sorted(found.values()), skipped


def _input_file(path: Path, framing: str) -> InputFile:
    stat = path.stat()
    return InputFile(str(path), framing, stat.st_size, stat.st_mtime_ns)
