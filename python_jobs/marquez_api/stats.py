"""Marquez's ``GET /api/v1/stats/...`` answers, computed from moments the snapshot holds. Pure: no Spark.

``period=DAY`` gives the last 24 hours, one interval per hour (UTC hours, the current one last);
``period=WEEK`` the last 7 days, one interval per calendar day in the ``timezone`` asked for (today last).
``lineage-events`` counts the run events of each type per interval; ``jobs``, ``datasets`` and
``sources`` count the entities created up to the end of each interval (a running total, as Marquez's).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

PERIODS = ("DAY", "WEEK")
# Marquez's LineageMetric fields and the OpenLineage event types they count.
EVENT_COUNTS = {"fail": "FAIL", "start": "START", "complete": "COMPLETE", "abort": "ABORT"}


class StatsError(ValueError):
    """A period or time zone Marquez answers 400 to."""


@dataclass(frozen=True)
class Interval:
    start: datetime
    end: datetime


def zone(timezone: str | None) -> ZoneInfo:
    """The time zone of a WEEK's days (UTC when none is given)."""
    if not timezone:
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise StatsError(f"Unknown timezone '{timezone}'") from error


def intervals(period: str | None, timezone: str | None, now: datetime) -> list[Interval]:
    """The 24 hourly or 7 daily intervals ending with the one holding ``now``, oldest first."""
    kind = (period or "").upper()
    if kind not in PERIODS:
        raise StatsError("Invalid period")
    if kind == "DAY":
        hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        return [Interval(hour - timedelta(hours=n), hour - timedelta(hours=n - 1)) for n in range(23, -1, -1)]
    tz = zone(timezone)
    today = now.astimezone(tz).date()
    days = [today - timedelta(days=n) for n in range(6, -1, -1)]
    starts = [datetime(d.year, d.month, d.day, tzinfo=tz) for d in [*days, today + timedelta(days=1)]]
    return [Interval(starts[i].astimezone(UTC), starts[i + 1].astimezone(UTC)) for i in range(len(days))]


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def event_counts(events: Iterable[tuple[datetime | None, str | None]], spans: list[Interval]) -> list[dict]:
    """Marquez's LineageMetric list: per interval, the FAIL, START, COMPLETE and ABORT events in it."""
    rows = [{"startInterval": _text(s.start), "endInterval": _text(s.end), **dict.fromkeys(EVENT_COUNTS, 0)}
            for s in spans]
    starts = [s.start for s in spans]
    by_type = {event_type: field for field, event_type in EVENT_COUNTS.items()}
    for moment, event_type in events:
        field = by_type.get((event_type or "").upper())
        if moment is None or field is None:
            continue
        position = bisect_left(starts, _aware(moment) + timedelta(microseconds=1)) - 1
        if position >= 0 and _aware(moment) < spans[position].end:
            rows[position][field] += 1
    return rows


def running_counts(created: Iterable[datetime | None], spans: list[Interval]) -> list[dict]:
    """Marquez's IntervalMetric list: per interval, how many entities were created before its end."""
    moments = sorted(_aware(m) for m in created if m is not None)
    return [{"startInterval": _text(s.start), "endInterval": _text(s.end), "count": bisect_left(moments, s.end)}
            for s in spans]
