"""An admin's correction of one weekly report of the history book.

A correction stores a new revision of the report (``REPORTREV#`` keeps the previous text) with an
audit record, under the same ``If-Match`` rule as the hot-memory editor: the correction names the
revision it is based on. Corrected text is never clipped: over :data:`REPORT_MAX_BYTES` it is
refused.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, Field

from agent_memory.domain.errors import InvalidInput, PayloadTooLarge, ReportNotFound, VersionConflict
from agent_memory.domain.records import Page, ReportRevision
from agent_memory.domain.text import utf8_len
from agent_memory.history.reports import ISO_WEEK_PATTERN
from agent_memory.hot_memory.editor import audit_record, check_reason
from agent_memory.ports import AdminStore

#: Largest corrected weekly report, in UTF-8 bytes (413 above it; never clipped).
REPORT_MAX_BYTES = 16_384
_ISO_WEEK = re.compile(ISO_WEEK_PATTERN)


class ReportView(BaseModel):
    """A weekly report with its revision (the ETag of report corrections)."""

    project_id: str
    iso_week: str
    summary: str
    revision: int
    created_at: datetime
    created_by: str
    evidence: list[str] = Field(default_factory=list)
    reason: str | None = Field(default=None, description="why this revision was made (the correction's reason)")
    changed: bool = True
    audit_id: str | None = None


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
    """Replace a weekly report's text; the previous text is kept as a revision (``REPORTREV#``)
    and the new revision carries ``reason`` (why it was corrected), as does the audit record.

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
    corrected = previous.model_copy(update={
        "summary": text, "revision": previous.revision + 1, "created_at": now, "created_by": actor, "reason": reason,
    })
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


def report_revisions(store: AdminStore, project_id: str, iso_week: str) -> Page[ReportRevision]:
    """Every revision of the week's report, newest first: the current one, then those later
    corrections replaced, each with who made it, when and why (the correction's ``reason``).

    Raises:
        InvalidInput (422): not an ISO week; ProjectNotFound, ReportNotFound (404).
    """
    if not _ISO_WEEK.match(iso_week):
        raise InvalidInput("iso_week must look like 2026-W05")
    store.get_project(project_id)
    current = store.get_report(project_id, iso_week)
    if current is None:
        raise ReportNotFound(f"no report for {iso_week}")
    latest = ReportRevision(**current.model_dump(include=set(ReportRevision.model_fields)))
    return Page[ReportRevision](items=[latest, *store.list_report_revisions(project_id, iso_week)])


__all__ = ["REPORT_MAX_BYTES", "ReportView", "correct_report", "report_revisions"]
