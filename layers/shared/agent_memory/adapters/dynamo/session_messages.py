"""A session's messages as its listing shows them (``GET .../sessions/{session_id}/messages``).

One Query per page on the session's partition (``{project}#{session}``, ``begins_with(sk,
"MSG#")``), oldest first (message ids sort by time). The cursor is the sort key of the page's
last message (``MSG#{message_id}``), URL-safe base64; on the way back in it must be one
(``domain.ids.ID_PATTERN`` after the prefix) and it is used only as the sort key inside the
route's own partition, so no cursor can reach another session or project.
"""

from __future__ import annotations

import base64
import binascii
import re

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.conversation_tables import MessageItem
from agent_memory.domain.errors import InvalidContinuationToken
from agent_memory.domain.ids import ID_PATTERN
from agent_memory.domain.session_models import SessionMessage, SessionMessagePage, speaker_of

_ID = re.compile(ID_PATTERN)


def _encode(message_id: str) -> str:
    return base64.urlsafe_b64encode(keys.message_sk(message_id).encode("ascii")).decode("ascii").rstrip("=")


def _decode(cursor: str) -> str:
    """The message id a cursor stands for. Raises InvalidContinuationToken (400)."""
    try:
        padded = (cursor + "=" * (-len(cursor) % 4)).replace("-", "+").replace("_", "/")
        sort_key = base64.b64decode(padded.encode("ascii"), validate=True).decode("ascii")
    except (ValueError, UnicodeError, binascii.Error):
        sort_key = ""
    message_id = sort_key.removeprefix(keys.MESSAGE_PREFIX)
    if not sort_key.startswith(keys.MESSAGE_PREFIX) or not _ID.match(message_id):
        raise InvalidContinuationToken("cursor is not valid for this listing")
    return message_id


def _message(item: MessageItem) -> SessionMessage:
    return SessionMessage(
        message_id=item.message_id, speaker=speaker_of(item.role, item.source or "chat"), role=item.role,
        source=item.source or "chat", content=item.content, at=item.at, user_id=item.user_id,
        study_role=item.study_role, status=item.status or "ok", truncated=bool(item.truncated),
        has_context=item.context is not None,
    )


def list_session_messages(project_id: str, session_id: str, *, limit: int, cursor: str | None) -> SessionMessagePage:
    """One page (at most ``limit``) of the session's messages after ``cursor``, oldest first.

    Raises:
        InvalidContinuationToken: ``cursor`` was not issued by this listing (400).
    """
    pk = keys.session_pk(project_id, session_id)
    start = {"pk": {"S": pk}, "sk": {"S": keys.message_sk(_decode(cursor))}} if cursor else None
    items = list(MessageItem.query(
        pk, MessageItem.sk.startswith(keys.MESSAGE_PREFIX), limit=limit + 1, page_size=limit + 1,
        last_evaluated_key=start,
    ))
    page = items[:limit]
    next_cursor = _encode(page[-1].message_id) if len(items) > limit and page else None
    return SessionMessagePage(session_id=session_id, messages=[_message(i) for i in page], next_cursor=next_cursor)


__all__ = ["list_session_messages"]
