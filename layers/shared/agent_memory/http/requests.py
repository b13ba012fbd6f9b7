"""Request bodies (validated by the Powertools event handler: bad input -> 422 with a reason) and
the chat turn they become."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agent_memory.domain.ids import ID_PATTERN, idempotency_hash
from agent_memory.http.powertools import Header, Query
from agent_memory.http.text_patterns import VISIBLE_TEXT

#: The longest ``Idempotency-Key`` accepted (characters).
IDEMPOTENCY_KEY_MAX_CHARS = 128
#: The optional ``Idempotency-Key`` header of a chat turn (longer ones: 422; empty: none).
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key", max_length=IDEMPOTENCY_KEY_MAX_CHARS,
        description="A retry with the same key returns the first answer and writes nothing new (24 h).",
    ),
]
#: A listing's page size (query parameter ``limit``).
Limit = Annotated[int, Query(ge=1, le=100)]


class ChatRequest(BaseModel):
    """Body of ``POST /v1/projects/{project_id}/sessions/{session_id}/messages``."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    content: str = Field(
        min_length=1, json_schema_extra={"pattern": VISIBLE_TEXT},
        description=(
            "The user's message: at least one visible character, no control character but tab, newline and "
            "carriage return; at most MAX_MESSAGE_BYTES UTF-8 bytes (32,768 by default; 413 above)."
        ),
    )
    patient_id: str | None = Field(default=None, pattern=ID_PATTERN)


class ChatTurn(BaseModel):
    """One chat turn as the chat function runs it, and as Powertools idempotency stores it when the
    request has an ``Idempotency-Key``: the record is keyed by ``[project_id, session_id, user_id,
    key]`` and a retry must repeat ``[content, patient_id]``.

    ``deadline`` is the ``time.monotonic()`` instant by which the LLM must have answered;
    ``key_hash`` identifies the key in the stored turn (never the key itself).
    """

    model_config = ConfigDict(frozen=True)

    project_id: str
    session_id: str
    user_id: str
    content: str
    patient_id: str | None = None
    deadline: float
    key: str | None = None
    key_hash: str | None = None

    @classmethod
    def of(
        cls, project_id: str, session_id: str, body: ChatRequest, *, user_id: str, key: str | None, deadline: float
    ) -> ChatTurn:
        """The turn of a validated request by ``user_id`` (``key``: its Idempotency-Key, if any)."""
        return cls(
            project_id=project_id,
            session_id=session_id,
            user_id=user_id,
            content=body.content,
            patient_id=body.patient_id,
            deadline=deadline,
            key=key,
            key_hash=idempotency_hash(project_id, session_id, user_id, key) if key else None,
        )
