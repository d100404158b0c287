"""``warehouse retain``'s cut-off (``python_jobs.warehouse.retention``): no Spark."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

import pytest

from python_jobs.commands.warehouse import retention_cut_off
from python_jobs.errors import UserFacingError
from python_jobs.warehouse.retention import (
    RETENTION_DAYS_ENV,
    RetentionSchedule,
    configured_retention_days,
    cut_off,
    parse_age,
)


def test_ages():
    assert parse_age("90d") == timedelta(days=90)
    assert parse_age(" 12h ") == timedelta(hours=12)
    assert parse_age("30m") == timedelta(minutes=30)
    for bad in ("90", "d", "-1d", "1w", "1.5d"):
        with pytest.raises(ValueError):
            parse_age(bad)


def test_the_cut_off_is_before_now():
    now = datetime(2026, 6, 1, tzinfo=UTC)
    assert cut_off(now, timedelta(days=90)) == datetime(2026, 3, 3, tzinfo=UTC)


def test_the_command_takes_an_age_or_a_time_in_utc():
    now = datetime(2026, 6, 1, tzinfo=UTC)
    assert retention_cut_off(argparse.Namespace(older_than="1d", before=None), now) == datetime(2026, 5, 31, tzinfo=UTC)
    at = retention_cut_off(argparse.Namespace(older_than=None, before="2026-01-07T00:00:00"), now)
    assert at == datetime(2026, 1, 7, tzinfo=UTC)
    assert retention_cut_off(argparse.Namespace(older_than=None, before="2026-01-07T01:00:00+01:00"), now) == at
    with pytest.raises(UserFacingError):
        retention_cut_off(argparse.Namespace(older_than="soon", before=None), now)


def test_serve_applies_retention_at_most_once_a_day(monkeypatch):
    schedule = RetentionSchedule(90)
    assert schedule.due(1000.0)
    schedule.last_run = 1000.0
    assert not schedule.due(1000.0 + 23 * 3600)
    assert schedule.due(1000.0 + 24 * 3600)
    monkeypatch.delenv(RETENTION_DAYS_ENV, raising=False)
    assert configured_retention_days(None) is None
    assert configured_retention_days(30) == 30 and configured_retention_days(0) is None
    monkeypatch.setenv(RETENTION_DAYS_ENV, "90")
    assert configured_retention_days(None) == 90
