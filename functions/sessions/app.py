"""Sessions function: the session and patient memory routes (members of the project).

Thin handler: each route calls ONE use case of ``agent_memory.consultation.sessions`` and returns its
model; the route guard (``agent_memory.http.routes``) has admitted the caller before it runs.
No LLM here (rule-based symptom extraction, extractive summary): this module never imports
``anthropic``. Listings always query DynamoDB, never a cache.
"""

# No ``from __future__ import annotations``: the event handler resolves the body and query
# models from these annotations at runtime.
from datetime import UTC, datetime
from typing import Annotated, Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.config import get_settings
from agent_memory.consultation import sessions
from agent_memory.feedback import service as feedback
from agent_memory.http.feedback_requests import FeedbackRequest, FromQuery, RatingQuery, ToQuery, as_utc
from agent_memory.http.powertools import Query, Response
from agent_memory.http.requests import Limit
from agent_memory.http.responses import created
from agent_memory.http.routes import current_caller, guarded_resolver
from agent_memory.http.session_requests import (
    CreateSessionRequest,
    DiagnosisRequest,
    NextToken,
    TranscriptRequest,
)
from agent_memory.observability import logger, metrics
from agent_memory.reminders import service as reminders
from agent_memory.wiring import build_feedback_store, build_members, build_reminder_deps, build_sessions_deps

settings = get_settings()
deps = build_sessions_deps(settings)
feedback_store = build_feedback_store(settings)
reminder_deps = build_reminder_deps(settings)
app = guarded_resolver(members=build_members(settings))

_P = "/v1/projects/<project_id>"


@app.post(f"{_P}/sessions", status_code=201)
def create_session(project_id: str, body: CreateSessionRequest) -> Response[dict[str, Any]]:
    """Create a session (members; 201); 409 if the id exists."""
    view = sessions.create_session(
        deps, project_id=project_id, user_id=current_caller(app).user_id, session_id=body.session_id,
        patient_id=body.patient_id, session_type=body.type, name=body.name,
    )
    metrics.add_metric(name="SessionsCreated", unit="Count", value=1)
    return created(view.model_dump(mode="json"))


@app.get(f"{_P}/sessions")
def list_sessions(project_id: str, limit: Limit = 20, next_token: NextToken = None) -> dict[str, Any]:
    """The project's sessions, newest first (members; DynamoDB, paginated)."""
    page = sessions.list_project_sessions(deps, project_id=project_id, limit=limit, next_token=next_token)
    return page.model_dump(mode="json")


@app.get(f"{_P}/sessions/<session_id>")
def get_session(project_id: str, session_id: str) -> dict[str, Any]:
    """Metadata, facts, summary, diagnosis references and the recent window (members)."""
    return sessions.get_session(deps, project_id=project_id, session_id=session_id).model_dump(mode="json")


@app.post(f"{_P}/sessions/<session_id>/transcript")
def post_transcript(project_id: str, session_id: str, body: TranscriptRequest) -> dict[str, Any]:
    """Append turns recorded elsewhere (members; no LLM reply)."""
    caller = current_caller(app)
    appended = sessions.import_transcript(
        deps, project_id=project_id, session_id=session_id, user_id=caller.user_id, turns=body.turns,
        study_role=caller.member.study_role if caller.member else None,
    )
    metrics.add_metric(name="TranscriptTurnsImported", unit="Count", value=appended)
    return {"appended": appended}


@app.post(f"{_P}/sessions/<session_id>/diagnoses", status_code=201)
def post_diagnosis(project_id: str, session_id: str, body: DiagnosisRequest) -> Response[dict[str, Any]]:
    """Store a diagnosis with the session's symptom snapshot (members; 201)."""
    diagnosis = sessions.add_diagnosis(
        deps, project_id=project_id, session_id=session_id, user_id=current_caller(app).user_id,
        report=body.report, diagnosis_id=body.diagnosis_id,
    )
    metrics.add_metric(name="DiagnosesStored", unit="Count", value=1)
    return created(diagnosis.model_dump(mode="json"))


