"""What a history question loads from the history book (docs/architecture.md, "History").

- A question naming a period (:func:`agent_memory.history.anchors.resolve_anchor`: relative,
  absolute, around an event or a milestone, in the project's zone) loads exactly the weekly reports
  of that ISO-week range: ONE Query (``sk BETWEEN``). A range of more than ``cap`` weeks loads its
  newest ``cap`` weeks, and the yearly summaries of the range's older years stand for the rest.
  Two periods a question compares apart ("W23 和 W30 比较一下") load those periods only: one Query
  each.
  The weeks of the range without a report are named, so an answer says "no report for week N"
  only when there is none.
- A question naming no period loads what it always did: the newest ``cap`` reports (one Query)
  and, when the cap is reached, the yearly summaries of older periods.

The yearly summaries come from the turn's one read when it holds them (``TurnContext``), else one
Query. Nothing here logs the question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Protocol

from agent_memory.domain.models import WeeklyReport, YearlySummary
from agent_memory.history.anchors import WeekRange, iso_week, resolve_anchor


class HistoryBook(Protocol):
    """The reads of the history book a question needs (``ChatRepository``, the in-memory store)."""

    def load_history(self, project_id: str, *, limit_weeks: int, page_size: int | None = None
                     ) -> list[WeeklyReport]: ...

    def list_reports_between(self, project_id: str, first_week: str, last_week: str) -> list[WeeklyReport]: ...

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]: ...


@dataclass(frozen=True)
class HistorySpan:
    """The period a history context covers, as the prompt and the context view name it.

    Attributes:
        asked: the range the question named (``first``/``last`` ISO weeks, its days and phrase kind).
        first / last: the weeks loaded (``last - first`` < the cap; the range's newest weeks).
        missing: weeks from ``first`` to ``last`` with no weekly report, oldest first.
        years: the years whose summaries stand for the part of the range before ``first``.
    """

    asked: WeekRange
    first: str
    last: str
    missing: tuple[str, ...] = ()
    years: tuple[int, ...] = ()

    runs: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """``2026-W14..2026-W18 (months: 2026-04-01..2026-04-30)``, plus the part left to yearly
        summaries when the range was cut; periods compared apart are named each
        (``2025-W23,2025-W30 (compare: ...)``)."""
        cut = "" if self.first == self.asked.first else f"; {self.asked.first}..{self.first} as yearly summaries"
        weeks = ",".join(a if a == b else f"{a}..{b}" for a, b in self.runs) if len(self.runs) > 1 else \
            f"{self.first}..{self.last}"
        return f"{weeks} ({self.asked.label}{cut})"


@dataclass(frozen=True)
class HistoryLoad:
    """The history of one turn: ``reports`` (newest first as read), ``yearly`` (oldest year first)
    and ``span`` (None: the question named no period, the newest weeks were loaded)."""

    reports: list[WeeklyReport]
    yearly: list[YearlySummary] = field(default_factory=list)
    span: HistorySpan | None = None


def anchor_of(question: str, now: datetime, time_zone: str, hot_lines: Sequence[str]) -> WeekRange | None:
    """The ISO-week range ``question`` names (hot-memory lines may date a milestone), or None."""
    return resolve_anchor(question, now, time_zone, hot_lines)


def load_history_for(
    book: HistoryBook, project_id: str, anchor: WeekRange | None, *, cap: int,
    yearly_read: Callable[[], list[YearlySummary]],
) -> HistoryLoad:
    """The reports (and yearly summaries) a history context of the turn gets.

    Args:
        book: the history book's reads.
        project_id: the project (every key starts with it).
        anchor: the range the question named (:func:`anchor_of`), or None.
        cap: most weeks loaded (``HISTORY_WEEKS_CAP``, 50).
        yearly_read: the project's yearly summaries, oldest first (from the turn's read, else a
            Query); called only when summaries are needed.

    Returns:
        :class:`HistoryLoad`; with an anchor, exactly the reports of the range's newest ``cap``
        weeks and the summaries of the range's years before them.
    """
    if anchor is None:
        reports = book.load_history(project_id, limit_weeks=cap)
        return HistoryLoad(reports, yearly_read() if len(reports) >= cap else [])
    weeks = anchor.weeks()
    loaded = weeks[-cap:]
    runs = week_runs(loaded)
    # one Query per run of consecutive weeks: one for a period, one per period compared apart
    reports = [r for first, last in runs for r in book.list_reports_between(project_id, first, last)]
    years: list[YearlySummary] = []
    if len(weeks) > len(loaded):
        first_year, cut_year, cut_week = int(weeks[0][:4]), int(loaded[0][:4]), int(loaded[0][6:])
        years = [y for y in yearly_read()
                 if first_year <= y.year < cut_year or (y.year == cut_year and cut_week > 1)]
    have = {r.iso_week for r in reports}
    span = HistorySpan(asked=anchor, first=loaded[0], last=loaded[-1],
                       missing=tuple(w for w in loaded if w not in have), years=tuple(y.year for y in years),
                       runs=tuple(runs))
    return HistoryLoad(sorted(reports, key=lambda r: r.iso_week, reverse=True), years, span)


def week_runs(weeks: Sequence[str]) -> list[tuple[str, str]]:
    """``weeks`` (ISO ``YYYY-Www``, oldest first) as runs of consecutive weeks, ``(first, last)`` each:
    ``["2025-W23", "2025-W24", "2025-W30"]`` -> ``[("2025-W23", "2025-W24"), ("2025-W30", "2025-W30")]``."""
    runs: list[tuple[str, str]] = []
    for week in weeks:
        monday = date.fromisocalendar(int(week[:4]), int(week[6:]), 1)
        if runs and iso_week(monday - timedelta(days=7)) == runs[-1][1]:
            runs[-1] = (runs[-1][0], week)
        else:
            runs.append((week, week))
    return runs


__all__ = ["HistoryBook", "HistoryLoad", "HistorySpan", "anchor_of", "load_history_for", "week_runs"]
