"""The governance function's routes: erasure of a patient or a session, the project export
(project admins), and the removal of a whole project (platform operators).

Why a function of its own: it is the only HTTP path that DELETES from the sessions table, the
flow log and the idempotency table, and the only one that may read the flow log (for an export
with ``include=flow_log``), so those grants sit on this role alone. Each route is one call into
``agent_memory.governance``. docs/architecture.md, "Data governance".
"""

# No ``from __future__ import annotations``: Powertools resolves the query and dependency models
# from these annotations at runtime.
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from agent_memory.domain.errors import ProjectNotFound
from agent_memory.domain.governance import ErasureKind
from agent_memory.governance import erasure, export, removal
from agent_memory.governance.erasure import GovernanceDeps
from agent_memory.http.guard import PATH_PARAMETER_RE, CurrentCaller, guarded_resolver, member_lookup
from agent_memory.http.powertools import APIGatewayHttpResolver, Depends, Query, Response, content_types
from agent_memory.http.responses import model_response
from agent_memory.http.routing import Routes
from agent_memory.observability import metrics
from agent_memory.ports import MemberReader

routes = Routes()
_P = "/v1/projects/<project_id>"

Confirm = Annotated[str | None, Query(description="the project's id again: confirms the removal")]
Include = Annotated[Literal["flow_log"] | None, Query(description="flow_log: add the flow log (verbatim messages)")]


@dataclass(frozen=True)
class GovernanceFunctionDeps:
    """The governance function's collaborators (built by ``wiring.build_governance_function``):
    the governance use cases' and the guard's membership lookup."""

    governance: GovernanceDeps
    members: MemberReader


def function_deps() -> GovernanceFunctionDeps:
    """The function's collaborators: given to the resolver by :func:`governance_app`."""
    raise RuntimeError("the governance function's collaborators are given by governance_app()")


Deps = Annotated[GovernanceFunctionDeps, Depends(function_deps)]


def _erase(deps: GovernanceFunctionDeps, project_id: str, kind: ErasureKind, target: str, actor: str) -> Response[Any]:
    record = erasure.request_erasure(deps.governance, project_id=project_id, kind=kind, target_id=target, actor=actor)
    if record.status == "done":
        metrics.add_metric(name="Erasures", unit="Count", value=1)
        return Response(status_code=204, body=None)
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON,
        body={"status": record.status, "status_url": record.status_path(), "erasure": record.model_dump(mode="json")},
        headers={"Location": record.status_path()},
    )


def _status(deps: GovernanceFunctionDeps, project_id: str, kind: ErasureKind, target: str) -> Response[str]:
    return model_response(erasure.get_erasure(deps.governance, project_id=project_id, kind=kind, target_id=target))


#: What an erasure answers: done inline, or running as a job.
ERASURE_RESPONSES: dict[int, Any] = {
    202: {"description": "erasure running as a job: poll status_url", "content": {"application/json": {}}},
    204: {"description": "erased (or erased already)"},
}


@routes.delete(f"{_P}/patients/<patient_id>", "admin", responses=ERASURE_RESPONSES)
def erase_patient(project_id: str, patient_id: str, caller: CurrentCaller, deps: Deps) -> Response[Any]:
    """Erase every item of the patient (admins): 204 when done inline, 202 + status URL as a job."""
    return _erase(deps, project_id, "patient", patient_id, caller.user_id)


@routes.get(f"{_P}/patients/<patient_id>/erasure", "admin")
def patient_erasure(project_id: str, patient_id: str, deps: Deps) -> Response[str]:
    """The patient's erasure record: who, when, status, counts per kind (admins)."""
    return _status(deps, project_id, "patient", patient_id)


@routes.delete(f"{_P}/sessions/<session_id>", "admin", responses=ERASURE_RESPONSES)
def erase_session(project_id: str, session_id: str, caller: CurrentCaller, deps: Deps) -> Response[Any]:
    """Erase every item of the session (admins): 204 when done inline, 202 + status URL as a job."""
    return _erase(deps, project_id, "session", session_id, caller.user_id)


@routes.get(f"{_P}/sessions/<session_id>/erasure", "admin")
def session_erasure(project_id: str, session_id: str, deps: Deps) -> Response[str]:
    """The session's erasure record (admins)."""
    return _status(deps, project_id, "session", session_id)


@routes.get(
    f"{_P}/export", "admin",
    rules={413: "the export is over 5 MB (Lambda's response limit)"},
    responses={200: {
        "description": "JSON Lines: a manifest line with counts, then one line per item",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }},
)
def export_project(project_id: str, deps: Deps, include: Include = None) -> Response[str]:
    """The project as JSON Lines: a manifest line with counts, then one line per item (admins)."""
    body = export.export_project(deps.governance, project_id=project_id, include_flow_log=include == "flow_log")
    metrics.add_metric(name="Exports", unit="Count", value=1)
    return Response(
        status_code=200, content_type="application/x-ndjson", body=body,
        headers={"Cache-Control": "no-store",
                 "Content-Disposition": f'attachment; filename="{project_id}-export.jsonl"'},
    )


@routes.delete(_P, "operator", responses={
    202: {"description": "removal running as a job: poll status_url", "content": {"application/json": {}}},
    204: {"description": "the project was removed (or had been already)"},
})
def remove_project(project_id: str, caller: CurrentCaller, deps: Deps, confirm: Confirm = None) -> Response[Any]:
    """Remove every item of the project and its reminder schedules (platform operators; take an
    export first): 204 when done inline, 202 + status URL as a job; 409 while an erasure runs."""
    if not PATH_PARAMETER_RE.fullmatch(project_id):
        raise ProjectNotFound(f"unknown project {project_id}")
    record = removal.request_removal(deps.governance, project_id=project_id, confirm=confirm, actor=caller.user_id)
    if record.status == "done":
        metrics.add_metric(name="ProjectRemovals", unit="Count", value=1)
        return Response(status_code=204, body=None)
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON,
        body={"status": record.status, "status_url": record.status_path(), "removal": record.model_dump(mode="json")},
        headers={"Location": record.status_path()},
    )


@routes.get(f"{_P}/removal", "operator")
def project_removal(project_id: str, deps: Deps) -> Response[str]:
    """The project's latest removal record: who, when, status, counts per kind (platform operators)."""
    if not PATH_PARAMETER_RE.fullmatch(project_id):
        raise ProjectNotFound(f"unknown project {project_id}")
    return model_response(removal.get_removal(deps.governance, project_id=project_id))


def governance_app(deps: GovernanceFunctionDeps) -> APIGatewayHttpResolver:
    """The governance function's event handler."""
    return guarded_resolver(routes, membership=member_lookup(deps.members), provide={function_deps: deps})
