"""API function: the routes that need no LLM (health, context inspection).

This module must never import ``anthropic`` (a test enforces it) nor the X-Ray SDK, so its
cold start stays close to ``import boto3`` alone (``make bench``: import_ratio_no_llm_handler).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.api.auth import authorize, caller_from_event
from agent_memory.api.errors import register_error_handlers
from agent_memory.config import get_settings
from agent_memory.context_view import turn_context
from agent_memory.observability import logger, metrics
from agent_memory.wiring import bind

settings = get_settings()
repo = bind(settings)
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


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)
