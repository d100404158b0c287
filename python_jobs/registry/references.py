"""``$ref`` in registry schemas: resolved inside the registry only, never fetched.

A schema may ``$ref`` another registered schema by its Iglu URI
(``iglu:vendor/name/jsonschema/M-R-A``, optionally followed by a ``#/...`` pointer) and its own
parts by a local ``#/...`` pointer. Nothing else resolves: the retrieve function of the
:func:`schema_registry` refuses every other URI, so validation never opens a socket or a file
(it runs inside Spark tasks, where a hanging fetch would stall the batch). ``ingest registry``
refuses a schema whose ``$ref``s do not resolve (:func:`reference_problems`), and ``ingest
events`` validates with the same registry.

Column derivation (``columns.py``, ``types.py``) does not expand ``$ref``: a property holding a
``$ref`` is one nullable column of JSON text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, PointerToNowhere, Unresolvable
from referencing.jsonschema import DRAFT4

RESOLVABLE = "only iglu: URIs of registered schemas and local #/ pointers resolve"

# Keywords of draft-04 whose values are schemas (mapping of schemas, list of schemas, or one schema).
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")
_SCHEMA_LISTS = ("items", "allOf", "anyOf", "oneOf")
_SCHEMA_VALUES = ("items", "additionalProperties", "additionalItems", "not")


def _refuse(uri: str) -> Resource[Any]:
    """The registry's retrieve function: nothing outside the registry is ever fetched."""
    raise NoSuchResource(ref=uri)


def schema_registry(schemas: Mapping[str, dict[str, Any]]) -> Registry[Any]:
    """The registered schemas, each under its Iglu URI; every other URI is refused, not fetched."""
    registry: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]
    return registry.with_resources((uri, DRAFT4.create_resource(schemas[uri])) for uri in sorted(schemas))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _subschemas(node: dict[str, Any], pointer: str) -> list[tuple[str, Any]]:
    children: list[tuple[str, Any]] = []
    for keyword in _SCHEMA_MAPS:
        value = node.get(keyword)
        if isinstance(value, dict):
            children += [(f"{pointer}/{keyword}/{_escape(key)}", value[key]) for key in sorted(value)]
    for keyword in _SCHEMA_LISTS:
        value = node.get(keyword)
        if isinstance(value, list):
            children += [(f"{pointer}/{keyword}/{index}", item) for index, item in enumerate(value)]
    for keyword in _SCHEMA_VALUES:
        value = node.get(keyword)
        if isinstance(value, dict):
            children.append((f"{pointer}/{keyword}", value))
    return children


def reference_problems(schema: dict[str, Any], registry: Registry[Any]) -> list[str]:
    """Why the ``$ref``s of ``schema`` do not resolve within ``registry``, one line each; [] when they all do.

    Walks every subschema (as draft-04 validation reaches it), and follows each resolved ``$ref``
    into its target, so a ``$ref`` reached only through another one is checked too.
    """
    problems: list[str] = []
    seen: set[int] = set()
    root = registry.resolver_with_root(DRAFT4.create_resource(schema))

    def walk(node: Any, pointer: str, via: str, resolver: Any) -> None:
        if not isinstance(node, dict) or id(node) in seen:
            return
        seen.add(id(node))
        resolver = resolver.in_subresource(DRAFT4.create_resource(node))
        where = (pointer or "/") + via
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = _resolve(ref, where, resolver, problems)
            if target is not None:
                base = ref if "#" in ref else f"{ref}#"
                walk(target.contents, base.rstrip("/"), f" (reached through $ref at {where})", target.resolver)
        for child_pointer, child in _subschemas(node, pointer):
            walk(child, child_pointer, via, resolver)

    walk(schema, "", "", root)
    return problems


def _resolve(ref: str, where: str, resolver: Any, problems: list[str]) -> Any:
    """The resolved target of ``ref``, or None after appending why it does not resolve."""
    chain: list[int] = []
    current_resolver, current_ref = resolver, ref
    while True:
        at = where if current_ref == ref else f"{where} (through $ref {ref!r})"
        try:
            resolved = current_resolver.lookup(current_ref)
        except PointerToNowhere:
            problems.append(f"$ref {current_ref!r} at {at} points at nothing: no such location in the schema")
            return None
        except Unresolvable:
            what = "names a schema that is not in the registry" if current_ref.startswith("iglu:") else (
                "is outside the registry")
            problems.append(f"$ref {current_ref!r} at {at} {what}: {RESOLVABLE}")
            return None
        target = resolved.contents
        if not isinstance(target, dict):
            problems.append(f"$ref {current_ref!r} at {at} points at a JSON {type(target).__name__}, not a schema")
            return None
        next_ref = target.get("$ref")
        if not isinstance(next_ref, str):
            return resolved
        # A target that is only a $ref (draft-04 ignores its siblings): follow the chain, which must
        # end in a schema; a chain that comes back is endless recursion at validation.
        if id(target) in chain:
            problems.append(f"$ref {ref!r} at {where} is a $ref cycle: it never reaches a schema")
            return None
        chain.append(id(target))
        current_resolver = resolved.resolver.in_subresource(DRAFT4.create_resource(target))
        current_ref = next_ref
