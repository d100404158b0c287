"""API keys for every route of ``serve``: the collector's POST, the read API, the page and health.

``LINEAGE_API_KEY`` set: every request needs it, as ``Authorization: Bearer <key>`` (what the
OpenLineage clients and ``marquez-python``'s ``api_key`` send) or as the password of HTTP Basic
auth (any user name), which a browser asks for when a page answers 401 with a Basic challenge, so
the lineage page and a web UI on the same origin work without a proxy. ``LINEAGE_READ_API_KEY``
set as well: reads (GET and HEAD) take either key, and posting events takes only the first.
Neither set: no key is asked for, as in Marquez, which has none.

The collector's own POST path checks the key itself (it counts refused requests as
``unauthorized``); this middleware guards everything else.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

API_KEY_ENV = "LINEAGE_API_KEY"
READ_API_KEY_ENV = "LINEAGE_READ_API_KEY"
READ_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class ApiKeys:
    write: str | None = None
    read: str | None = None

    @staticmethod
    def from_env() -> ApiKeys:
        return ApiKeys(os.environ.get(API_KEY_ENV) or None, os.environ.get(READ_API_KEY_ENV) or None)

    @property
    def required(self) -> bool:
        return bool(self.write or self.read)

    def accepted_for(self, method: str) -> tuple[str, ...]:
        keys = [self.write] if self.write else []
        if self.read and method.upper() in READ_METHODS:
            keys.append(self.read)
        return tuple(keys)


def presented_key(authorization: bytes) -> bytes | None:
    """The key of a Bearer token or of Basic auth's password; None for anything else."""
    scheme, _, value = authorization.strip().partition(b" ")
    scheme, value = scheme.lower(), value.strip()
    if scheme == b"bearer":
        return value
    if scheme == b"basic":
        try:
            decoded = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
        return decoded.partition(b":")[2]
    return None


def key_matches(presented: bytes | None, accepted: Iterable[str]) -> bool:
    if presented is None:
        return False
    # Every accepted key is compared, in constant time each, so timing does not say which matched.
    matched = False
    for key in accepted:
        matched |= hmac.compare_digest(presented, key.encode())
    return matched


class ApiKeyMiddleware:
    """Answers 401 (Bearer and Basic challenges) to a request without an accepted key.
    ``exempt`` holds (method, path) pairs that check keys themselves."""

    def __init__(self, app: ASGIApp, keys: ApiKeys, exempt: Iterable[tuple[str, str]] = ()) -> None:
        self.app = app
        self.keys = keys
        self.exempt = frozenset(exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.keys.required or (scope["method"], scope["path"]) in self.exempt:
            await self.app(scope, receive, send)
            return
        authorization = dict(scope["headers"]).get(b"authorization", b"")
        if key_matches(presented_key(authorization), self.keys.accepted_for(scope["method"])):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"code": 401, "message": "missing or wrong API key (Authorization: Bearer <key>)"}).encode()
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
                (b"www-authenticate", b'Basic realm="lineage warehouse", charset="UTF-8"'),
            ],
        })
        await send({"type": "http.response.body", "body": body})
