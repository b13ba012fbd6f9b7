"""Admin function: the hot-memory editor and its kill switch (delete any line, AI or admin), its
revisions, the distillation review queue, the audit trail, weekly report corrections, the editor
page, and the projects and their members (create a project, add / replace / remove members).

Why a function of its own: it is the only HTTP path that WRITES the MemoryTable, so it alone gets
write permissions there (and nothing on the sessions or flow-log tables, no secret, no LLM); the
read-only ApiFunction stays read-only. Thin handler: every route is one call into
``agent_memory.hot_memory`` (editor, revisions, review) or ``agent_memory.history.reports``; who
may call what is ``agent_memory.http.routes`` (the memory and report routes: the project's admins; projects
and members: operators, admins and members as the table says).
"""

# No ``from __future__ import annotations``: the event handler resolves the body and query models
# from these annotations at runtime.
from pathlib import Path
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.config import get_settings
from agent_memory.domain.records import Page, ReviewEntry
from agent_memory.history import corrections
from agent_memory.hot_memory import editor, review, revisions
from agent_memory.http.admin_requests import (
    ApproveRequest,
    Cursor,
    MemoryPutRequest,
    ReasonQuery,
    ReportCorrectionRequest,
    ReviewStatus,
    change_response,
    if_match,
    optional_if_match,
    reason_from_body,
)
from agent_memory.http.powertools import Response
from agent_memory.http.project_requests import CreateProjectRequest, PutMemberRequest, UpdateProjectRequest
from agent_memory.http.requests import Limit
from agent_memory.http.responses import created, etag, model_response
from agent_memory.http.routes import current_caller, guarded_resolver
from agent_memory.observability import logger, metrics
from agent_memory.projects import members
from agent_memory.wiring import build_admin_deps

settings = get_settings()
deps = build_admin_deps(settings)
member_store = deps.members
app = guarded_resolver(members=member_store)

_P = "/v1/projects/<project_id>"
_STATIC = Path(__file__).resolve().parent / "static"
EDITOR_HTML = (_STATIC / "admin.html").read_text(encoding="utf-8")
EDITOR_JS = (_STATIC / "editor.js").read_text(encoding="utf-8")
#: The page runs only its own script; data is rendered with textContent (never innerHTML).
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


# ---------------------------------------------------------------------------- editor page
@app.get("/admin", responses={200: {"description": "the editor page", "content": {"text/html": {}}}})
def editor_page() -> Response[str]:
    """The hot-memory editor (public: static HTML; its data calls carry the bearer token)."""
    return Response(status_code=200, content_type="text/html; charset=utf-8", body=EDITOR_HTML, headers=PAGE_HEADERS)


@app.get(
    "/admin/editor.js", responses={200: {"description": "the editor's script", "content": {"text/javascript": {}}}}
)
def editor_script() -> Response[str]:
    """The editor's script (public; vanilla JS, no build step)."""
    return Response(
        status_code=200, content_type="text/javascript; charset=utf-8", body=EDITOR_JS, headers=PAGE_HEADERS
    )


# ----------------------------------------------------------------------------- hot memory
@app.put(f"{_P}/memory")
def put_memory(project_id: str, body: MemoryPutRequest) -> Response[str]:
    """Replace the document (admins; ``If-Match``: the version edited). Unchanged lines keep their
    provenance; new or edited lines become admin lines. 409 if someone saved first, 422
    ``over_token_cap`` over the cap (nothing stored), 428 without ``If-Match``."""
    result = editor.put_memory(
        deps.store, project_id, markdown=body.markdown, reason=body.reason, if_match=if_match(app),
        actor=current_caller(app).user_id, now=deps.clock(), cap=deps.hot_memory_token_cap,
    )
    return change_response(result, "HotMemoryAdminEdits")


@app.delete(f"{_P}/memory/lines/<line_id>")
def delete_line(project_id: str, line_id: str, reason: ReasonQuery = None) -> Response[str]:
    """The kill switch: delete one line, AI or admin (admins; ``If-Match``; optional ``?reason=``)."""
    result = editor.delete_line(
        deps.store, project_id, line_id, reason=reason, if_match=if_match(app),
        actor=current_caller(app).user_id, now=deps.clock(), cap=deps.hot_memory_token_cap,
    )
    return change_response(result, "HotMemoryLinesDeleted")


@app.get(f"{_P}/memory/revisions")
def list_revisions(project_id: str, limit: Limit = 20, cursor: Cursor = None) -> Response[str]:
    """Stored versions, newest first (admins; ``?limit=&cursor=``; ``next_cursor`` for the next page)."""
    return model_response(revisions.list_revisions(deps.store, project_id, limit=limit, cursor=cursor))


@app.get(f"{_P}/memory/revisions/<version>")
def get_revision(project_id: str, version: int) -> Response[str]:
    """One version: its Markdown, lines and diff against the version before it (admins)."""
    view = revisions.get_revision(deps.store, project_id, version)
    return model_response(view, etag=etag(view.version))


@app.post(f"{_P}/memory/revisions/<version>/restore")
def restore_revision(project_id: str, version: int) -> Response[str]:
    """A NEW version equal to ``version`` (admins; ``If-Match``: the current version)."""
    result = revisions.restore_revision(
        deps.store, project_id, version, reason=reason_from_body(app), if_match=if_match(app),
        actor=current_caller(app).user_id, now=deps.clock(), cap=deps.hot_memory_token_cap,
    )
    return change_response(result, "HotMemoryRestores")


