"""API function: the routes that need no LLM (health, context inspection, the memory views).

This module must never import ``anthropic`` (a test enforces it) nor the X-Ray SDK, so its
cold start stays close to ``import boto3`` alone (``make bench``: import_ratio_no_llm_handler).
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.api.auth import authorize, caller_from_event
from agent_memory.api.errors import register_error_handlers
from agent_memory.config import get_settings
from agent_memory.context_view import turn_context
from agent_memory.data.activity_repository import ActivityRepository
from agent_memory.memory_view import ISO_WEEK_PATTERN, MAX_REPORTS, project_memory, project_reports
from agent_memory.observability import logger, metrics
from agent_memory.wiring import bind

settings = get_settings()
repo = bind(settings)
views = ActivityRepository()
app = APIGatewayHttpResolver(enable_validation=True)
register_error_handlers(app)


@app.get("/v1/health")
def health() -> dict[str, str]:
    """Liveness: 200 with the stage (no dependencies touched)."""
    return {"status": "ok", "stage": settings.stage}


@app.get("/v1/projects/<project_id>/sessions/<session_id>/messages/<message_id>/context")
def get_context(project_id: str, session_id: str, message_id: str) -> dict[str, Any]:
    """The blocks (name, tokens, text) that were sent to the LLM for that turn (admins only)."""
    authorize(caller_from_event(app.current_event), project_id, admin=True)
    return turn_context(repo, project_id, session_id, message_id)


@app.get("/v1/projects/<project_id>/memory")
def get_memory(project_id: str) -> Response[str]:
    """The hot memory (Markdown) and its lines with provenance; ``ETag`` is the version (members)."""
    authorize(caller_from_event(app.current_event), project_id)
    view = project_memory(views, project_id)
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=view.model_dump_json(),
        headers={"ETag": f'"{view.version}"', "Cache-Control": "no-store"},
    )


@app.get("/v1/projects/<project_id>/reports")
def get_reports(
    project_id: str,
    from_week: Annotated[str | None, Query(alias="from", pattern=ISO_WEEK_PATTERN)] = None,
    to_week: Annotated[str | None, Query(alias="to", pattern=ISO_WEEK_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_REPORTS)] = MAX_REPORTS,
) -> dict[str, Any]:
    """Weekly reports ``?from=YYYY-Www&to=YYYY-Www`` (both optional, inclusive), newest first (members)."""
    authorize(caller_from_event(app.current_event), project_id)
    return project_reports(views, project_id, from_week, to_week, limit=limit).model_dump(mode="json")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)
