"""The evidence of a hot-memory line or a review item, as text, for the project's admins.

A distilled line and a held candidate cite the ids of the user messages they came from
(``evidence``). An admin deciding whether to keep a line, or to approve a candidate, reads those
messages: who said what, when, in which session. They are read from the flow log (the verbatim
stream the distiller read), by the time their id carries (``domain.ids.message_time``), never by
a scan. A message that is not there any more (erased with its patient or session, past the flow
log's retention, or an id of another shape) is listed as not kept, so the admin sees that the
evidence existed and is gone.

Message text is shown to the admin only: it is never logged (docs/architecture.md, "Hot memory").
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent_memory.domain.errors import LineNotFound, ReviewItemNotFound
from agent_memory.domain.records import split_review_item_id

if TYPE_CHECKING:
    from agent_memory.ports import EvidenceStore

#: Most evidence messages one answer reads and lists (the newest: message ids sort by time).
MAX_EVIDENCE_MESSAGES = 50


class EvidenceMessage(BaseModel):
    """One cited message. ``kept`` False: the flow log no longer holds it (erased, past its
    retention, or an id that names no time); then only ``message_id`` is set."""

    message_id: str
    kept: bool
    session_id: str | None = None
    role: str | None = None
    content: str | None = Field(default=None, description="the message verbatim (admins only)")
    at: datetime | None = None
    user_id: str | None = Field(default=None, description="who said it (the member's user id)")
    study_role: str | None = Field(default=None, description="the speaker's study role when it was said")


class EvidenceView(BaseModel):
    """The messages a line (``target`` ``line:{line_id}``) or a review item (``review:{item_id}``)
    cites, oldest first; ``cited``: how many ids it cites (more than listed when over
    :data:`MAX_EVIDENCE_MESSAGES`)."""

    target: str
    cited: int
    messages: list[EvidenceMessage]


def _view(store: EvidenceStore, project_id: str, target: str, ids: list[str]) -> EvidenceView:
    wanted = sorted(dict.fromkeys(ids))[-MAX_EVIDENCE_MESSAGES:]
    found = store.flow_log_messages(project_id, wanted)
    messages = []
    for message_id in wanted:
        entry = found.get(message_id)
        if entry is None:
            messages.append(EvidenceMessage(message_id=message_id, kept=False))
            continue
        messages.append(EvidenceMessage(
            message_id=message_id, kept=True, session_id=entry.session_id, role=entry.role, content=entry.content,
            at=entry.at, user_id=entry.user_id, study_role=entry.study_role,
        ))
    return EvidenceView(target=target, cited=len(set(ids)), messages=messages)


def line_evidence(store: EvidenceStore, project_id: str, line_id: str) -> EvidenceView:
    """The messages the current hot memory's line ``line_id`` cites.

    Raises:
        ProjectNotFound (404), LineNotFound (404): no such line in the current version.
    """
    hot = store.load_hot_memory(project_id)
    line = next((ln for ln in hot.lines if ln.line_id == line_id), None)
    if line is None:
        raise LineNotFound(f"no line {line_id} in hot memory version {hot.version}")
    return _view(store, project_id, f"line:{line_id}", line.evidence)


def review_evidence(store: EvidenceStore, project_id: str, item_id: str) -> EvidenceView:
    """The messages the review item ``item_id`` (``{day}_{review_id}``) cites.

    Raises:
        ProjectNotFound (404), ReviewItemNotFound (404).
    """
    split_review_item_id(item_id)
    store.get_project(project_id)
    item = store.get_review(project_id, item_id)
    if item is None:
        raise ReviewItemNotFound(f"no review item {item_id}")
    return _view(store, project_id, f"review:{item_id}", item.evidence)


__all__ = ["MAX_EVIDENCE_MESSAGES", "EvidenceMessage", "EvidenceView", "line_evidence", "review_evidence"]
