"""An Iglu-style registry and self-describing events for it.

``sample_registry()`` gives the sample's schema files (``schemas/<vendor>/<name>/jsonschema/<M-R-A>``):
``com.example/checkout`` and ``com.example/signup`` gain properties version by version (ADDITION);
``com.example/page_view`` 1-1-0 retypes ``referrer`` from string to integer, the one breaking version.
``sample_events()`` sends events of the versions in time order (each version takes over part-way through),
with a few invalid ones of every kind the validator reports, and a few repeats.

``checkout_events()`` is the registry benchmark's stream over the bundled ``samples/registry``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

VENDOR = "com.example"
SELF_DESC = "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#"

_NULLABLE_STRING = {"type": ["string", "null"]}
_CHECKOUT_BASE: dict[str, Any] = {
    "orderId": {"type": "string", "maxLength": 36, "description": "Order identifier"},
    "total": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1000000},
    "currency": {"enum": ["EUR", "USD", "GBP"], "description": "ISO 4217 code"},
    "itemCount": {"type": "integer", "minimum": 0, "maximum": 10000},
    "coupon": {"type": ["string", "null"], "maxLength": 64},
    "customer": {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "email": {"type": ["string", "null"], "format": "email"},
            "isMember": {"type": "boolean"},
        },
        "required": ["id", "isMember"],
        "additionalProperties": False,
    },
}
_CHECKOUT_101 = {
    "channel": {"type": "string", "maxLength": 32, "description": "web, app or store"},
    "shippingMethod": {"type": ["string", "null"], "enum": ["standard", "express", None]},
    "placedAt": {"type": "string", "format": "date-time"},
    "deliveryDate": {"type": ["string", "null"], "format": "date"},
    "giftWrap": {"type": "boolean"},
    "discountRate": {"type": "number", "minimum": 0, "maximum": 1},
    "tags": {"type": "array", "items": {"type": "string"}},
    "paymentDetails": {"type": "object", "description": "Free-form provider payload"},
}
_CHECKOUT_102 = {"loyaltyPoints": {"type": "integer", "minimum": 0}, "storeHTTPReferrer": _NULLABLE_STRING}
_PAGE_VIEW_100 = {
    "url": {"type": "string"},
    "referrer": _NULLABLE_STRING,
    "durationMs": {"type": "integer", "minimum": 0, "maximum": 3600000},
}
_SIGNUP_100 = {"email": {"type": "string"}, "plan": {"enum": ["free", "pro"]}}


@dataclass(frozen=True)
class SchemaVersion:
    name: str
    version: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    takes_over_at: float  # share of the event stream after which new events use this version

    @property
    def uri(self) -> str:
        return f"iglu:{VENDOR}/{self.name}/jsonschema/{self.version}"

    @property
    def path(self) -> str:
        return f"schemas/{VENDOR}/{self.name}/jsonschema/{self.version}"

    def text(self) -> str:
        schema = {
            "$schema": SELF_DESC,
            "description": self.description,
            "self": {"vendor": VENDOR, "name": self.name, "format": "jsonschema", "version": self.version},
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }
        return json.dumps(schema, indent=2) + "\n"


CHECKOUT_REQUIRED = ("orderId", "total", "currency", "itemCount", "customer")
SAMPLE_VERSIONS = (
    SchemaVersion("checkout", "1-0-0", "A completed checkout", _CHECKOUT_BASE, CHECKOUT_REQUIRED, 0.0),
    SchemaVersion("checkout", "1-0-1", "A completed checkout; channel and delivery details",
                  {**_CHECKOUT_BASE, **_CHECKOUT_101}, (*CHECKOUT_REQUIRED, "channel"), 0.3),
    SchemaVersion("checkout", "1-0-2", "A completed checkout; loyalty points",
                  {**_CHECKOUT_BASE, **_CHECKOUT_101, **_CHECKOUT_102}, (*CHECKOUT_REQUIRED, "channel"), 0.65),
    SchemaVersion("signup", "1-0-0", "A sign-up", _SIGNUP_100, ("email", "plan"), 0.0),
    SchemaVersion("signup", "1-0-1", "A sign-up; where it came from",
                  {**_SIGNUP_100, "source": _NULLABLE_STRING}, ("email", "plan"), 0.5),
    SchemaVersion("page_view", "1-0-0", "A page view", _PAGE_VIEW_100, ("url",), 0.0),
    SchemaVersion("page_view", "1-1-0", "A page view; referrer is a referrer id from 1-1-0",
                  {**_PAGE_VIEW_100, "referrer": {"type": ["integer", "null"]}, "title": _NULLABLE_STRING},
                  ("url",), 0.7),
)
BREAKING_VERSION = "com.example/page_view 1-1-0"
FAMILY_WEIGHTS = (("checkout", 5), ("page_view", 8), ("signup", 2))
# Every kind of bad event the validator names, in rotation.
INVALID_KINDS = (
    "unknown_property", "wrong_type", "missing_required", "bad_date_time", "unknown_schema", "invalid_json",
    "not_self_describing",
)


def sample_registry() -> dict[str, str]:
    """Relative path -> schema text."""
    return {version.path: version.text() for version in SAMPLE_VERSIONS}


def current_version(name: str, position: float) -> SchemaVersion:
    versions = [v for v in SAMPLE_VERSIONS if v.name == name and v.takes_over_at <= position]
    return versions[-1]


def _checkout_data(rng: random.Random, index: int, version: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "orderId": f"o-{index:07d}",
        "total": round(rng.uniform(1, 2000), 2),
        "currency": rng.choice(("EUR", "USD", "GBP")),
        "itemCount": rng.randint(1, 12),
        "coupon": rng.choice((None, None, "SPRING10", "WELCOME")),
        "customer": {"id": f"c-{rng.randint(1, 900):04d}", "email": None, "isMember": rng.random() < 0.4},
    }
    if version >= "1-0-1":
        data.update(
            channel=rng.choice(("web", "app", "store")),
            placedAt=f"2026-01-{1 + index % 28:02d}T{index % 24:02d}:{index % 60:02d}:00Z",
            giftWrap=rng.random() < 0.1,
            tags=rng.sample(("sale", "gift", "bulk", "first"), rng.randint(0, 2)),
        )
    if version >= "1-0-2":
        data["loyaltyPoints"] = rng.randint(0, 5000)
    return data


def _data(rng: random.Random, name: str, index: int, version: str) -> dict[str, Any]:
    if name == "checkout":
        return _checkout_data(rng, index, version)
    if name == "signup":
        data: dict[str, Any] = {"email": f"user{index}@example.com", "plan": rng.choice(("free", "free", "pro"))}
        if version >= "1-0-1":
            data["source"] = rng.choice(("ad", "friend", None))
        return data
    referrer: Any = rng.choice((None, "https://search.example/", "https://news.example/"))
    if version >= "1-1-0":
        referrer = rng.choice((None, 17, 42))
    data = {"url": f"https://shop.example/p/{rng.randint(1, 400)}", "referrer": referrer,
            "durationMs": rng.randint(200, 90_000)}
    if version >= "1-1-0":
        data["title"] = None
    return data


def _invalid_line(kind: str, rng: random.Random, index: int, position: float) -> str:
    """A bad event of ``kind``, on the checkout version current at ``position``."""
    version = current_version("checkout", position)
    base = {"schema": version.uri, "data": _checkout_data(rng, index, version.version)}
    if kind == "unknown_property":
        base["data"]["voucher"] = "FREE"
    elif kind == "wrong_type":
        base["data"]["total"] = "12.50"
    elif kind == "missing_required":
        del base["data"]["customer"]
    elif kind == "bad_date_time":
        base["data"]["placedAt"] = "yesterday"  # only 1-0-1 and later know placedAt: unknown before
    elif kind == "unknown_schema":
        base["schema"] = f"iglu:{VENDOR}/refund/jsonschema/1-0-0"
    elif kind == "invalid_json":
        return json.dumps(base)[:40]
    elif kind == "not_self_describing":
        return json.dumps(base["data"])
    return json.dumps(base)


INVALID_EVERY, INVALID_AT = 25, 12
REPEAT_EVERY, REPEAT_AT = 100, 57


def invalid_events(count: int) -> int:
    """How many of ``sample_events(count, ...)`` the validator must reject."""
    return sum(1 for index in range(count) if index % INVALID_EVERY == INVALID_AT)


def sample_events(count: int, seed: int) -> Iterator[str]:
    """``count`` NDJSON lines; one in 25 invalid, about one in 100 a repeat of an earlier valid line."""
    rng = random.Random(f"{seed}:sd-events")
    names = [name for name, weight in FAMILY_WEIGHTS for _ in range(weight)]
    recent: list[str] = []
    invalid = 0
    for index in range(count):
        if index % INVALID_EVERY == INVALID_AT:
            line = _invalid_line(INVALID_KINDS[invalid % len(INVALID_KINDS)], rng, index, index / max(count, 1))
            invalid += 1
        elif index % REPEAT_EVERY == REPEAT_AT and recent:
            line = recent[rng.randrange(len(recent))]
        else:
            name = names[rng.randrange(len(names))]
            version = current_version(name, index / max(count, 1))
            line = json.dumps({"schema": version.uri, "data": _data(rng, name, index, version.version)})
            recent = [*recent[-19:], line]
        yield line


def checkout_events(count: int, seed: int, offset: int = 0) -> list[str]:
    """The registry benchmark's checkout events over versions 1-0-0..1-0-2 of the bundled registry; every
    tenth one is invalid in a rotating way."""
    rng = random.Random(seed)
    lines = []
    for index in range(offset, offset + count):
        version = ("1-0-0", "1-0-1", "1-0-2")[index % 3]
        data: dict[str, Any] = {
            "orderId": f"o-{index}", "total": round(rng.uniform(0, 5000), 2), "currency": rng.choice(["EUR", "USD"]),
            "itemCount": rng.randint(1, 20), "customer": {"id": f"c-{rng.randint(1, 500)}", "isMember": True},
        }
        if version != "1-0-0":
            data.update(channel="web", placedAt="2026-03-01T10:00:00Z", tags=["x"], giftWrap=False)
        if version == "1-0-2":
            data.update(loyaltyPoints=rng.randint(0, 10**6))
        if index % 10 == 9:
            data[("itemCount", "voucher", "customer")[index % 3]] = "bad"
        lines.append(json.dumps({"schema": f"iglu:com.example/checkout/jsonschema/{version}", "data": data}))
    return lines
