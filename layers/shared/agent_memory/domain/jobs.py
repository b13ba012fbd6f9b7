"""Domain models of the background jobs .

Times are timezone-aware UTC ``datetime`` objects. None of these models is ever logged whole:
``FlowLogEntry.content`` and ``ReviewItem.text`` hold what users wrote.
"""

from __future__ import annotations

import datetime as _dt
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_memory.domain.ids import ID_PATTERN
from agent_memory.domain.models import YearlySummary

#: Sections the AI may write (``System Rules`` is admin-only).
AI_SECTIONS: tuple[str, ...] = ("User Preferences", "Active Context", "Lessons Learned")
SYSTEM_RULES = "System Rules"

ReviewReason = Literal[
    "relaxes_system_rules",
    "contradicts_admin_line",
    "targets_admin_line",
    "proposes_system_rule",
    "names_erased_patient",
]


class FlowLogEntry(BaseModel):
    """One message of the flow log as the jobs read it (the raw stream)."""

    model_config = ConfigDict(frozen=True)

    message_id: str
    session_id: str
    role: Literal["user", "assistant"]
    content: str
    at: datetime
    user_id: str | None = None
    #: the speaker's study role when the message was written (set for user messages); the
    #: distillation tags a preference with it (never guessed from text or user id)
    study_role: str | None = None
    status: str = "ok"
    #: ``feedback`` for a feedback event (``message_id``: the rated message; ``content``: the reason).
    source: str | None = None
    rating: str | None = None


#: What a candidate asks: a statement to add, a change of a value, a withdrawal, a relaxation of a
#: System Rule (held for review).
CandidateKind = Literal["statement", "change", "withdraw", "relaxes_rule"]


class Candidate(BaseModel):
    """A proposed hot-memory line, from the rule extractor or the LLM extractor.

    ``evidence`` are the ids of the USER messages of the processed day it came from
    (a candidate without evidence is never promoted). ``replaces`` is the ``line_id`` an LLM
    ``replace`` operation names. ``order`` is the position of the statement in the day (time of
    its first evidence message, then its position inside that message), so merges apply
    statements oldest first.
    """

    text: str
    section: str
    role_tag: str | None = None
    evidence: list[str] = Field(default_factory=list)
    replaces: str | None = None
    origin: Literal["rules", "llm"] = "rules"
    order: tuple[str, int] = ("", 0)
    #: ``statement`` (a line to add), ``change`` (a new value for a subject), ``withdraw`` (the
    #: speaker takes back a statement), ``relaxes_rule`` (the LLM says it relaxes a System Rule)
    kind: CandidateKind = "statement"
    #: when the statement was made (its newest evidence message); the line's provenance keeps it
    stated_at: datetime | None = None
    #: the speaker's user id (scope of a replacement besides the role)
    speaker: str | None = None


class ReviewItem(BaseModel):
    """A candidate held for an admin instead of being promoted.

    Stored as ``REVIEW#{local day}#{review_id}`` in the project's MemoryTable partition;
    ``status`` starts ``pending`` (the admin API decides it).
    """

    project_id: str
    review_id: str
    day: str
    text: str
    section: str
    role_tag: str | None = None
    evidence: list[str] = Field(default_factory=list)
    reason: ReviewReason
    detail: str | None = None
    origin: Literal["rules", "llm"] = "rules"
    status: Literal["pending", "approved", "rejected"] = "pending"
    created_at: datetime
    created_by: str = "distiller"


class JobRun(BaseModel):
    """``JOBRUN#{job}#{key}``: the completion marker of one job for one period.

    ``key`` is the local day (distill), ISO week (archive) or run date (prune). Written in the
    same TransactWriteItems as the job's result and checked first, so a retry, a duplicate
    delivery or a manual re-run changes nothing more.
    """

    project_id: str
    job: str
    key: str
    status: str = "done"
    completed_at: datetime
    counts: dict[str, int] = Field(default_factory=dict)
    hot_version: int | None = None


class Alert(BaseModel):
    """An alert for the project's admins (SNS adapter or in-memory fake).

    ``subject`` is ASCII (an SNS constraint); ``message`` holds counts, ids and token numbers,
    never message text; both are byte-capped by the notifier with ``truncate_utf8``.
    ``dedupe_key`` makes the alert send at most once (``ALERT#{dedupe_key}`` item).
    """

    project_id: str
    kind: str
    subject: str
    message: str
    dedupe_key: str
    attributes: dict[str, Any] = Field(default_factory=dict)


__all__ = ["YearlySummary"]


def request_key(request: JobRequest) -> str:
    """The stable identity of a request, ``{job}#{project_id}#{run date}``: the same for a
    re-dispatch of the same run (sent as the ``job_key`` message attribute)."""
    key = f"{request.job}#{request.project_id}#{request.date.isoformat()}"
    return f"{key}#{request.target_kind}#{request.target_id}" if request.target_id else key


JobName = Literal["distill", "archive", "prune"]


class ScheduleInput(BaseModel):
    """The ``Input`` payload EventBridge Scheduler sends to the dispatcher.

    ``date`` is the run's LOCAL date in ``time_zone`` (absent: today in that zone at the
    time of the run). distill processes the local day before ``date``; archive the ISO
    week before the one containing ``date``; prune runs as of ``date``.
    """

    model_config = ConfigDict(extra="forbid")

    job: JobName
    # ``_dt.date``: a field named ``date`` with a default shadows the type in the class namespace.
    date: _dt.date | None = None
    time_zone: str = "Asia/Shanghai"
    project_id: str | None = Field(default=None, description="backfill one project instead of the active ones")


class JobRequest(BaseModel):
    """One SQS message of the fan-out: run ``job`` for ``project_id`` as of ``date``."""

    model_config = ConfigDict(extra="forbid")

    job: JobName | Literal["erase"]
    project_id: str = Field(pattern=ID_PATTERN)
    date: date
    #: ``erase`` only: what to erase (docs/architecture.md, "Data governance"); the record
    #: ``ERASURE#{kind}#{id}`` says who asked (``project``: a project removal, its record
    #: ``REMOVED#{project}#{time}`` in the platform partition).
    target_kind: Literal["patient", "session", "project"] | None = None
    target_id: str | None = Field(default=None, pattern=ID_PATTERN)


class JobReport(BaseModel):
    """What a job did (counts only, never message text).

    A job that called the LLM carries ``details["llm_calls"]`` (calls made) and
    ``details["llm_usage"]``: the Messages-API token counts of those calls summed
    (``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``,
    ``cache_read_input_tokens``), None when no call reported usage.
    """

    job: JobName
    project_id: str
    date: date
    changed: bool
    counts: dict[str, int] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
