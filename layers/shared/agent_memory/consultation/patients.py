"""The project's patients and a patient's symptom trend over their visits (members).

Both are read from DynamoDB on every call (no cache): the patients from the project's sessions
(ProjectSessionsIndex, newest first, a bounded number of pages), the trend from the patient's
diagnoses (PatientIndex), each with the symptom snapshot frozen when it was made, so a trend
shows what was recorded at each visit, not what later turns changed.
"""

from __future__ import annotations

from agent_memory.consultation.sessions import SessionsDeps
from agent_memory.domain.errors import PatientNotFound
from agent_memory.domain.session_models import (
    Diagnosis,
    PatientList,
    PatientSummary,
    SessionListItem,
    SymptomTrend,
    TrendStatus,
    TrendSymptom,
    TrendVisit,
)

#: Sessions one patients' listing reads at most (pages of :data:`_PAGE`); more: ``complete`` False.
MAX_SESSIONS_READ = 1_000
_PAGE = 100
#: Visits (diagnoses) a trend shows at most: the patient's newest.
MAX_TREND_VISITS = 50


def list_patients(deps: SessionsDeps, *, project_id: str) -> PatientList:
    """The project's patients (those named by a session), most recently active first, from at
    most :data:`MAX_SESSIONS_READ` of its newest sessions.

    Raises:
        ProjectNotFound (404).
    """
    deps.store.get_project(project_id)
    sessions: list[SessionListItem] = []
    token: str | None = None
    while len(sessions) < MAX_SESSIONS_READ:
        page = deps.store.list_project_sessions(project_id, limit=_PAGE, next_token=token)
        sessions.extend(page.sessions)
        token = page.next_token
        if token is None:
            break
    by_patient: dict[str, list[SessionListItem]] = {}
    for session in sessions:
        if session.patient_id:
            by_patient.setdefault(session.patient_id, []).append(session)
    patients = [_summary(patient_id, own) for patient_id, own in by_patient.items()]
    patients.sort(key=lambda p: (p.last_at, p.patient_id), reverse=True)
    return PatientList(patients=patients, sessions_read=len(sessions), complete=token is None)


def _summary(patient_id: str, sessions: list[SessionListItem]) -> PatientSummary:
    return PatientSummary(
        patient_id=patient_id,
        sessions=len(sessions),
        visits=sum(1 for s in sessions if s.type == "consultation"),
        diagnoses=sum(s.diagnosis_count for s in sessions),
        first_at=min(s.created_at for s in sessions),
        last_at=max(s.updated_at for s in sessions),
    )


def snapshot_status(symptom: dict[str, object]) -> TrendStatus:
    """A symptom's state in a diagnosis snapshot: ``resolved`` when stated as gone (it is still
    ``present`` with ``resolved`` set: consultation/symptoms/facts.py), else its status."""
    if symptom.get("resolved"):
        return "resolved"
    return "denied" if symptom.get("status") == "denied" else "present"


def symptom_trend(deps: SessionsDeps, *, project_id: str, patient_id: str) -> SymptomTrend:
    """The patient's symptoms over their newest :data:`MAX_TREND_VISITS` visits with a diagnosis,
    oldest first: per symptom and visit present / denied / resolved / not mentioned.

    Raises:
        ProjectNotFound (404); PatientNotFound (404): the patient was erased and has nothing since.
    """
    deps.store.get_project(project_id)
    diagnoses = list(reversed(deps.store.patient_diagnoses(project_id, patient_id, limit=MAX_TREND_VISITS)))
    sessions = deps.store.list_patient_sessions(project_id, patient_id, limit=_PAGE).sessions
    if not diagnoses and not sessions and deps.store.patient_erased(project_id, patient_id):
        raise PatientNotFound(f"patient {patient_id} was erased")
    names = {s.session_id: s.name for s in sessions}
    return SymptomTrend(
        patient_id=patient_id,
        visits=[TrendVisit(diagnosis_id=d.diagnosis_id, session_id=d.session_id, session_name=names.get(d.session_id),
                           at=d.created_at) for d in diagnoses],
        symptoms=_symptom_rows(diagnoses),
    )


def _symptom_rows(diagnoses: list[Diagnosis]) -> list[TrendSymptom]:
    """One row per symptom named in any snapshot, in the order first recorded."""
    cells: dict[str, list[TrendStatus]] = {}
    for i, diagnosis in enumerate(diagnoses):
        for symptom in diagnosis.symptoms_snapshot:
            name = str(symptom.get("name") or "")
            if name:
                row = cells.setdefault(name, ["not_mentioned"] * len(diagnoses))
                row[i] = snapshot_status(symptom)
    return [TrendSymptom(name=name, statuses=statuses) for name, statuses in cells.items()]


__all__ = ["MAX_SESSIONS_READ", "MAX_TREND_VISITS", "list_patients", "snapshot_status", "symptom_trend"]
