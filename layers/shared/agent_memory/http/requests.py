"""Request bodies (validated by the Powertools event handler: bad input -> 422 with a reason) and
the chat turn they become."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agent_memory.domain.ids import ID_PATTERN, idempotency_hash
from agent_memory.http.errors import RequestRejected
from agent_memory.http.powertools import Query

#: The longest ``Idempotency-Key`` accepted (characters).
IDEMPOTENCY_KEY_MAX_CHARS = 128
#: A listing's page size (query parameter ``limit``).
Limit = Annotated[int, Query(ge=1, le=100)]


class ChatRequest(BaseModel):
    """Body of ``POST /v1/projects/{project_id}/sessions/{session_id}/messages``."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    content: str = Field(min_length=1, description="The user's message (UTF-8 byte limit: MAX_MESSAGE_BYTES).")
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


def idempotency_key(headers: Mapping[str, str]) -> str | None:
    """The request's ``Idempotency-Key`` header, or None without one.

    Raises:
        RequestRejected: longer than :data:`IDEMPOTENCY_KEY_MAX_CHARS` (400 ``invalid_idempotency_key``).
    """
    key = headers.get("idempotency-key") or headers.get("Idempotency-Key")
    if key and len(key) > IDEMPOTENCY_KEY_MAX_CHARS:
        raise RequestRejected(
            HTTPStatus.BAD_REQUEST, "invalid_idempotency_key",
            f"Idempotency-Key is longer than {IDEMPOTENCY_KEY_MAX_CHARS} characters",
        )
    return key or None
