"""Domain models of the session layer beyond the session item itself (issue 3):
diagnosis records, session listings, transcript turns and visit comparisons.

The session item's ``facts`` dict (``SessionState.facts``) holds, all bounded in bytes:
- ``symptoms``: the extracted symptom facts (``agent_memory.symptoms.SymptomFact`` as JSON);
- ``diagnoses``: references to diagnosis records of this session and of the patient's earlier
  sessions (:class:`DiagnosisRef` as JSON; ids, times and key symptoms only, never reports);
- ``summary_through``: id of the last message the rolling summary covers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class DiagnosisRef(BaseModel):
    """What the agent context carries about a diagnosis: id, session, time, key symptoms."""

    diagnosis_id: str
    session_id: str
    at: datetime
    symptoms: list[str] = Field(default_factory=list)


class Diagnosis(BaseModel):
    """A diagnosis record: the report as given and the session's symptoms at that moment.

    ``symptoms_snapshot`` is a copy of ``facts["symptoms"]`` taken in the same transaction that
    stored the record; later turns never change it.
    """

    project_id: str
    session_id: str
    diagnosis_id: str
    patient_id: str | None = None
    created_at: datetime
    created_by: str | None = None
    report: dict[str, Any] = Field(default_factory=dict)
    symptoms_snapshot: list[dict[str, Any]] = Field(default_factory=list)

    def ref(self, max_symptoms: int = 8) -> DiagnosisRef:
        """The reference kept in the agent context (present symptoms only, capped)."""
        present = [str(s.get("name")) for s in self.symptoms_snapshot if s.get("status") == "present"]
        return DiagnosisRef(
            diagnosis_id=self.diagnosis_id, session_id=self.session_id, at=self.created_at,
            symptoms=present[:max_symptoms],
        )


class SessionListItem(BaseModel):
    """One row of a session listing (read from a DynamoDB index, never from a cache)."""

    session_id: str
    patient_id: str | None = None
    type: Literal["consultation", "research"] = "research"
    name: str | None = None
    created_at: datetime
    updated_at: datetime
    message_count: int = 0
    diagnosis_count: int = 0


class SessionPage(BaseModel):
    """A page of a listing, newest ``updated_at`` first; ``next_token`` is opaque (None = end)."""

    sessions: list[SessionListItem]
    next_token: str | None = None


class TranscriptTurn(BaseModel):
    """One turn recorded elsewhere: ``patient`` becomes a user message, ``doctor`` an assistant
    message. ``at`` without an offset is read in the project's time zone; ``None`` takes the
    previous turn's time (+1 ms) or, for the first turn, the time of the import."""

    role: Literal["patient", "doctor"]
    content: str
    at: datetime | None = None


class CompareSide(BaseModel):
    """One side of a comparison: a diagnosis snapshot or a session's current facts."""

    kind: Literal["diagnosis", "current"]
    session_id: str
    diagnosis_id: str | None = None
    at: datetime


class TrendChange(BaseModel):
    """A symptom present on both sides whose trend differs."""

    name: str
    from_trend: str | None = Field(default=None, serialization_alias="from")
    to_trend: str | None = Field(default=None, serialization_alias="to")


class Comparison(BaseModel):
    """Follow-up comparison of two visits of a patient (symptom names, sorted).

    - ``new``: present now, not present before (absent or denied);
    - ``resolved``: present before, denied now;
    - ``persisting``: present on both sides (``changed_trend`` lists those whose trend differs);
    - ``not_mentioned``: present before and not mentioned now (unknown, not called resolved).
    """

    patient_id: str
    from_: CompareSide = Field(serialization_alias="from")
    to: CompareSide
    new: list[str]
    resolved: list[str]
    persisting: list[str]
    changed_trend: list[TrendChange]
    not_mentioned: list[str]
    symptoms: dict[str, dict[str, Any]] = Field(default_factory=dict)
