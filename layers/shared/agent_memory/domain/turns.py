"""A session's messages and state, and what one chat turn reads and writes.

Only the functions that read or write sessions import this module (the API function, which
serves the hot memory, the reports and the turn contexts, builds these models only for its
context route, whose store it imports on first use: docs/architecture.md, "Cold start").
Times are timezone-aware UTC ``datetime`` objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_memory.domain.models import HotMemory, Member, Project, StudyRole, YearlySummary
from agent_memory.domain.session_models import DiagnosisRef


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
    #: an assistant reply that drew on the history book (loaded into its prompt or read with
    #: ``read_history``): a QC context leaves its turn out of the recent turns it replays
    history: bool = False


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
    #: The project-local date (ISO ``YYYY-MM-DD``) of the last activity marker a turn of this
    #: session wrote, in the same transaction as this state: a later turn of the same local day
    #: need not write that marker again. None: no turn has marked a day yet.
    activity_date: str | None = None


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


@dataclass
class TurnWrite:
    """Everything one chat turn writes, applied in ONE TransactWriteItems.

    - ``session``: the new session state; written with a condition on ``expected_version``
      (0 = the session must not exist yet).
    - ``new_messages``: message items to create (condition: not existing).
    - ``flow_log``: messages to append to the flow log (condition: not existing).
    - ``mark_ok``: ids of previously failed user messages this turn answers (a retry).
    - ``contexts``: message_id -> context manifest stored on that message item.
    - ``activity_local_dates``: the project's local dates of the messages written that this
      session has not marked yet (one activity marker each; two when a turn straddles local
      midnight; none for a later turn of a day the session already marked, see
      ``SessionState.activity_date``).
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


__all__ = ["MessageRecord", "SessionState", "ToolCall", "TurnContext", "TurnWrite"]