@app.get(f"{_P}/sessions/<session_id>/diagnoses")
def list_diagnoses(project_id: str, session_id: str) -> dict[str, Any]:
    """The session's diagnoses in time order (members)."""
    found = sessions.list_diagnoses(deps, project_id=project_id, session_id=session_id)
    return {"diagnoses": [d.model_dump(mode="json") for d in found]}


@app.get(f"{_P}/sessions/<session_id>/diagnoses/<diagnosis_id>")
def get_diagnosis(project_id: str, session_id: str, diagnosis_id: str) -> dict[str, Any]:
    """One diagnosis with its full report (members)."""
    found = sessions.get_diagnosis(deps, project_id=project_id, session_id=session_id, diagnosis_id=diagnosis_id)
    return found.model_dump(mode="json")


@app.get(f"{_P}/patients/<patient_id>/sessions")
def list_patient_sessions(
    project_id: str, patient_id: str, limit: Limit = 20, next_token: NextToken = None
) -> dict[str, Any]:
    """The patient's sessions, newest first (members; DynamoDB PatientIndex, paginated)."""
    page = sessions.list_patient_sessions(
        deps, project_id=project_id, patient_id=patient_id, limit=limit, next_token=next_token
    )
    return page.model_dump(mode="json")


@app.get(f"{_P}/patients/<patient_id>/compare")
def compare(
    project_id: str,
    patient_id: str,
    from_ref: Annotated[str, Query(alias="from", min_length=1, max_length=300)],
    to_ref: Annotated[str, Query(alias="to", min_length=1, max_length=300)],
) -> dict[str, Any]:
    """Follow-up comparison (members): ``from`` a diagnosis id, ``to`` a diagnosis id or ``current:<session_id>``."""
    result = sessions.compare_visits(
        deps, project_id=project_id, patient_id=patient_id, from_ref=from_ref, to_ref=to_ref
    )
    return result.model_dump(mode="json", by_alias=True)


@app.put(f"{_P}/sessions/<session_id>/messages/<message_id>/feedback")
def put_feedback(project_id: str, session_id: str, message_id: str, body: FeedbackRequest) -> dict[str, Any]:
    """Rate an assistant message (members; one rating per user, a second PUT replaces it)."""
    caller = current_caller(app)
    stored = feedback.rate_message(
        feedback_store, project_id=project_id, session_id=session_id, message_id=message_id,
        user_id=caller.user_id, rating=body.rating, reason=body.reason, tags=body.tags,
        now=datetime.now(UTC), study_role=getattr(caller, "study_role", None),
        flow_log_retention_days=settings.flow_log_retention_days,
    )
    return stored.model_dump(mode="json")


@app.get(f"{_P}/feedback")
def list_feedback(
    project_id: str, rating: RatingQuery = None, from_at: FromQuery = None, to_at: ToQuery = None
) -> dict[str, Any]:
    """The project's answer feedback, oldest first, with counts per rating (admins)."""
    found = feedback.list_feedback(
        feedback_store, project_id, rating=rating, start=as_utc(from_at), end=as_utc(to_at)
    )
    return found.model_dump(mode="json")


@app.get(f"{_P}/reminders")
def list_reminders(project_id: str) -> dict[str, Any]:
    """The caller's active reminders (members); an admin's call lists everyone's."""
    caller = current_caller(app)
    found = reminders.list_reminders(
        _reminders(), project_id, user_id=caller.user_id, admin=caller.role_in(project_id) == "admin"
    )
    return {"project_id": project_id, "reminders": [r.model_dump(mode="json") for r in found]}


@app.delete(f"{_P}/reminders/<reminder_id>")
def delete_reminder(project_id: str, reminder_id: str) -> dict[str, Any]:
    """Cancel a reminder and delete its schedule (its owner or an admin)."""
    caller = current_caller(app)
    cancelled = reminders.cancel_reminder(
        _reminders(), project_id, reminder_id, user_id=caller.user_id, admin=caller.role_in(project_id) == "admin"
    )
    return cancelled.model_dump(mode="json")


def _reminders() -> reminders.ReminderDeps:
    if reminder_deps is None:
        raise RuntimeError("REMINDER_SCHEDULE_GROUP is not configured")
    return reminder_deps


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)
