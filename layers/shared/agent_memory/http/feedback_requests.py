"""Request body and query parameters of the feedback routes; bad input -> 422 with a reason."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from agent_memory.domain.feedback import FEEDBACK_MAX_TAGS, FEEDBACK_REASON_MAX_CHARS, FEEDBACK_TAG_MAX_CHARS
from agent_memory.http.powertools import Query
from agent_memory.http.text_patterns import BLANK_OR_VISIBLE


class FeedbackRequest(BaseModel):
    """Body of ``PUT .../sessions/{session_id}/messages/{message_id}/feedback``."""

    model_config = ConfigDict(extra="forbid")

    rating: Literal["up", "down"]
    reason: Annotated[
        str, Field(max_length=FEEDBACK_REASON_MAX_CHARS, json_schema_extra={"pattern": BLANK_OR_VISIBLE})
    ] | None = Field(default=None, description="Stripped; blank means none; else visible text, no control character.")
    tags: list[
        Annotated[str, Field(max_length=FEEDBACK_TAG_MAX_CHARS, json_schema_extra={"pattern": BLANK_OR_VISIBLE})]
    ] | None = Field(default=None, max_length=FEEDBACK_MAX_TAGS, description="Stripped; blank tags are left out.")


#: ``?rating=up|down`` (all when absent).
RatingQuery = Annotated[Literal["up", "down"] | None, Query()]
#: An ISO-8601 date, or the start of a date-time (a number of seconds is neither, whatever pydantic
#: would read from it).
_ISO_DATE_OR_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:$|[Tt ][0-9]{2}:[0-9]{2})")


def _iso_datetime(value: Any) -> Any:
    """A query's instant as ISO-8601 text: a date-time (``2026-03-10T09:30:00+08:00``) or a date
    (its midnight), never epoch seconds."""
    if value is None or (isinstance(value, str) and _ISO_DATE_OR_TIME.match(value)):
        return value
    raise ValueError("must be an ISO-8601 date-time such as 2026-03-10T09:30:00+08:00, or a date")


#: A date-time or a date, as the schema says it.
_Instant = Annotated[
    datetime,
    BeforeValidator(_iso_datetime),
    WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]}),
]
#: ``?from=`` / ``?to=``: ISO-8601 date-times or dates (UTC when no offset is given); ``from``
#: inclusive, ``to`` exclusive.
FromQuery = Annotated[_Instant | None, Query(alias="from")]
ToQuery = Annotated[_Instant | None, Query(alias="to")]


def as_utc(value: datetime | None) -> datetime | None:
    """``value`` as an aware UTC datetime (a naive one is read as UTC)."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


__all__ = ["FeedbackRequest", "FromQuery", "RatingQuery", "ToQuery", "as_utc"]
