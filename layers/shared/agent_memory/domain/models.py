"""Domain models shared by logic, data access and handlers.

Times are timezone-aware UTC ``datetime`` objects unless a name says ``local``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_memory.domain.session_models import DiagnosisRef

#: A project member's role in the study team (the ``[PI]`` / ``[CRC]`` tags of hot memory).
StudyRole = Literal["PI", "Sub-I", "CRC", "DM", "CRA", "Statistician", "Other"]

class Intent(StrEnum):
    """What a message asks for; drives retrieval."""

    QUERY_DATA = "QUERY_DATA"
    QUERY_HISTORY = "QUERY_HISTORY"
    ANALYZE_TREND = "ANALYZE_TREND"
    QC_TASK = "QC_TASK"
    GENERATE_REPORT = "GENERATE_REPORT"
    MEMORY_RECALL = "MEMORY_RECALL"
    CONSULTATION = "CONSULTATION"
    GENERAL = "GENERAL"


#: Intents that load the history book ("问历史/趋势/回顾").
HISTORY_INTENTS: frozenset[Intent] = frozenset({Intent.QUERY_HISTORY, Intent.ANALYZE_TREND})


class ToolCall(BaseModel):
    """One tool_use with its tool_result, kept inside the assistant message that made it."""

    id: str
    name: str
    input: dict[str, Any]
    result: str
    is_error: bool = False


class MessageRecord(BaseModel):
    """One message of a session, as kept in the session window and the messages partition.

    ``status`` is ``failed`` for a user message whose turn got no reply (LLM failure).
    ``idempotency_hash`` ties a user message to the Idempotency-Key of the request
    that wrote it, so a retry reuses it instead of writing it twice.
    """

    model_config = ConfigDict(extra="ignore")

    message_id: str
    role: Literal["user", "assistant"]
    content: str
    at: datetime
    user_id: str | None = None
    study_role: StudyRole | None = None
    status: Literal["ok", "failed"] = "ok"
    tool_calls: list[ToolCall] = Field(default_factory=list)
    truncated: bool = False
    idempotency_hash: str | None = None
    source: Literal["chat", "transcript"] = "chat"


class SessionState(BaseModel):
    """The session item: metadata, the bounded recent-message window, facts and summary.

    ``version`` is the optimistic-lock version (0 = not yet stored).
    """

    project_id: str
    session_id: str
    patient_id: str | None = None
    type: Literal["consultation", "research"] = "research"
    name: str | None = None
    created_by: str | None = None
    created_at: datetime
    updated_at: datetime
    version: int = 0
    message_count: int = 0
    diagnosis_count: int = 0
    window: list[MessageRecord] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)
    summary: str = ""


LineSource = Literal["admin", "distilled"]


class HotMemoryLine(BaseModel):
    """One line of hot memory with its provenance (who wrote it, when, from which messages)."""

    line_id: str
    section: str
    text: str
    source: LineSource
    role_tag: str | None = None
    created_at: datetime
    created_by: str
    evidence: list[str] = Field(default_factory=list)
    #: when the statement behind a distilled line was made (its newest evidence message), besides
    #: ``created_at`` (when the line was written)
    stated_at: datetime | None = None
    #: the user id of the speaker of that statement (a preference "for me" is scoped to them)
    stated_by: str | None = None


#: Section order of the hot-memory document.
HOT_MEMORY_SECTIONS: tuple[str, ...] = (
    "System Rules",
    "User Preferences",
    "Active Context",
    "Lessons Learned",
)


class HotMemory(BaseModel):
    """The project's hot memory: structured lines rendered as one Markdown document."""

    project_id: str
    version: int = 0
    lines: list[HotMemoryLine] = Field(default_factory=list)
    updated_at: datetime | None = None
    updated_by: str | None = None

    def render(self) -> str:
        """Markdown document: one ``# Section`` per non-empty section, ``- [TAG] text`` lines."""
        out: list[str] = []
        sections = list(HOT_MEMORY_SECTIONS) + sorted(
            {ln.section for ln in self.lines} - set(HOT_MEMORY_SECTIONS)
        )
        for section in sections:
            lines = [ln for ln in self.lines if ln.section == section]
            if not lines:
                continue
            if out:
                out.append("")
            out.append(f"# {section}")
            for ln in lines:
                tag = f"[{ln.role_tag}] " if ln.role_tag else ""
                out.append(f"- {tag}{ln.text}")
        return "\n".join(out)


