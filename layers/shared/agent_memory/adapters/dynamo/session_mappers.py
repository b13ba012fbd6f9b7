"""Conversions of the consultation items only the sessions function's store reads or writes:
session listings and diagnoses (see :mod:`.mappers`)."""

from __future__ import annotations

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.conversation_tables import DiagnosisItem, SessionItem
from agent_memory.adapters.dynamo.fields import item_fields, read_fields
from agent_memory.domain.session_models import Diagnosis, SessionListItem, report_problem
from agent_memory.observability import logger

#: Byte budget of a diagnosis item (report + symptom snapshot).
DIAGNOSIS_ITEM_BUDGET_BYTES = 300_000
#: The only key of the report shown for a stored report that cannot be read back (too deep).
UNREADABLE_REPORT_KEY = "_unreadable_report"


def session_list_item_from_item(item: SessionItem) -> SessionListItem:
    """A row of a session listing (no window, facts or summary)."""
    return SessionListItem(**read_fields(item, SessionListItem,
        message_count=int(item.message_count or 0),
        diagnosis_count=int(item.diagnosis_count or 0),
    ))


def diagnosis_to_item(d: Diagnosis) -> DiagnosisItem:
    """The diagnosis item; with a patient, also in the PatientIndex (``DIAG#{created_at}#{id}``,
    which sorts apart from the patient's sessions, whose index sort keys start with a digit)."""
    return DiagnosisItem(
        keys.session_pk(d.project_id, d.session_id), keys.diagnosis_sk(d.diagnosis_id),
        **item_fields(d, DiagnosisItem,
        patient_pk=keys.patient_pk(d.project_id, d.patient_id) if d.patient_id else None,
        patient_sk=f"{keys.DIAGNOSIS_PREFIX}{keys.sort_time(d.created_at)}#{d.diagnosis_id}" if d.patient_id else None,
    ))


def diagnosis_from_item(item: DiagnosisItem) -> Diagnosis:
    """The diagnosis; a stored report that can no longer be read back (stored before reports
    were checked) shows as ``{UNREADABLE_REPORT_KEY: problem}`` instead of failing every read
    of the session's diagnoses."""
    report = item.report or {}
    problem = report_problem(report)
    if problem is not None:
        logger.warning(
            "stored diagnosis report unreadable",
            extra={"project_id": item.project_id, "diagnosis_id": item.diagnosis_id},
        )
        report = {UNREADABLE_REPORT_KEY: problem}
    return Diagnosis(**read_fields(item, Diagnosis,
        report=report,
        symptoms_snapshot=list(item.symptoms_snapshot or []),
    ))


__all__ = [
    "DIAGNOSIS_ITEM_BUDGET_BYTES",
    "UNREADABLE_REPORT_KEY",
    "diagnosis_from_item",
    "diagnosis_to_item",
    "session_list_item_from_item",
]
