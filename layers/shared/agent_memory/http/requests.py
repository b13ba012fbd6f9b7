"""Request bodies (validated by the Powertools event handler: bad input -> 422 with a reason)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: Path ids: letters, digits, ``-``, ``_``, ``.``, 1..128 characters.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


class ChatRequest(BaseModel):
    """Body of ``POST /v1/projects/{project_id}/sessions/{session_id}/messages``."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    content: str = Field(min_length=1, description="The user's message (UTF-8 byte limit: MAX_MESSAGE_BYTES).")
    patient_id: str | None = Field(default=None, pattern=ID_PATTERN)