class WeeklyReport(BaseModel):
    """One history-book entry: the report of one ISO week (``iso_week`` like ``2026-W05``)."""

    project_id: str
    iso_week: str
    summary: str
    revision: int = 1
    created_at: datetime
    created_by: str = "archiver"
    evidence: list[str] = Field(default_factory=list)


class YearlySummary(BaseModel):
    """``YEAR#{yyyy}``: one complete ISO year of the history book condensed.

    ``weeks`` are the ISO weeks (``YYYY-Www``) whose reports it was built from.
    """

    project_id: str
    year: int
    summary: str
    weeks: list[str] = Field(default_factory=list)
    created_at: datetime
    created_by: str = "pruner"


class ClinicalDataSource(BaseModel):
    """Where a project's clinical data lives: a REDCap API URL and the NAME of the Secrets Manager
    secret holding the project's API token (the token itself is never stored or passed here)."""

    source: Literal["redcap"]
    api_url: str
    token_secret: str


class Project(BaseModel):
    """A tenant. ``time_zone`` is the IANA zone of the project's calendar."""

    project_id: str
    name: str
    time_zone: str = "Asia/Shanghai"
    kind: Literal["iit", "clinic", "consultation"] = "iit"
    clinical_data: ClinicalDataSource | None = None
    created_at: datetime


class Member(BaseModel):
    """A user's membership of one project (``MEMBER#{user_id}`` in the project's partition): it,
    not the token, decides access (``project_role``) and names the user's study role."""

    project_id: str
    user_id: str
    project_role: Literal["admin", "member"]
    study_role: StudyRole
    display_name: str
    added_at: datetime
    added_by: str


class TurnContext(BaseModel):
    """What the chat read for one turn (one BatchGetItem)."""

    project: Project
    hot_memory: HotMemory
    session: SessionState
    #: The project's yearly summaries, oldest first, read with the turn's BatchGetItem; None when
    #: they were not read, or older ones than those read may exist (the reader then queries them).
    yearly_summaries: list[YearlySummary] | None = None
    #: The asker's membership, read in the same BatchGetItem (None: not a member).
    asker: Member | None = None
    #: The earlier diagnoses of the patient the read named (``patient_id``), oldest first, read in
    #: the same BatchGetItem; None when no patient was named, or when the project still has
    #: diagnoses written before the per-patient references were kept and this patient has no
    #: references item yet (the caller then queries the diagnoses).
    patient_diagnoses: list[DiagnosisRef] | None = None


def iso_week_label(day: date) -> str:
    """ISO week label ``YYYY-Www`` of a calendar date (ISO 8601 year, so 2027-01-01 -> 2026-W53)."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


@dataclass
class TurnWrite:
    """Everything one chat turn writes, applied in ONE TransactWriteItems.

    - ``session``: the new session state; written with a condition on ``expected_version``
      (0 = the session must not exist yet).
    - ``new_messages``: message items to create (condition: not existing).
    - ``flow_log``: messages to append to the flow log (condition: not existing).
    - ``mark_ok``: ids of previously failed user messages this turn answers (a retry).
    - ``contexts``: message_id -> context manifest stored on that message item.
    - ``activity_local_dates``: the project's local dates of the messages written (one
      activity marker each; two when a turn straddles local midnight).
    - ``client_request_token``: DynamoDB idempotency token of the transaction (10 min).
    """

    session: SessionState
    expected_version: int
    new_messages: list[MessageRecord]
    flow_log: list[MessageRecord]
    activity_local_dates: list[str]
    now: datetime
    mark_ok: list[str] = field(default_factory=list)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    reply_to: dict[str, str] = field(default_factory=dict)
    flow_log_retention_days: int = 0
    client_request_token: str | None = None
