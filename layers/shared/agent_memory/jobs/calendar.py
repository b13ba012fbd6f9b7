"""The project's calendar: local days and ISO weeks as UTC windows (week 53 and DST included).

A run date is the LOCAL date in the project's zone on which a job runs (what EventBridge
Scheduler's schedule in that zone fires on, see ``ScheduleInput``):
- distill processes the local day BEFORE the run date;
- archive processes the ISO week BEFORE the one containing the run date;
- prune runs as of the run date.
Windows are half-open ``[start, end)`` in UTC, built from local midnights, so consecutive days
tile time exactly (a 23-hour or 25-hour DST day included): no message is missed or read twice.

A period is OVER once its window's end (local midnight after it, as a UTC instant) is not after
the clock (:func:`period_over`). A job run by hand for a period still in progress (today, the
current week) must not write its completion marker or its final result: the scheduled run for
that period would then skip the messages that come later.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Literal
from zoneinfo import ZoneInfo

from agent_memory.domain.models import iso_week_label


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (raises ``ZoneInfoNotFoundError`` for an unknown name)."""
    return ZoneInfo(name)


def local_midnight_utc(day: date, tz: str) -> datetime:
    """The UTC instant of local midnight starting ``day`` in zone ``tz``.

    Where midnight does not exist (a DST jump at 00:00) zoneinfo resolves it with the
    pre-transition offset; every day boundary uses this same function, so days still tile.
    """
    return datetime(day.year, day.month, day.day, tzinfo=zone(tz)).astimezone(UTC)


def local_day_window(day: date, tz: str) -> tuple[datetime, datetime]:
    """``[local midnight of day, local midnight of the next day)`` in UTC.

    Asia/Shanghai 2026-03-10 -> ``[2026-03-09T16:00Z, 2026-03-10T16:00Z)``;
    Europe/Berlin 2026-03-29 (spring forward) -> 23 hours ``[03-28T23:00Z, 03-29T22:00Z)``.
    """
    return local_midnight_utc(day, tz), local_midnight_utc(day + timedelta(days=1), tz)


def iso_week_monday(day: date) -> date:
    """The Monday of the ISO week containing ``day``."""
    return day - timedelta(days=day.weekday())


def iso_week_window(monday: date, tz: str) -> tuple[datetime, datetime]:
    """The 7 local days from ``monday`` as a UTC window (``[Mon 00:00, next Mon 00:00)`` local)."""
    return local_midnight_utc(monday, tz), local_midnight_utc(monday + timedelta(days=7), tz)


def period_over(window_end: datetime, now: datetime) -> bool:
    """Whether a period whose UTC window ends at ``window_end`` is over at ``now`` (aware)."""
    return window_end <= now


def distill_day(run_date: date) -> date:
    """The local day a distillation run on ``run_date`` processes (yesterday)."""
    return run_date - timedelta(days=1)


def archive_week(run_date: date) -> tuple[str, date]:
    """The ISO week an archiving run on ``run_date`` processes: ``(label, its Monday)``.

    2027-01-04 (a Monday of 2027-W01) -> ``("2026-W53", 2026-12-28)``: week 53 runs from
    2026-12-28 to 2027-01-03; 2026-01-05 -> ``("2026-W01", 2025-12-29)``.
    """
    monday = iso_week_monday(run_date) - timedelta(days=7)
    return iso_week_label(monday), monday


def run_date_for(job: Literal["distill", "archive", "prune"], target: date) -> date:
    """The run date that makes ``job`` process ``target`` (for backfills).

    distill: the day after ``target``; archive: the Monday after the ISO week containing
    ``target``; prune: ``target`` itself.
    """
    if job == "distill":
        return target + timedelta(days=1)
    if job == "archive":
        return iso_week_monday(target) + timedelta(days=7)
    return target


__all__ = [
    "archive_week",
    "distill_day",
    "iso_week_monday",
    "iso_week_window",
    "local_day_window",
    "local_midnight_utc",
    "period_over",
    "run_date_for",
    "zone",
]
