"""Domain models of the session layer beyond the session item itself :
diagnosis records, session listings, transcript turns and visit comparisons.

The session item's ``facts`` dict (``SessionState.facts``) holds, all bounded in bytes:
- ``symptoms``: the extracted symptom facts (``agent_memory.consultation.symptoms.SymptomFact`` as JSON);
- ``diagnoses``: references to diagnosis records of this session and of the patient's earlier
  sessions (:class:`DiagnosisRef` as JSON; ids, times and key symptoms only, never reports);
- ``summary_through``: id of the last message the rolling summary covers.

A patient's newest diagnosis references are also kept in one item per patient
(:class:`PatientRefs`), written in the transaction that stores each diagnosis, so the first turn
of a patient's new session reads them with its one BatchGetItem (docs/architecture.md,
"Request path").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Deepest nesting of a diagnosis report: objects and arrays, the report itself is level 1.
#: (Pydantic refuses to serialise much deeper values: a stored report must stay readable.)
MAX_REPORT_DEPTH = 32


def report_problem(report: Any, *, max_depth: int = MAX_REPORT_DEPTH) -> str | None:
    """Why ``report`` cannot be stored as a diagnosis report, or None when it can: it must be
    a JSON object of JSON values only (string keys; finite numbers) nested at most
    ``max_depth`` levels. Iterative, so any depth is checked without recursion."""
    if not isinstance(report, dict):
        return "the report must be a JSON object"
    stack: list[tuple[Any, int]] = [(report, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > max_depth:
                return f"the report is nested more than {max_depth} levels deep"
            if isinstance(value, dict):
                if not all(isinstance(k, str) for k in value):
                    return "the report's object keys must be strings"
                stack.extend((v, depth + 1) for v in value.values())
            else:
                stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return "the report must not contain NaN or Infinity"
        elif value is not None and not isinstance(value, str | int | bool):
            return f"the report holds a value that is not JSON ({type(value).__name__})"
    return None


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


#: Diagnosis references kept in a session's facts and in a patient's :class:`PatientRefs` (the newest).
MAX_DIAGNOSIS_REFS = 20


def merge_diagnosis_refs(current: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Union by ``diagnosis_id`` (the newer entry wins), time order, the newest ``MAX_DIAGNOSIS_REFS``.

    Args:
        current / new: references as JSON (:class:`DiagnosisRef` dumped in ``json`` mode);
            entries without a ``diagnosis_id`` are skipped.
    """
    by_id: dict[str, dict[str, Any]] = {}
    for ref in [*current, *new]:
        if isinstance(ref, dict) and ref.get("diagnosis_id"):
            by_id[str(ref["diagnosis_id"])] = ref
    ordered = sorted(by_id.values(), key=lambda r: (str(r.get("at", "")), str(r["diagnosis_id"])))
    return ordered[-MAX_DIAGNOSIS_REFS:]


class PatientRefs(BaseModel):
    """The references of a patient's newest :data:`MAX_DIAGNOSIS_REFS` diagnoses (oldest first),
    kept in one item per patient and project.

    Every diagnosis write updates it in the same transaction (under ``version``), so it always
    equals the newest diagnoses as stored; an erasure removes the erased sessions' references.
    It is derived data: the diagnoses themselves are the record (and are what an export holds).

    - ``version``: the stored item's version; 0 = no item is stored yet (``refs`` then come
      from the diagnoses themselves, or are empty when the project has none unreferenced);
    - ``expires_at``: when the item expires (the sessions table's TTL): no earlier than any
      diagnosis it references; None = kept until erased.
    """

    project_id: str
    patient_id: str
    refs: list[DiagnosisRef] = Field(default_factory=list)
    version: int = 0
    expires_at: datetime | None = None

    def plus(self, ref: DiagnosisRef) -> PatientRefs:
        """A copy with ``ref`` merged in (:func:`merge_diagnosis_refs`: the newest kept)."""
        merged = merge_diagnosis_refs([r.model_dump(mode="json") for r in self.refs], [ref.model_dump(mode="json")])
        return self.model_copy(update={"refs": [DiagnosisRef.model_validate(r) for r in merged]})

    def newest_first(self, limit: int) -> list[DiagnosisRef]:
        """The newest ``limit`` references, newest first (the order of a PatientIndex Query)."""
        return list(reversed(self.refs))[:limit]


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


