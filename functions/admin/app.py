"""Admin function: the hot-memory editor (seed 001 section 5.3, the kill switch), its revisions,
the distillation review queue, the audit trail, weekly report corrections, and the editor page.

Why a function of its own: it is the only HTTP path that WRITES the MemoryTable, so it alone gets
write permissions there (and nothing on the sessions or flow-log tables, no secret, no LLM); the
read-only ApiFunction stays read-only. Thin handler: every route is one call into
``agent_memory.hot_memory.admin``; who may call what is ``agent_memory.http.routes``.
"""

# No ``from __future__ import annotations``: the event handler resolves the body and query models
# from these annotations at runtime.
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ValidationError

from agent_memory.adapters.dynamo.admin import AdminRepository
from agent_memory.config import get_settings
from agent_memory.domain.errors import InvalidInput
from agent_memory.hot_memory import admin
from agent_memory.http.admin_requests import MemoryPutRequest, ReasonRequest, ReportCorrectionRequest
from agent_memory.http.errors import register_error_handlers
from agent_memory.http.routes import current_caller, route_guard
from agent_memory.observability import logger, metrics
from agent_memory.wiring import bind

settings = get_settings()
bind(settings)
store = AdminRepository()
app = APIGatewayHttpResolver(enable_validation=True)
register_error_handlers(app)

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

Limit = Annotated[int, Query(ge=1, le=100)]
Cursor = Annotated[str | None, Query(max_length=512)]
ReasonQuery = Annotated[str | None, Query(max_length=1000)]


def now() -> datetime:
    """The clock (a test may replace it)."""
    return datetime.now(UTC)


def _json(model: BaseModel, *, version: int | None = None) -> Response[str]:
    headers = {"Cache-Control": "no-store"}
    if version is not None:
        headers["ETag"] = admin.etag(version)
    return Response(
        status_code=200, content_type=content_types.APPLICATION_JSON, body=model.model_dump_json(), headers=headers
    )


def _if_match() -> int:
    return admin.parse_if_match(app.current_event.headers.get("if-match"))


def _optional_if_match() -> int | None:
    value = app.current_event.headers.get("if-match")
    return admin.parse_if_match(value) if value else None


def _reason_from_body() -> str | None:
    """The optional ``{"reason": ...}`` body of the POST routes (no body = no reason)."""
    raw = app.current_event.decoded_body
    if not raw or not raw.strip():
        return None
    try:
        return ReasonRequest.model_validate(json.loads(raw)).reason
    except (ValueError, ValidationError):
        raise InvalidInput('the body must be {"reason": string or null}') from None


def _changed(result: admin.ChangeResult, metric: str) -> Response[str]:
    if result.changed:
        metrics.add_metric(name=metric, unit="Count", value=1)
        logger.info(
            "hot memory changed",
            extra={
                "project_id": result.memory.project_id,
                "version": result.memory.version,
                "tokens": result.memory.tokens,
                "added": len(result.added_line_ids),
                "removed": len(result.removed_line_ids),
            },
        )
    return _json(result, version=result.memory.version)


# ---------------------------------------------------------------------------- editor page
@app.get("/admin")
def editor_page() -> Response[str]:
    """The hot-memory editor (static HTML; its data calls carry the bearer token)."""
    return Response(status_code=200, content_type="text/html; charset=utf-8", body=EDITOR_HTML, headers=PAGE_HEADERS)


@app.get("/admin/editor.js")
def editor_script() -> Response[str]:
    """The editor's script (vanilla JS, no build step)."""
    return Response(
        status_code=200, content_type="text/javascript; charset=utf-8", body=EDITOR_JS, headers=PAGE_HEADERS
    )


# ----------------------------------------------------------------------------- hot memory
@app.put(f"{_P}/memory")
def put_memory(project_id: str, body: MemoryPutRequest) -> Response[str]:
    """Replace the document (``If-Match``: the version edited). Unchanged lines keep their
    provenance; new or edited lines become admin lines. 409 if someone saved first, 422
    ``over_token_cap`` over the cap (nothing stored), 428 without ``If-Match``."""
    caller = current_caller(app)
    result = admin.put_memory(
        store, project_id, markdown=body.markdown, reason=body.reason, if_match=_if_match(),
        actor=caller.user_id, now=now(), cap=settings.hot_memory_token_cap,
    )
    return _changed(result, "HotMemoryAdminEdits")


