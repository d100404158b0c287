"""The Python twin of macros/lineage/keys.sql, for jobs, tests and benchmarks."""

from __future__ import annotations

import uuid


def name_uuid(text: str) -> str:
    """Java's ``UUID.nameUUIDFromBytes(text.getBytes(UTF_8))``: an RFC 4122 version-3 UUID."""
    return str(uuid.UUID(bytes=_md5_v3(text.encode("utf-8"))))


def _md5_v3(data: bytes) -> bytes:
    import hashlib

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
