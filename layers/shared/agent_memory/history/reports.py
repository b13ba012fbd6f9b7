"""The history book's weekly reports: their sections and the read view (a range of ISO weeks).

A report is written once per ISO week by the archiving job and never overwritten; an admin's
correction stores a new revision of it (:mod:`agent_memory.history.corrections`).
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING

from pydantic import BaseModel

from agent_memory.domain.errors import InvalidInput
from agent_memory.domain.models import WeeklyReport, YearlySummary

if TYPE_CHECKING:
    from agent_memory.ports import ViewStore

#: ``YYYY-Www`` with a week number 01..53 (whether week 53 exists is checked by :func:`check_iso_week`).
ISO_WEEK_PATTERN = r"^[0-9]{4}-W(0[1-9]|[1-4][0-9]|5[0-3])$"
_ISO_WEEK = re.compile(ISO_WEEK_PATTERN)
#: Most reports one request returns (10 years of weeks).
MAX_REPORTS = 520
#: The sections of a weekly report, in order: ``(key, label)``; each line of a report is one point
#: ``[label] text [message ids]`` (written by the archiving job, read by the yearly summaries).
REPORT_SECTIONS: tuple[tuple[str, str], ...] = (("progress", "进度"), ("decisions", "决策"), ("problems", "问题"))


class ReportsView(BaseModel):
    """Weekly reports in ``[from_week, to_week]``, newest first."""

    project_id: str
    from_week: str | None
    to_week: str | None
    count: int
    reports: list[WeeklyReport]


class YearlySummariesView(BaseModel):
    """The history book's yearly summaries (one per complete ISO year the pruning job condensed),
    newest year first."""

    project_id: str
    items: list[YearlySummary]


def check_iso_week(label: str, name: str) -> str:
    """``label`` if it is a real ISO week ``YYYY-Www`` (week 53 only in years that have one).

    Raises:
        InvalidInput: anything else (HTTP 422), naming the parameter.
    """
    if not _ISO_WEEK.fullmatch(label):
        raise InvalidInput(f"{name} must be an ISO week YYYY-Www (e.g. 2026-W05)")
    year, week = label.split("-W")
    try:
        date.fromisocalendar(int(year), int(week), 1)
    except ValueError:
        raise InvalidInput(f"{name}: {label} does not exist (the year has 52 ISO weeks)") from None
    return label


def project_reports(
    store: ViewStore, project_id: str, from_week: str | None, to_week: str | None, *, limit: int = MAX_REPORTS
) -> ReportsView:
    """Reports of the weeks ``from_week..to_week`` (inclusive; either may be None = open), newest first.

    Raises:
        InvalidInput: a malformed or non-existent week, ``from_week`` after ``to_week``, or a
            limit outside 1..MAX_REPORTS (HTTP 422).
        ProjectNotFound.
    """
    if from_week is not None:
        check_iso_week(from_week, "from")
    if to_week is not None:
        check_iso_week(to_week, "to")
    if from_week and to_week and from_week > to_week:
        raise InvalidInput("from must not be after to")
    if not 1 <= limit <= MAX_REPORTS:
        raise InvalidInput(f"limit must be between 1 and {MAX_REPORTS}")
    reports = store.reports_between(project_id, from_week, to_week, limit=limit)
    return ReportsView(project_id=project_id, from_week=from_week, to_week=to_week, count=len(reports), reports=reports)


def project_yearly_summaries(store: ViewStore, project_id: str) -> YearlySummariesView:
    """Every yearly summary of the project, newest year first.

    Raises:
        ProjectNotFound.
    """
    store.project_hot_memory(project_id)  # ProjectNotFound once a removal deleted the PROJECT item
    summaries = sorted(store.load_yearly_summaries(project_id), key=lambda y: y.year, reverse=True)
    return YearlySummariesView(project_id=project_id, items=summaries)


__all__ = [
    "ISO_WEEK_PATTERN",
    "MAX_REPORTS",
    "REPORT_SECTIONS",
    "ReportsView",
    "YearlySummariesView",
    "check_iso_week",
    "project_reports",
    "project_yearly_summaries",
]