@app.get(f"{_P}/memory/review")
def list_review(project_id: str, status: ReviewStatus = None) -> Response[str]:
    """The distillation candidates held for review (admins; ``?status=pending`` to filter)."""
    items = review.list_review(deps.store, project_id, status=status)
    return model_response(Page[ReviewEntry](items=items))




@app.post(
    f"{_P}/memory/review/<item_id>/approve",
    description=(
        "Add the candidate as an admin line (same cap check as every write; `If-Match` optional). An item that "
        "would relax System Rules needs `\"confirm\": true`: without it 422 `confirmation_required` names the "
        "rules (`rules`: line id and text) and `current_version`."
    ),
)
def approve_review(project_id: str, item_id: str, body: ApproveRequest | None = None) -> Response[str]:
    """Add the candidate as an admin line (admins; ``If-Match`` optional); one that would relax System
    Rules only with ``"confirm": true`` (see ``review.approve_review``)."""
    request = body or ApproveRequest()
    result = review.approve_review(
        deps.store, project_id, item_id, reason=request.reason, if_match=optional_if_match(app),
        actor=current_caller(app).user_id, now=deps.clock(), cap=deps.hot_memory_token_cap, confirm=request.confirm,
    )
    metrics.add_metric(name="ReviewApproved", unit="Count", value=1)
    return change_response(result, "HotMemoryAdminEdits")


@app.post(f"{_P}/memory/review/<item_id>/reject")
def reject_review(project_id: str, item_id: str) -> Response[str]:
    """Reject the candidate (admins; the hot memory is not touched)."""
    decided = review.reject_review(
        deps.store, project_id, item_id, reason=reason_from_body(app), actor=current_caller(app).user_id,
        now=deps.clock(),
    )
    metrics.add_metric(name="ReviewRejected", unit="Count", value=1)
    return model_response(decided)


@app.get(f"{_P}/memory/audit")
def list_audit(project_id: str, limit: Limit = 50, cursor: Cursor = None) -> Response[str]:
    """Admin changes, newest first: who, when, what, why (admins)."""
    return model_response(editor.list_audit(deps.store, project_id, limit=limit, cursor=cursor))


# ---------------------------------------------------------------------------- history book
@app.put(f"{_P}/reports/<iso_week>")
def correct_report(project_id: str, iso_week: str, body: ReportCorrectionRequest) -> Response[str]:
    """Correct a weekly report (admins; ``If-Match``: its revision); the previous text is kept."""
    view = corrections.correct_report(
        deps.store, project_id, iso_week, summary=body.summary, reason=body.reason, if_match=if_match(app),
        actor=current_caller(app).user_id, now=deps.clock(),
    )
    if view.changed:
        metrics.add_metric(name="ReportsCorrected", unit="Count", value=1)
    return model_response(view, etag=etag(view.revision))


# ------------------------------------------------------------------------ projects and members
@app.post("/v1/projects", status_code=201)
def create_project(body: CreateProjectRequest) -> Response[dict[str, Any]]:
    """Create a project (platform operators; 201); 409 if the id exists, 422 for an unknown time
    zone or a bad id. It has no members yet: add its first admin with PUT .../members/{user_id}."""
    project = members.create_project(
        member_store, project_id=body.project_id, name=body.name, time_zone=body.time_zone, kind=body.kind,
        now=deps.clock(),
    )
    metrics.add_metric(name="ProjectsCreated", unit="Count", value=1)
    return created(project.model_dump(mode="json"))


@app.get(f"{_P}")
def get_project(project_id: str) -> Response[str]:
    """The project: name, time zone, kind, clinical data source (members)."""
    return model_response(members.get_project(member_store, project_id))


@app.patch(f"{_P}")
def update_project(project_id: str, body: UpdateProjectRequest) -> Response[str]:
    """Change the name, the time zone or the clinical data source (admins; fields left out stay).
    The REDCap token is named by its Secrets Manager secret, never sent here."""
    project = members.update_project(
        member_store, project_id, name=body.name, time_zone=body.time_zone,
        clinical_data=body.clinical_data.to_domain() if body.clinical_data else None,
        token_secret_prefix=settings.clinical_token_secret_prefix,
    )
    return model_response(project)


@app.get(f"{_P}/members")
def list_members(project_id: str) -> Response[str]:
    """The project's members with their project and study roles (members)."""
    return model_response(members.list_members(member_store, project_id))


@app.put(f"{_P}/members/<user_id>", responses={
    200: {"description": "the membership was replaced", "content": {"application/json": {}}},
    201: {"description": "the member was added", "content": {"application/json": {}}},
})
def put_member(project_id: str, user_id: str, body: PutMemberRequest) -> Response[str]:
    """Add (201) or replace (200) a member (the project's admins, or a platform operator: the first
    admin); 409 when it would demote the last admin."""
    change = members.put_member(
        member_store, project_id, user_id, project_role=body.project_role, study_role=body.study_role,
        display_name=body.display_name, actor=current_caller(app).user_id, now=deps.clock(),
    )
    response = model_response(change.member)
    if change.created:
        response.status_code = 201
        metrics.add_metric(name="MembersAdded", unit="Count", value=1)
    return response


@app.delete(f"{_P}/members/<user_id>", status_code=204)
def remove_member(project_id: str, user_id: str) -> Response[str]:
    """Remove a member (admins; 204): their next request is refused. 409 for the last admin."""
    members.remove_member(member_store, project_id, user_id)
    metrics.add_metric(name="MembersRemoved", unit="Count", value=1)
    return Response(status_code=204, body="", headers={"Cache-Control": "no-store"})


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)
