"""Conversions of the items of a session's conversation: the session item (with its window),
messages and flow-log items (see :mod:`.mappers`). The functions that read or write sessions
import them; the API function imports them only for its context route, on first use.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem, MessageItem, SessionItem
from agent_memory.adapters.dynamo.fields import item_fields, read_fields
from agent_memory.domain.turns import MessageRecord, SessionState, ToolCall

#: Byte budget of the session item (window + facts + summary + metadata), kept well under
#: DynamoDB's 400 KB item limit so that a turn can never hit it.
SESSION_ITEM_BUDGET_BYTES = 350_000
#: Byte budget of one message item (content + context manifest + tool calls).
MESSAGE_ITEM_BUDGET_BYTES = 380_000


def session_to_item(s: SessionState) -> SessionItem:
    """The session item, in both indexes by ``updated_at`` (the PatientIndex only with a patient)."""
    updated = keys.sort_time(s.updated_at)
    return SessionItem(
        keys.session_pk(s.project_id, s.session_id), keys.SESSION_SK,
        **item_fields(s, SessionItem, exclude=("version",),  # the VersionAttribute is PynamoDB's
        window=[m.model_dump(mode="json", exclude_defaults=True) for m in s.window],
        patient_pk=keys.patient_pk(s.project_id, s.patient_id) if s.patient_id else None,
        patient_sk=f"{updated}#{s.session_id}" if s.patient_id else None,
        project_pk=s.project_id,
        project_sk=f"{updated}#{s.session_id}",
    ))


def session_from_item(item: SessionItem) -> SessionState:
    return SessionState(**read_fields(item, SessionState,
        version=int(item.version or 0),
        message_count=int(item.message_count),
        diagnosis_count=int(item.diagnosis_count),
        window=[MessageRecord.model_validate(x) for x in item.window or []],
        facts=item.facts or {},
        summary=item.summary or "",
    ))


def message_to_item(
    project_id: str,
    session_id: str,
    m: MessageRecord,
    *,
    context: dict[str, Any] | None = None,
    reply_to: str | None = None,
) -> MessageItem:
    return MessageItem(
        keys.session_pk(project_id, session_id),
        keys.message_sk(m.message_id),
        message_id=m.message_id,
        role=m.role,
        content=m.content,
        at=m.at,
        user_id=m.user_id,
        study_role=m.study_role,
        status=m.status,
        truncated=1 if m.truncated else 0,
        tool_calls=[tc.model_dump(mode="json") for tc in m.tool_calls],
        context=context,
        reply_to=reply_to,
        idempotency_hash=m.idempotency_hash,
        source=m.source,
    )


def message_from_item(item: MessageItem) -> MessageRecord:
    return MessageRecord(**read_fields(item, MessageRecord,
        truncated=bool(item.truncated),
        tool_calls=[ToolCall.model_validate(x) for x in item.tool_calls or []],
    ))


def flow_log_to_item(project_id: str, session_id: str, m: MessageRecord, *, expires_at: datetime | None) -> FlowLogItem:
    pk, sk = keys.flow_log_keys(project_id, m.at, m.message_id)
    return FlowLogItem(
        pk,
        sk,
        project_id=project_id,
        session_id=session_id,
        message_id=m.message_id,
        role=m.role,
        content=m.content,
        user_id=m.user_id,
        study_role=m.study_role,
        at=m.at,
        status=m.status,
        expires_at=expires_at,
    )


__all__ = [
    "MESSAGE_ITEM_BUDGET_BYTES",
    "SESSION_ITEM_BUDGET_BYTES",
    "flow_log_to_item",
    "message_from_item",
    "message_to_item",
    "session_from_item",
    "session_to_item",
]
