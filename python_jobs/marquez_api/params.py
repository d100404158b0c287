"""The read API's errors and the checks of its common query parameters (paging, timestamps)."""

from __future__ import annotations

from datetime import UTC, datetime

DEFAULT_LIMIT = 100


class NotFound(Exception):
    pass


class BadRequest(Exception):
    pass


def paging(limit: int | None, offset: int | None, default_limit: int = DEFAULT_LIMIT) -> tuple[int, int]:
    limit = default_limit if limit is None else limit
    offset = 0 if offset is None else offset
    if limit < 0:
        raise BadRequest("limit must be greater than or equal to 0")
    if offset < 0:
        raise BadRequest("offset must be greater than or equal to 0")
    return limit, offset


def moment(text: str) -> datetime:
    """An ISO-8601 query parameter (``before``, ``after``, ``asOf``) as an aware UTC datetime."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise BadRequest(f"'{text}' is not an ISO-8601 timestamp") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
