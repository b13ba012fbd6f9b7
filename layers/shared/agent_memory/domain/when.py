"""When a reminder fires, as date and time values: ONE local date-time, or a recurrence.

Times are naive wall-clock times of the project's zone. How a phrase becomes a :class:`When` is the
reminders' (:mod:`agent_memory.reminders.when`); how a schedule expresses it is the scheduler
adapter's (``agent_memory.adapters.scheduler``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

#: Weekday names, Monday first (``Recurrence.weekdays`` counts from 0 = Monday).
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class Recurrence:
    """A repeating local time: ``weekdays`` (0 = Monday; empty = every day) or ``day_of_month``."""

    hour: int
    minute: int
    weekdays: tuple[int, ...] = ()
    day_of_month: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "weekdays", tuple(sorted(set(self.weekdays))))  # one canonical form

    def describe(self) -> str:
        """``every Monday 09:00`` / ``every day 17:00`` / ``every month on day 1 09:00``."""
        at = f"{self.hour:02d}:{self.minute:02d}"
        if self.day_of_month is not None:
            return f"every month on day {self.day_of_month} {at}"
        if not self.weekdays:
            return f"every day {at}"
        if list(self.weekdays) == [0, 1, 2, 3, 4]:
            return f"every weekday {at}"
        return "every " + ", ".join(WEEKDAY_NAMES[d] for d in self.weekdays) + f" {at}"

    def matches(self, day: date) -> bool:
        """Whether the recurrence fires on local date ``day``."""
        if self.day_of_month is not None:
            return day.day == self.day_of_month
        return not self.weekdays or day.weekday() in self.weekdays

    def next_after(self, after: datetime) -> datetime:
        """The first firing strictly after the naive local date-time ``after`` (searches 400 days:
        a ``day_of_month`` of 31 skips shorter months).

        Raises:
            ValueError: it never fires (a ``day_of_month`` over 31).
        """
        at = time(self.hour, self.minute)
        day = after.date()
        for _ in range(400):
            candidate = datetime.combine(day, at)
            if candidate > after and self.matches(day):
                return candidate
            day += timedelta(days=1)
        raise ValueError("the recurrence never fires")


@dataclass(frozen=True)
class When:
    """A reminder's timing: ``at`` (naive local date-time) for a one-time reminder, or ``recurrence``."""

    at: datetime | None = None
    recurrence: Recurrence | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def recurring(self) -> bool:
        return self.recurrence is not None

    def describe(self) -> str:
        """``every Monday 09:00`` or ``2026-12-04 16:00 (Fri)``."""
        if self.recurrence is not None:
            return self.recurrence.describe()
        assert self.at is not None
        return self.at.strftime("%Y-%m-%d %H:%M (%a)")

    def first_fire(self, now_local: datetime) -> datetime:
        """The first local firing time (naive): ``at``, or the recurrence's next after ``now_local``."""
        if self.recurrence is not None:
            return self.recurrence.next_after(now_local)
        assert self.at is not None
        return self.at


__all__ = ["WEEKDAY_NAMES", "Recurrence", "When"]
