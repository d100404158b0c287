"""What changed between two Arrow schemas of one dataset.

Fields are compared by path (``parent.child``; list elements and map entries are looked through), so a
change deep inside a struct is reported at its path. A change is *compatible* when readers of the old
schema keep working: nothing removed, no type changed, only nullable fields added (descriptions may change).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from python_jobs.schema.arrow_schema import DESCRIPTION_KEY


@dataclass(frozen=True)
class SchemaChange:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    type_changed: list[str] = field(default_factory=list)
    description_changed: list[str] = field(default_factory=list)
    added_required: list[str] = field(default_factory=list)

    @property
    def is_compatible(self) -> bool:
        return not (self.removed or self.type_changed or self.added_required)

    def summary(self) -> str:
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("+", self.added),
                ("-", self.removed),
                ("~type", self.type_changed),
                ("~doc", self.description_changed),
            )
            if names
        ]
        return "; ".join(parts) if parts else "no change"


def _leaf_type(arrow_type: pa.DataType) -> str:
    # Containers are compared through their children; only their kind counts at this level.
    if pa.types.is_struct(arrow_type):
        return "struct"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return "list"
    if pa.types.is_map(arrow_type):
        return "map"
    return str(arrow_type)


def _children(arrow_type: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(arrow_type):
        return [arrow_type.field(i) for i in range(arrow_type.num_fields)]
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _children(arrow_type.value_type)
    if pa.types.is_map(arrow_type):
        return [pa.field("key", arrow_type.key_type, nullable=False), pa.field("value", arrow_type.item_type)]
    return []


def flatten(schema_fields: list[pa.Field], prefix: str = "") -> dict[str, pa.Field]:
    flat: dict[str, pa.Field] = {}
    for arrow_field in schema_fields:
        path = f"{prefix}{arrow_field.name}"
        flat[path] = arrow_field
        flat.update(flatten(_children(arrow_field.type), prefix=f"{path}."))
    return flat


def _description(arrow_field: pa.Field) -> bytes | None:
    return (arrow_field.metadata or {}).get(DESCRIPTION_KEY.encode())


def classify(previous: pa.Schema | None, current: pa.Schema) -> SchemaChange:
    new = flatten(list(current))
    if previous is None:
        return SchemaChange()
    old = flatten(list(previous))
    added = sorted(path for path in new if path not in old)
    removed = sorted(path for path in old if path not in new)
    common = sorted(path for path in new if path in old)
    return SchemaChange(
        added=added,
        removed=removed,
        type_changed=[p for p in common if _leaf_type(old[p].type) != _leaf_type(new[p].type)],
        description_changed=[p for p in common if _description(old[p]) != _description(new[p])],
        added_required=[p for p in added if not new[p].nullable],
    )
