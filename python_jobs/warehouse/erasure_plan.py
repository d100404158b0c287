"""What ``warehouse erase`` removes from one event: pure functions, no Spark.

An erasure names a namespace, a dataset or a job. Every event is judged on its own:

- **dropped** when it belongs to the erased entity: a RunEvent or JobEvent of an erased job (a job of an
  erased namespace too), a DatasetEvent of an erased dataset. Its run, facets and the versions it wrote are
  the entity's own history, so nothing of it may stay;
- **rewritten** when it only mentions the entity: a run of another job that read or wrote an erased dataset,
  whose parent is an erased job's run, or whose column lineage names an erased dataset's fields. The rewrite
  removes exactly those references (the input or output entry, the ``parent`` facet, the ``inputFields``
  entry, a ``symlinks`` identifier, ...) and keeps the rest of the event, so the other entities' history is
  unchanged. Dropping such an event would erase other owners' data along with the subject's;
- **kept** as it is otherwise.

A reference is any JSON object with a string ``namespace`` (and, for a dataset or job, a matching ``name``):
under a key ``job`` it is a job, anywhere else a dataset. An object that holds an erased job under ``job``
(the ``parent`` facet, its ``root``) goes whole: its run id is the erased job's too. Free text that happens
to hold the name (SQL, descriptions) is not a reference and is not rewritten.

A rejected record (quarantine) that parses as JSON is judged the same way. One that does not parse cannot
be taken apart, so it is dropped when its text holds the erased name at all, and kept otherwise.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal["namespace", "dataset", "job"]
Action = Literal["keep", "rewrite", "drop"]
KINDS: tuple[Kind, ...] = ("namespace", "dataset", "job")


@dataclass(frozen=True)
class ErasureTarget:
    kind: Kind
    namespace: str
    name: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}")
        if (self.kind == "namespace") != (self.name is None):
            raise ValueError("a namespace erasure takes no name; a dataset or job erasure needs one")

    @property
    def key_text(self) -> str:
        """The entity's key as the models build it (``job:<ns>:<name>``); only ever stored hashed."""
        return f"namespace:{self.namespace}" if self.name is None else f"{self.kind}:{self.namespace}:{self.name}"

    @property
    def key_hash(self) -> str:
        """What the audit table records instead of the name (sha256 of the key text)."""
        return hashlib.sha256(self.key_text.encode("utf-8")).hexdigest()

    @property
    def telltale(self) -> str:
        """The string whose presence anywhere marks a trace: the name, or the namespace for a namespace."""
        return self.namespace if self.name is None else self.name

    def is_dataset(self, ref: object) -> bool:
        return self.kind != "job" and _is_ref(ref, self)

    def is_job(self, ref: object) -> bool:
        return self.kind != "dataset" and _is_ref(ref, self)


def _is_ref(ref: object, target: ErasureTarget) -> bool:
    if not isinstance(ref, dict) or ref.get("namespace") != target.namespace:
        return False
    return target.name is None or ref.get("name") == target.name


