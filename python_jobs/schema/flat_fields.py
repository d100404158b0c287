"""Rebuild a nested field tree from the flattened field list the lineage core stores.

``dataset_fields`` keeps nested fields as extra fields named by their dot-joined path (``address``,
``address.city``). A field whose parent path is also a field becomes that parent's child; anything else
stays at the top level (so a top-level name that merely contains a dot is kept whole).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def nest_fields(flat_fields: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    by_path: dict[str, dict[str, Any]] = {}
    for field in sorted(flat_fields, key=lambda f: (f.get("ordinal_position") or 0, f["name"])):
        by_path[field["name"]] = {k: v for k, v in field.items() if v is not None}
    roots: list[dict[str, Any]] = []
    for path, node in by_path.items():
        parent_path, _, child_name = path.rpartition(".")
        parent = by_path.get(parent_path) if parent_path else None
        if parent is None:
            roots.append(node)
        else:
            node["name"] = child_name
            parent.setdefault("fields", []).append(node)
    return roots
