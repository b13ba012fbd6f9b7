"""Records of the editor and the review queue: audit entries, revisions, review entries, pages."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_memory.domain.errors import ReviewItemNotFound
from agent_memory.domain.models import HotMemory

#: What an audit record says was done (one per admin change).
AuditAction = Literal[
    "memory.put",
    "memory.delete_line",
    "memory.restore",
    "review.approve",
    "review.reject",
    "report.correct",
    "memory.erase_references",
]


class AuditRecord(BaseModel):
    """One admin change: who (``actor``), when (``at``), what (``action``, ``target``,
    ``details``) and why (``reason``, optional)."""

    project_id: str
    audit_id: str
    at: datetime
    actor: str
    action: AuditAction
    target: str
    reason: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class RevisionSummary(BaseModel):
    """One stored hot-memory version, without its lines (the revision list)."""

    version: int
    created_at: datetime
    created_by: str
    reason: str | None = None
    tokens: int = 0


class StoredRevision(BaseModel):
    """One stored hot-memory version with its lines."""

    summary: RevisionSummary
    hot: HotMemory


class Page[T](BaseModel):
    """One page of a listing; ``next_cursor`` None on the last page."""

    items: list[T]
    next_cursor: str | None = None


class RuleRef(BaseModel):
    """A System Rule named by a review item: the admin's line (id, text, role tag)."""

    line_id: str
    text: str
    role_tag: str | None = None


class ReviewEntry(BaseModel):
    """A review-queue item as the admin API shows it (``item_id`` = ``{day}_{review_id}``).

    ``relaxes``: the System Rules approving the item as it stands would relax, against the hot
    memory as it is now (listed for pending items; never stored). ``approved_text``: the text an
    admin approved when they reworded the candidate first (None: approved as proposed).
    """

    item_id: str
    review_id: str
    day: str
    text: str
    section: str
    role_tag: str | None = None
    evidence: list[str] = Field(default_factory=list)
    reason: str
    detail: str | None = None
    origin: str = "rules"
    status: Literal["pending", "approved", "rejected"] = "pending"
    created_at: datetime
    created_by: str = "distiller"
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision_reason: str | None = None
    approved_text: str | None = None
    relaxes: list[RuleRef] = Field(default_factory=list)


class ReportRevision(BaseModel):
    """One revision of a weekly report: its text, who made it, when and why (``reason``: the
    correction's reason; None for the archiver's report). ``replaced_at`` / ``replaced_by``: when
    and by whom a later correction replaced it (None: the current revision)."""

    iso_week: str
    revision: int
    summary: str
    created_at: datetime
    created_by: str
    reason: str | None = None
    replaced_at: datetime | None = None
    replaced_by: str | None = None


def review_item_id(day: str, review_id: str) -> str:
    """The route id of a review-queue item: ``{day}_{review_id}``."""
    return f"{day}_{review_id}"


def split_review_item_id(item_id: str) -> tuple[str, str]:
    """``{day}_{review_id}`` -> ``(day, review_id)``.

    Raises:
        ReviewItemNotFound: not of that shape.
    """
    day, sep, review_id = item_id.partition("_")
    if not sep or not day or not review_id:
        raise ReviewItemNotFound(f"no review item {item_id}")
    return day, review_id
