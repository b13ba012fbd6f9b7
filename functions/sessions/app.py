"""Sessions function: the session and patient memory routes (issue 3; seed 002).

Thin handler: authorize, call ONE logic function of ``agent_memory.consultation.sessions``, return its model.
No LLM here (rule-based symptom extraction, extractive summary): this module never imports
``anthropic``. Listings always query DynamoDB, never a cache.
"""

# No ``from __future__ import annotations``: the event handler resolves the body and query
# models from these annotations at runtime.
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.config import get_settings
from agent_memory.consultation import sessions
from agent_memory.http.auth import authorize, caller_from_event
from agent_memory.http.errors import register_error_handlers
from agent_memory.http.routes import route_guard
from agent_memory.http.session_requests import CreateSessionRequest, DiagnosisRequest, TranscriptRequest
from agent_memory.observability import logger, metrics
from agent_memory.wiring import build_sessions_deps

settings = get_settings()
deps = build_sessions_deps(settings)
app = APIGatewayHttpResolver(enable_validation=True)
register_error_handlers(app)

_P = "/v1/projects/<project_id>"
Limit = Annotated[int, Query(ge=1, le=100)]
NextToken = Annotated[str | None, Query(max_length=2048)]


def _user(project_id: str) -> str:
    """The caller's id after the tenancy check (401 / 403)."""
    caller = caller_from_event(app.current_event)
    authorize(caller, project_id)
    return caller.user_id


def _created(body: dict[str, Any]) -> Response[dict[str, Any]]:
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)


@app.post(f"{_P}/sessions")
def create_session(project_id: str, body: CreateSessionRequest) -> Response[dict[str, Any]]:
    """Create a session (201); 409 if the id exists."""
    user_id = _user(project_id)
    view = sessions.create_session(
        deps, project_id=project_id, user_id=user_id, session_id=body.session_id, patient_id=body.patient_id,
        session_type=body.type, name=body.name,
    )
    metrics.add_metric(name="SessionsCreated", unit="Count", value=1)
    return _created(view.model_dump(mode="json"))


@app.get(f"{_P}/sessions")
def list_sessions(project_id: str, limit: Limit = 20, next_token: NextToken = None) -> dict[str, Any]:
    """The project's sessions, newest first (DynamoDB, paginated)."""
    _user(project_id)
    page = sessions.list_project_sessions(deps, project_id=project_id, limit=limit, next_token=next_token)
    return page.model_dump(mode="json")


@app.get(f"{_P}/sessions/<session_id>")
def get_session(project_id: str, session_id: str) -> dict[str, Any]:
    """Metadata, facts, summary, diagnosis references and the recent window."""
    _user(project_id)
    return sessions.get_session(deps, project_id=project_id, session_id=session_id).model_dump(mode="json")


@app.post(f"{_P}/sessions/<session_id>/transcript")
def post_transcript(project_id: str, session_id: str, body: TranscriptRequest) -> dict[str, Any]:
    """Append turns recorded elsewhere (no LLM reply)."""
    user_id = _user(project_id)
    appended = sessions.import_transcript(
        deps, project_id=project_id, session_id=session_id, user_id=user_id, turns=body.turns
    )
    metrics.add_metric(name="TranscriptTurnsImported", unit="Count", value=appended)
    return {"appended": appended}


@app.post(f"{_P}/sessions/<session_id>/diagnoses")
def post_diagnosis(project_id: str, session_id: str, body: DiagnosisRequest) -> Response[dict[str, Any]]:
    """Store a diagnosis with the session's symptom snapshot (201)."""
    user_id = _user(project_id)
    diagnosis = sessions.add_diagnosis(
        deps, project_id=project_id, session_id=session_id, user_id=user_id, report=body.report,
        diagnosis_id=body.diagnosis_id,
    )
    metrics.add_metric(name="DiagnosesStored", unit="Count", value=1)
    return _created(diagnosis.model_dump(mode="json"))


@app.get(f"{_P}/sessions/<session_id>/diagnoses")
def list_diagnoses(project_id: str, session_id: str) -> dict[str, Any]:
    """The session's diagnoses in time order."""
    _user(project_id)
    found = sessions.list_diagnoses(deps, project_id=project_id, session_id=session_id)
    return {"diagnoses": [d.model_dump(mode="json") for d in found]}


@app.get(f"{_P}/sessions/<session_id>/diagnoses/<diagnosis_id>")
def get_diagnosis(project_id: str, session_id: str, diagnosis_id: str) -> dict[str, Any]:
    """One diagnosis with its full report."""
    _user(project_id)
    return sessions.get_diagnosis(
        deps, project_id=project_id, session_id=session_id, diagnosis_id=diagnosis_id
    ).model_dump(mode="json")


@app.get(f"{_P}/patients/<patient_id>/sessions")
def list_patient_sessions(
    project_id: str, patient_id: str, limit: Limit = 20, next_token: NextToken = None
) -> dict[str, Any]:
    """The patient's sessions, newest first (DynamoDB PatientIndex, paginated)."""
    _user(project_id)
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
    """Follow-up comparison: ``from`` a diagnosis id, ``to`` a diagnosis id or ``current:<session_id>``."""
    _user(project_id)
    result = sessions.compare_visits(
        deps, project_id=project_id, patient_id=patient_id, from_ref=from_ref, to_ref=to_ref
    )
    return result.model_dump(mode="json", by_alias=True)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
@route_guard(app)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)
