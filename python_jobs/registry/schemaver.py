"""SchemaVer (MODEL-REVISION-ADDITION) and Iglu schema keys.

Versions order numerically (1-0-10 after 1-0-2). Within one model a registry should hold every
revision from 0 and, per revision, every addition from 0; anything else is a gap worth reporting.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_SCHEMAVER = re.compile(r"^(0|[1-9][0-9]*)-(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$")
# Iglu's characters for each part of a schema key; vendor and name become part of a table name.
KEY_PARTS = {"vendor": r"[a-zA-Z0-9_.-]+", "name": r"[a-zA-Z0-9_-]+", "format": r"[a-zA-Z0-9_-]+"}
KEY_PART_CHARACTERS = {
    "vendor": "letters, digits, '.', '-' and '_'",
    "name": "letters, digits, '-' and '_'",
    "format": "letters, digits, '-' and '_'",
}
_IGLU_URI = re.compile(
    rf"^iglu:(?P<vendor>{KEY_PARTS['vendor']})/(?P<name>{KEY_PARTS['name']})/(?P<format>{KEY_PARTS['format']})"
    r"/(?P<version>[^/]+)$"
)


class SchemaVerError(ValueError):
    """Text that is not a valid SchemaVer or Iglu URI; the message says why."""


@dataclass(frozen=True, order=True)
class SchemaVer:
    model: int
    revision: int
    addition: int

    def __str__(self) -> str:
        return f"{self.model}-{self.revision}-{self.addition}"


@dataclass(frozen=True)
class SchemaKey:
    vendor: str
    name: str
    format: str
    version: SchemaVer

    @property
    def uri(self) -> str:
        return f"iglu:{self.vendor}/{self.name}/{self.format}/{self.version}"

    @property
    def family(self) -> str:
        return f"{self.vendor}/{self.name}"


def parse_schemaver(text: str) -> SchemaVer:
    match = _SCHEMAVER.match(text)
    if match is None:
        raise SchemaVerError(
            f"{text!r} is not a SchemaVer: expected MODEL-REVISION-ADDITION, three non-negative integers "
            "without leading zeros, e.g. 1-0-2"
        )
    version = SchemaVer(*(int(part) for part in match.groups()))
    if version.model < 1:
        raise SchemaVerError(f"{text!r} is not a SchemaVer: MODEL starts at 1")
    return version


def key_part_problem(part: str, value: str) -> str | None:
    """Why ``value`` cannot be the ``part`` (vendor, name or format) of a schema key, or None."""
    if re.fullmatch(KEY_PARTS[part], value):
        return None
    return f"{part} {value!r} is not a valid Iglu {part}: use only {KEY_PART_CHARACTERS[part]}"


def parse_iglu_uri(uri: str) -> SchemaKey:
    match = _IGLU_URI.match(uri)
    if match is None:
        raise SchemaVerError(f"{uri!r} is not an Iglu URI: expected iglu:<vendor>/<name>/<format>/<M-R-A>")
    return SchemaKey(
        vendor=match["vendor"],
        name=match["name"],
        format=match["format"],
        version=parse_schemaver(match["version"]),
    )


def missing_versions(versions: Iterable[SchemaVer]) -> list[SchemaVer]:
    """Versions absent from one model's sequence: revisions from 0 up, additions from 0 up per revision."""
    present = set(versions)
    models = {v.model for v in present}
    if len(models) > 1:
        raise ValueError(f"missing_versions works on one model at a time, got models {sorted(models)}")
    if not present:
        return []
    model = next(iter(models))
    top_revision = max(v.revision for v in present)
    missing: list[SchemaVer] = []
    for revision in range(top_revision + 1):
        additions = [v.addition for v in present if v.revision == revision]
        # A later revision starts at addition 0 even when this revision's last additions are absent.
        top_addition = max(additions) if additions else 0
        for addition in range(top_addition + 1):
            candidate = SchemaVer(model, revision, addition)
            if candidate not in present:
                missing.append(candidate)
    return missing


def gap_report(family: str, versions: Iterable[SchemaVer]) -> list[str]:
    """One human-readable line per model with gaps, e.g. ``com.acme/click model 1: 1-0-1 missing (have ...)``."""
    by_model: dict[int, list[SchemaVer]] = {}
    for version in versions:
        by_model.setdefault(version.model, []).append(version)
    lines = []
    for model in sorted(by_model):
        present = sorted(by_model[model])
        missing = missing_versions(present)
        if missing:
            lines.append(
                f"{family} model {model}: {', '.join(map(str, missing))} missing "
                f"(registry has {', '.join(map(str, present))})"
            )
    return lines
