"""Request body and query parameters of the feedback routes; bad input -> 422 with a reason."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_memory.domain.feedback import FEEDBACK_MAX_TAGS, FEEDBACK_REASON_MAX_CHARS, FEEDBACK_TAG_MAX_CHARS
from agent_memory.http.powertools import Query


class FeedbackRequest(BaseModel):
    """Body of ``PUT .../sessions/{session_id}/messages/{message_id}/feedback``."""

    model_config = ConfigDict(extra="forbid")

    rating: Literal["up", "down"]
    reason: str | None = Field(default=None, max_length=FEEDBACK_REASON_MAX_CHARS)
    tags: list[Annotated[str, Field(max_length=FEEDBACK_TAG_MAX_CHARS)]] | None = Field(
        default=None, max_length=FEEDBACK_MAX_TAGS
    )


#: ``?rating=up|down`` (all when absent).
RatingQuery = Annotated[Literal["up", "down"] | None, Query()]
#: ``?from=`` / ``?to=``: ISO-8601 date-times (UTC when no offset is given); ``from`` inclusive,
#: ``to`` exclusive.
FromQuery = Annotated[datetime | None, Query(alias="from")]
ToQuery = Annotated[datetime | None, Query(alias="to")]


def as_utc(value: datetime | None) -> datetime | None:
    """``value`` as an aware UTC datetime (a naive one is read as UTC)."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


__all__ = ["FeedbackRequest", "FromQuery", "RatingQuery", "ToQuery", "as_utc"]