@app.delete(f"{_P}/memory/lines/<line_id>")
def delete_line(project_id: str, line_id: str, reason: ReasonQuery = None) -> Response[str]:
    """The kill switch: delete one line, AI or admin (``If-Match``; optional ``?reason=``)."""
    caller = current_caller(app)
    result = admin.delete_line(
        store, project_id, line_id, reason=reason, if_match=_if_match(), actor=caller.user_id,
        now=now(), cap=settings.hot_memory_token_cap,
    )
    return _changed(result, "HotMemoryLinesDeleted")


@app.get(f"{_P}/memory/revisions")
def list_revisions(project_id: str, limit: Limit = 20, cursor: Cursor = None) -> Response[str]:
    """Stored versions, newest first (``?limit=&cursor=``; ``next_cursor`` for the next page)."""
    return _json(admin.list_revisions(store, project_id, limit=limit, cursor=cursor))


@app.get(f"{_P}/memory/revisions/<version>")
def get_revision(project_id: str, version: int) -> Response[str]:
    """One version: its Markdown, lines and diff against the version before it."""
    view = admin.get_revision(store, project_id, version)
    return _json(view, version=view.version)


@app.post(f"{_P}/memory/revisions/<version>/restore")
def restore_revision(project_id: str, version: int) -> Response[str]:
    """A NEW version equal to ``version`` (``If-Match``: the current version)."""
    caller = current_caller(app)
    result = admin.restore_revision(
        store, project_id, version, reason=_reason_from_body(), if_match=_if_match(), actor=caller.user_id,
        now=now(), cap=settings.hot_memory_token_cap,
    )
    return _changed(result, "HotMemoryRestores")


@app.get(f"{_P}/memory/review")
def list_review(
    project_id: str, status: Annotated[str | None, Query(pattern="^(pending|approved|rejected)$")] = None
) -> Response[str]:
    """The distillation candidates held for review (``?status=pending`` to filter)."""
    items = admin.list_review(store, project_id, status=status)
    return _json(admin.Page[admin.ReviewEntry](items=items))


@app.post(f"{_P}/memory/review/<item_id>/approve")
def approve_review(project_id: str, item_id: str) -> Response[str]:
    """Add the candidate as an admin line (same cap check as every write; ``If-Match`` optional)."""
    caller = current_caller(app)
    result = admin.approve_review(
        store, project_id, item_id, reason=_reason_from_body(), if_match=_optional_if_match(),
        actor=caller.user_id, now=now(), cap=settings.hot_memory_token_cap,
    )
    metrics.add_metric(name="ReviewApproved", unit="Count", value=1)
    return _changed(result, "HotMemoryAdminEdits")


@app.post(f"{_P}/memory/review/<item_id>/reject")
def reject_review(project_id: str, item_id: str) -> Response[str]:
    """Reject the candidate (the hot memory is not touched)."""
    caller = current_caller(app)
    decided = admin.reject_review(
        store, project_id, item_id, reason=_reason_from_body(), actor=caller.user_id, now=now()
    )
    metrics.add_metric(name="ReviewRejected", unit="Count", value=1)
    return _json(decided)


@app.get(f"{_P}/memory/audit")
def list_audit(project_id: str, limit: Limit = 50, cursor: Cursor = None) -> Response[str]:
    """Admin changes, newest first: who, when, what, why."""
    return _json(admin.list_audit(store, project_id, limit=limit, cursor=cursor))


# ---------------------------------------------------------------------------- history book
@app.put(f"{_P}/reports/<iso_week>")
def correct_report(project_id: str, iso_week: str, body: ReportCorrectionRequest) -> Response[str]:
    """Correct a weekly report (``If-Match``: its revision); the previous text is kept."""
    caller = current_caller(app)
    view = admin.correct_report(
        store, project_id, iso_week, summary=body.summary, reason=body.reason, if_match=_if_match(),
        actor=caller.user_id, now=now(),
    )
    if view.changed:
        metrics.add_metric(name="ReportsCorrected", unit="Count", value=1)
    return _json(view, version=view.revision)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
@route_guard(app)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)
