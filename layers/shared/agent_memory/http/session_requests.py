"""Request bodies and query parameters of the session routes; bad input -> 422 with a reason."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_memory.consultation.sessions import MAX_TRANSCRIPT_TURNS
from agent_memory.domain.session_models import TranscriptTurn, report_problem
from agent_memory.domain.text import content_problem
from agent_memory.http.powertools import Query
from agent_memory.http.requests import ID_PATTERN
from agent_memory.http.text_patterns import VISIBLE_TEXT

#: A listing's continuation token (query parameter ``next_token``).
NextToken = Annotated[str | None, Query(max_length=2048)]


class CreateSessionRequest(BaseModel):
    """Body of ``POST /v1/projects/{project_id}/sessions``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str | None = Field(default=None, pattern=ID_PATTERN)
    patient_id: str | None = Field(default=None, pattern=ID_PATTERN)
    type: Literal["consultation", "research"] = "consultation"
    name: Annotated[str, Field(max_length=200, json_schema_extra={"pattern": VISIBLE_TEXT})] | None = Field(
        default=None, description="Shown in listings: at least one visible character, no control character."
    )

    @field_validator("name")
    @classmethod
    def _storable_name(cls, value: str | None) -> str | None:
        """A name is shown in listings: no control characters, not blank (as message content)."""
        problem = content_problem(value) if value is not None else None
        if problem is not None:
            raise ValueError(f"name {problem}")
        return value


class TranscriptTurnBody(TranscriptTurn):
    """One turn of a transcript import, as the request states it (:class:`TranscriptTurn`)."""

    content: str = Field(
        json_schema_extra={"pattern": VISIBLE_TEXT},
        description="At least one visible character, no control character but tab, newline and carriage return.",
    )


class TranscriptRequest(BaseModel):
    """Body of ``POST .../sessions/{session_id}/transcript``."""

    model_config = ConfigDict(extra="forbid")

    turns: list[TranscriptTurnBody] = Field(min_length=1, max_length=MAX_TRANSCRIPT_TURNS)


class DiagnosisRequest(BaseModel):
    """Body of ``POST .../sessions/{session_id}/diagnoses``. The report is checked before
    anything is written: JSON values only, nested at most 32 levels (422 otherwise), so every
    stored report can be read back."""

    model_config = ConfigDict(extra="forbid")

    report: dict[str, Any]
    diagnosis_id: str | None = Field(default=None, pattern=ID_PATTERN)

    @field_validator("report")
    @classmethod
    def _storable(cls, report: dict[str, Any]) -> dict[str, Any]:
        problem = report_problem(report)
        if problem is not None:
            raise ValueError(problem)
        return report
