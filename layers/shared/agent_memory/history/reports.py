"""The history book's weekly reports: their sections, the read view (a range of ISO weeks) and
an admin's correction of one report.

A report is written once per ISO week by the archiving job and never overwritten; a correction
stores a new revision of it (``REPORTREV#`` keeps the previous text) with an audit record, under
the same ``If-Match`` rule as the hot-memory editor: the correction names the revision it is based
on. Corrected text is never clipped: over :data:`REPORT_MAX_BYTES` it is refused.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from pydantic import BaseModel, Field

from agent_memory.domain.errors import InvalidInput, PayloadTooLarge, ReportNotFound, VersionConflict
from agent_memory.domain.models import WeeklyReport
from agent_memory.domain.text import utf8_len
from agent_memory.hot_memory.editor import audit_record, check_reason
from agent_memory.ports import AdminStore, ViewStore

#: ``YYYY-Www`` with a week number 01..53 (whether week 53 exists is checked by :func:`check_iso_week`).
ISO_WEEK_PATTERN = r"^[0-9]{4}-W(0[1-9]|[1-4][0-9]|5[0-3])$"
_ISO_WEEK = re.compile(ISO_WEEK_PATTERN)
#: Most reports one request returns (10 years of weeks).
MAX_REPORTS = 520
#: Largest corrected weekly report, in UTF-8 bytes (413 above it; never clipped).
REPORT_MAX_BYTES = 16_384
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


class ReportView(BaseModel):
    """A weekly report with its revision (the ETag of report corrections)."""

    project_id: str
    iso_week: str
    summary: str
    revision: int
    created_at: datetime
    created_by: str
    evidence: list[str] = Field(default_factory=list)
    changed: bool = True
    audit_id: str | None = None


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


def correct_report(
    store: AdminStore,
    project_id: str,
    iso_week: str,
    *,
    summary: str,
    reason: str | None,
    if_match: int,
    actor: str,
    now: datetime,
) -> ReportView:
    """Replace a weekly report's text; the previous text is kept as a revision (``REPORTREV#``).

    Raises:
        ReportNotFound (404), VersionConflict (409 with the current revision),
        PayloadTooLarge (413, never clipped), InvalidInput (422: empty text or a bad week).
    """
    if not _ISO_WEEK.match(iso_week):
        raise InvalidInput("iso_week must look like 2026-W05")
    reason = check_reason(reason)
    text = summary.strip()
    if not text:
        raise InvalidInput("summary must not be empty")
    size = utf8_len(text)
    if size > REPORT_MAX_BYTES:
        raise PayloadTooLarge(f"summary is {size} bytes (limit {REPORT_MAX_BYTES})", REPORT_MAX_BYTES, size)
    store.get_project(project_id)
    previous = store.get_report(project_id, iso_week)
    if previous is None:
        raise ReportNotFound(f"no report for {iso_week}")
    if previous.revision != if_match:
        raise VersionConflict(
            f"the report is at revision {previous.revision}, your correction is based on revision {if_match}",
            current_version=previous.revision,
        )
    if text == previous.summary:
        return ReportView(**previous.model_dump(), changed=False)
    corrected = previous.model_copy(
        update={"summary": text, "revision": previous.revision + 1, "created_at": now, "created_by": actor}
    )
    audit = audit_record(
        project_id, action="report.correct", target=f"report:{iso_week}", actor=actor, now=now, reason=reason,
        details={
            "from_revision": previous.revision,
            "to_revision": corrected.revision,
            "bytes_before": utf8_len(previous.summary),
            "bytes": size,
        },
    )
    store.correct_report(previous, corrected, replaced_by=actor, audit=audit)
    return ReportView(**corrected.model_dump(), changed=True, audit_id=audit.audit_id)


__all__ = [
    "ISO_WEEK_PATTERN",
    "MAX_REPORTS",
    "REPORT_MAX_BYTES",
    "REPORT_SECTIONS",
    "ReportView",
    "ReportsView",
    "check_iso_week",
    "correct_report",
    "project_reports",
]
