"""Governance function: erasure of a patient or a session, the project export (project admins),
and the removal of a whole project (platform operators).

Why a function of its own: it is the only HTTP path that DELETES from the sessions table, the
flow log and the idempotency table, and the only one that may read the flow log (for an export
with ``include=flow_log``), so those grants sit on this role alone. Thin handler: each route is
one call into ``agent_memory.governance``. docs/architecture.md, "Data governance".
"""

# No ``from __future__ import annotations``: the event handler resolves the query models from
# these annotations at runtime.
from typing import Annotated, Any, Literal

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.config import get_settings
from agent_memory.domain.errors import ProjectNotFound
from agent_memory.domain.governance import ErasureKind, ErasureRecord
from agent_memory.governance import erasure, export, removal
from agent_memory.http.powertools import Query, Response, content_types
from agent_memory.http.responses import model_response
from agent_memory.http.routes import PATH_PARAMETER_RE, current_caller, guarded_resolver
from agent_memory.observability import logger, metrics
from agent_memory.wiring import build_governance_deps, build_members

settings = get_settings()
deps = build_governance_deps(settings)
app = guarded_resolver(members=build_members(settings))

_P = "/v1/projects/<project_id>"

Confirm = Annotated[str | None, Query(description="the project's id again: confirms the removal")]
Include = Annotated[Literal["flow_log"] | None, Query(description="flow_log: add the flow log (verbatim messages)")]


def _erase(project_id: str, kind: ErasureKind, target_id: str) -> Response[Any]:
    record = erasure.request_erasure(
        deps, project_id=project_id, kind=kind, target_id=target_id, actor=current_caller(app).user_id,
    )
    if record.status == "done":
        metrics.add_metric(name="Erasures", unit="Count", value=1)
        return Response(status_code=204, body=None)
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON,
        body={"status": record.status, "status_url": record.status_path(), "erasure": record.model_dump(mode="json")},
        headers={"Location": record.status_path()},
    )


def _status(project_id: str, kind: ErasureKind, target_id: str) -> Response[str]:
    record: ErasureRecord = erasure.get_erasure(deps, project_id=project_id, kind=kind, target_id=target_id)
    return model_response(record)


@app.delete(f"{_P}/patients/<patient_id>")
def erase_patient(project_id: str, patient_id: str) -> Response[Any]:
    """Erase every item of the patient (admins): 204 when done inline, 202 + status URL as a job."""
    return _erase(project_id, "patient", patient_id)


@app.get(f"{_P}/patients/<patient_id>/erasure")
def patient_erasure(project_id: str, patient_id: str) -> Response[str]:
    """The patient's erasure record: who, when, status, counts per kind (admins)."""
    return _status(project_id, "patient", patient_id)


@app.delete(f"{_P}/sessions/<session_id>")
def erase_session(project_id: str, session_id: str) -> Response[Any]:
    """Erase every item of the session (admins): 204 when done inline, 202 + status URL as a job."""
    return _erase(project_id, "session", session_id)


@app.get(f"{_P}/sessions/<session_id>/erasure")
def session_erasure(project_id: str, session_id: str) -> Response[str]:
    """The session's erasure record (admins)."""
    return _status(project_id, "session", session_id)


@app.get(f"{_P}/export")
def export_project(project_id: str, include: Include = None) -> Response[str]:
    """The project as JSON Lines: a manifest line with counts, then one line per item (admins)."""
    body = export.export_project(deps, project_id=project_id, include_flow_log=include == "flow_log")
    metrics.add_metric(name="Exports", unit="Count", value=1)
    return Response(
        status_code=200, content_type="application/x-ndjson", body=body,
        headers={"Cache-Control": "no-store",
                 "Content-Disposition": f'attachment; filename="{project_id}-export.jsonl"'},
    )


@app.delete(_P, responses={
    202: {"description": "removal running as a job: poll status_url", "content": {"application/json": {}}},
    204: {"description": "the project was removed (or had been already)"},
})
def remove_project(project_id: str, confirm: Confirm = None) -> Response[Any]:
    """Remove every item of the project and its reminder schedules (platform operators; take an
    export first): 204 when done inline, 202 + status URL as a job; 409 while an erasure runs."""
    if not PATH_PARAMETER_RE.fullmatch(project_id):
        raise ProjectNotFound(f"unknown project {project_id}")
    record = removal.request_removal(deps, project_id=project_id, confirm=confirm, actor=current_caller(app).user_id)
    if record.status == "done":
        metrics.add_metric(name="ProjectRemovals", unit="Count", value=1)
        return Response(status_code=204, body=None)
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON,
        body={"status": record.status, "status_url": record.status_path(), "removal": record.model_dump(mode="json")},
        headers={"Location": record.status_path()},
    )


@app.get(f"{_P}/removal")
def project_removal(project_id: str) -> Response[str]:
    """The project's latest removal record: who, when, status, counts per kind (platform operators)."""
    if not PATH_PARAMETER_RE.fullmatch(project_id):
        raise ProjectNotFound(f"unknown project {project_id}")
    return model_response(removal.get_removal(deps, project_id=project_id))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)