def split_qualified(value: str, known: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """``NS/NAME`` as the CLI takes it: namespaces and names both hold ``/``, so the split is the one that
    names a known entity (``known``: its (namespace, name) pairs). Raises ValueError when none or several
    do (then ``--namespace`` settles it)."""
    matches = sorted({(ns, name) for ns, name in known if f"{ns}/{name}" == value})
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ValueError("no stored entity is named that (NS/NAME)")
    raise ValueError(f"{len(matches)} stored entities match that NS/NAME: give the namespace with --namespace")


@dataclass(frozen=True)
class EventScrub:
    action: Action
    event: dict | None  # the rewritten event; None when dropped
    why: str = ""


def _event_kind(event: dict) -> str:
    if "run" in event:
        return "RunEvent"
    if "dataset" in event:
        return "DatasetEvent"
    return "JobEvent" if "job" in event else "unknown"


def _strip(value: object, target: ErasureTarget, key: str | None) -> tuple[object, bool]:
    """``value`` without the target's references, and whether anything was removed."""
    if isinstance(value, dict):
        changed = False
        kept: dict = {}
        for child_key, child in value.items():
            if _removes(child, target, child_key):
                changed = True
                continue
            stripped, child_changed = _strip(child, target, child_key)
            kept[child_key] = stripped
            changed = changed or child_changed
        return kept, changed
    if isinstance(value, list):
        changed = False
        items: list = []
        for child in value:
            if _removes(child, target, key):
                changed = True
                continue
            stripped, child_changed = _strip(child, target, key)
            items.append(stripped)
            changed = changed or child_changed
        return items, changed
    return value, False


def _removes(value: object, target: ErasureTarget, key: str | None) -> bool:
    if not isinstance(value, dict):
        return False
    if key == "job":
        return target.is_job(value)
    if target.is_job(value.get("job")):  # a parent (or root) facet naming an erased job's run
        return True
    return target.is_dataset(value)


def scrub_event(event: dict, target: ErasureTarget) -> EventScrub:
    kind = _event_kind(event)
    if kind in ("RunEvent", "JobEvent") and target.is_job(event.get("job")):
        return EventScrub("drop", None, f"a {kind} of the erased job")
    if kind == "DatasetEvent" and target.is_dataset(event.get("dataset")):
        return EventScrub("drop", None, "a DatasetEvent of the erased dataset")
    stripped, changed = _strip(event, target, None)
    if not changed:
        return EventScrub("keep", event)
    assert isinstance(stripped, dict)
    return EventScrub("rewrite", stripped, "references to the erased entity removed")


def event_text(event: dict) -> str:
    """How a rewritten event is stored: compact JSON, key order kept, non-ASCII as is."""
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def spellings(text: str) -> list[str]:
    """The ways a string can appear inside JSON text: as is, and escaped as ``json.dumps`` (ASCII) and
    Jackson (``/`` as ``\\/``) write it."""
    escaped = json.dumps(text)[1:-1]
    return sorted({text, escaped, json.dumps(text, ensure_ascii=False)[1:-1], escaped.replace("/", "\\/")})


def mentions(text: str, target: ErasureTarget) -> bool:
    return any(spelling in text for spelling in spellings(target.telltale))


def scrub_text(text: str, target: ErasureTarget) -> tuple[Action, str | None]:
    """A stored record's text after the erasure: ``keep`` (unchanged), ``rewrite`` (the new text) or
    ``drop``. Text that is not a JSON object is dropped when it mentions the target at all."""
    if not mentions(text, target):
        return "keep", text
    try:
        event = json.loads(text)
    except ValueError:
        event = None
    if not isinstance(event, dict):
        return "drop", None
    scrub = scrub_event(event, target)
    if scrub.action == "rewrite" and scrub.event is not None:
        return "rewrite", event_text(scrub.event)
    return scrub.action, (text if scrub.action == "keep" else None)


@dataclass(frozen=True)
class ErasureCounts:
    """Per table: rows before, removed, rewritten. The audit row stores them as JSON."""

    tables: dict[str, tuple[int, int, int]]

    def as_json(self) -> str:
        return json.dumps({table: {"before": before, "removed": removed, "rewritten": rewritten}
                           for table, (before, removed, rewritten) in sorted(self.tables.items())},
                          sort_keys=True)


def format_counts(rows: Sequence[tuple[str, int, int, int, int]], dry_run: bool) -> str:
    """The table the commands print: table, rows before, removed, rewritten (or kept), bytes freed."""
    header = ("table", "rows before", "removed", "rewritten/kept", "bytes freed")
    lines = [header, *[(t, str(b), str(r), str(k), str(f)) for t, b, r, k, f in rows]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = "\n".join("  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                               for i, cell in enumerate(line)) for line in lines)
    return text + ("\n(dry run: nothing changed)" if dry_run else "")
