"""Read-only views of what the background jobs maintain (issue 4 "Acceptance"): a project's hot
memory with the provenance of every line, and its history book (weekly reports).

``GET /v1/projects/{project_id}/memory`` and ``GET /v1/projects/{project_id}/reports`` call these;
the admin issue adds the writes. Members and admins may read.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from pydantic import BaseModel, Field

from agent_memory.domain.errors import InvalidInput
from agent_memory.domain.models import HotMemoryLine, WeeklyReport
from agent_memory.domain.text import estimate_tokens
from agent_memory.ports import ViewStore

#: ``YYYY-Www`` with a week number 01..53 (whether week 53 exists is checked by :func:`check_iso_week`).
ISO_WEEK_PATTERN = r"^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$"
_ISO_WEEK = re.compile(ISO_WEEK_PATTERN)
#: Most reports one request returns (10 years of weeks).
MAX_REPORTS = 520


class MemoryView(BaseModel):
    """The hot memory as the chat injects it (``markdown``) and its lines with provenance:
    ``source`` (admin / distilled), ``created_at``, ``created_by``, ``evidence`` (message ids)."""

    project_id: str
    version: int = Field(description="hot-memory version; also the ETag (0 = nothing stored yet)")
    tokens: int = Field(description="estimated tokens of the Markdown")
    updated_at: datetime | None
    updated_by: str | None
    markdown: str
    lines: list[HotMemoryLine]


class ReportsView(BaseModel):
    """Weekly reports in ``[from_week, to_week]``, newest first."""

    project_id: str
    from_week: str | None
    to_week: str | None
    count: int
    reports: list[WeeklyReport]


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


def project_memory(store: ViewStore, project_id: str) -> MemoryView:
    """The project's current hot memory.

    Raises:
        ProjectNotFound.
    """
    _, hot = store.project_hot_memory(project_id)
    markdown = hot.render()
    return MemoryView(
        project_id=project_id,
        version=hot.version,
        tokens=estimate_tokens(markdown),
        updated_at=hot.updated_at,
        updated_by=hot.updated_by,
        markdown=markdown,
        lines=hot.lines,
    )


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


__all__ = [
    "ISO_WEEK_PATTERN",
    "MAX_REPORTS",
    "MemoryView",
    "ReportsView",
    "ViewStore",
    "check_iso_week",
    "project_memory",
    "project_reports",
]
