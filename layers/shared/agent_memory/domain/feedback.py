"""Answer feedback: a user's rating of one assistant message.

One feedback per (assistant message, rater); a second rating by the same user replaces the first.
Each rating is also a feedback event in the flow log, which only the jobs read (the daily
distillation reads a down-vote's reason as a candidate statement of the rater; the weekly report
counts the ratings). Times are timezone-aware UTC.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

Rating = Literal["up", "down"]

#: Longest feedback reason (characters); longer -> 422.
FEEDBACK_REASON_MAX_CHARS = 1_000
#: At most this many tags of at most :data:`FEEDBACK_TAG_MAX_CHARS` characters each.
FEEDBACK_MAX_TAGS = 10
FEEDBACK_TAG_MAX_CHARS = 50
#: ``source`` of a flow-log record that is a feedback event (other records: chat / transcript).
FEEDBACK_SOURCE = "feedback"


class Feedback(BaseModel):
    """One user's rating of one assistant message.

    ``study_role``: the rater's study role when known (PI, CRC, ...), so the distiller can tag a
    preference it finds in ``reason``.
    """

    project_id: str
    session_id: str
    message_id: str
    user_id: str
    rating: Rating
    reason: str | None = None
    tags: list[str] = Field(default_factory=list)
    study_role: str | None = None
    at: datetime


def is_distillable_feedback(rating: str | None, content: str) -> bool:
    """Whether a feedback event of the flow log is a candidate statement for distillation: only a
    down-vote with a reason (an up-vote or a bare down-vote states nothing to remember)."""
    return rating == "down" and bool(content.strip())


__all__ = [
    "FEEDBACK_MAX_TAGS",
    "FEEDBACK_REASON_MAX_CHARS",
    "FEEDBACK_SOURCE",
    "FEEDBACK_TAG_MAX_CHARS",
    "Feedback",
    "Rating",
    "is_distillable_feedback",
]
