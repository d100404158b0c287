"""The Python twin of macros/lineage/keys.sql, for jobs, tests and benchmarks."""

from __future__ import annotations

import hashlib
import uuid


def name_uuid(text: str) -> str:
    """Java's ``UUID.nameUUIDFromBytes(text.getBytes(UTF_8))``: an RFC 4122 version-3 UUID."""
    return str(uuid.UUID(bytes=_md5_v3(text.encode("utf-8"))))


def _md5_v3(data: bytes) -> bytes:
    digest = bytearray(hashlib.md5(data).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return bytes(digest)


def dataset_uuid(namespace: str, name: str) -> str:
    return name_uuid(f"dataset:{namespace}:{name}")


def job_uuid(namespace: str, name: str) -> str:
    return name_uuid(f"job:{namespace}:{name}")


def namespace_uuid(namespace: str) -> str:
    return name_uuid(f"namespace:{namespace}")


def dataset_version_uuid(namespace: str, name: str, run_id: str) -> str:
    return name_uuid(f"dataset_version:{namespace}:{name}:{run_id}")


def name_uuid_sql(expr: str) -> str:
    """Spark SQL for ``name_uuid`` of the string expression ``expr``: the text of the dbt macro
    ``default__name_uuid`` (macros/lineage/keys.sql), for jobs that key rows inside Spark."""
    return (
        f"element_at(transform(array(md5({expr})), h -> concat_ws('-', substr(h, 1, 8), substr(h, 9, 4), "
        "concat('3', substr(h, 14, 3)), "
        "concat(lower(hex((cast(conv(substr(h, 17, 1), 16, 10) as int) & 3) | 8)), substr(h, 18, 3)), "
        "substr(h, 21, 12))), 1)"
    )


def entity_key_sql(kind_expr: str, namespace_expr: str, name_expr: str) -> str:
    """Spark SQL for the key of a job or dataset (``kind_expr`` gives ``'job'`` or ``'dataset'``): what
    ``job_uuid`` and ``dataset_uuid`` compute, ``name_uuid('<kind>:<namespace>:<name>')``."""
    return name_uuid_sql(f"concat({kind_expr}, ':', {namespace_expr}, ':', {name_expr})")