#: An ISO-8601 date-time: a date, ``T`` (or a space) and at least hours and minutes.
_ISO_DATETIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}")


class TranscriptTurn(BaseModel):
    """One turn recorded elsewhere: ``patient`` becomes a user message, ``doctor`` an assistant
    message. ``at`` without an offset is read in the project's time zone; ``None`` takes the
    previous turn's time (+1 ms) or, for the first turn, the time of the import.

    ``at`` is an ISO-8601 date-time string, never a number (epoch) nor a bare date; it must lie
    between 2000-01-01 and one day after the import and not be earlier than the previous turn's
    (422 naming the turn otherwise). Unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid")

    role: Literal["patient", "doctor"]
    content: str
    at: datetime | None = None

    @field_validator("at", mode="before")
    @classmethod
    def _iso_datetime(cls, value: Any) -> Any:
        if value is None or isinstance(value, datetime):  # a datetime: a Python caller (the demo seed)
            return value
        if isinstance(value, str) and _ISO_DATETIME.match(value):
            return value
        raise ValueError("at must be an ISO-8601 date-time string such as 2026-03-10T09:30:00+08:00 "
                         "(not a number, not a bare date)")


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


# ------------------------------------------------------------------- messages of a session
#: Who said a message: a project member in the chat, the assistant's answer, or, in an imported
#: consultation transcript, the patient or the doctor.
Speaker = Literal["member", "assistant", "patient", "doctor"]


def speaker_of(role: str, source: str) -> Speaker:
    """The speaker of a message by its role (user / assistant) and source (chat / transcript)."""
    if source == "transcript":
        return "patient" if role == "user" else "doctor"
    return "member" if role == "user" else "assistant"


class SessionMessage(BaseModel):
    """One message of a session as its listing shows it: who said it (``speaker``; a member's
    ``user_id`` and the ``study_role`` they had when they said it), when, what, and whether the
    context the model was given for it is kept (``has_context``: a chat answer; admins read it at
    ``.../messages/{message_id}/context``)."""

    message_id: str
    speaker: Speaker
    role: Literal["user", "assistant"]
    source: Literal["chat", "transcript"] = "chat"
    content: str
    at: datetime
    user_id: str | None = None
    study_role: str | None = None
    status: Literal["ok", "failed"] = "ok"
    truncated: bool = False
    has_context: bool = False


class SessionMessagePage(BaseModel):
    """A page of a session's messages, oldest first; ``next_cursor`` None on the last page."""

    session_id: str
    messages: list[SessionMessage]
    next_cursor: str | None = None


# ---------------------------------------------------------------------------------- patients
class PatientSummary(BaseModel):
    """One patient of the project as the patients' listing shows them: their sessions (``visits``:
    the consultation sessions among them), the first and the latest activity, their diagnoses."""

    patient_id: str
    sessions: int
    visits: int
    diagnoses: int
    first_at: datetime
    last_at: datetime


class PatientList(BaseModel):
    """The project's patients, most recently active first. ``complete`` False: the project has
    more sessions than one listing reads (``sessions_read``), so older patients may be missing."""

    patients: list[PatientSummary]
    sessions_read: int
    complete: bool


#: A symptom's state at one visit of a trend: stated present, stated denied, gone (present
#: before, stated as gone), or not mentioned at that visit.
TrendStatus = Literal["present", "denied", "resolved", "not_mentioned"]


class TrendVisit(BaseModel):
    """One visit of a symptom trend: a diagnosis (its symptom snapshot, frozen when it was made)
    and the session it belongs to."""

    diagnosis_id: str
    session_id: str
    session_name: str | None = None
    at: datetime


class TrendSymptom(BaseModel):
    """One symptom across the visits: ``statuses[i]`` is its state at ``visits[i]``."""

    name: str
    statuses: list[TrendStatus]


class SymptomTrend(BaseModel):
    """A patient's symptoms over their visits (diagnoses oldest first), each symptom in the order
    it was first recorded."""

    patient_id: str
    visits: list[TrendVisit]
    symptoms: list[TrendSymptom]
