"""Chat function: ``POST /v1/projects/{project_id}/sessions/{session_id}/messages``.

Thin handler: parse, call ``agent_memory.chat.turn.handle_message``, return its model.
With SnapStart, everything at module level (including the anthropic import made by
``build_chat_deps`` when the provider is anthropic) is in the snapshot.
"""

# No ``from __future__ import annotations`` here: the route below is wrapped by
# ``tracer.capture_method``, whose wrapper's ``__globals__`` are the tracer module's, so the
# event handler could not resolve a string annotation ``"ChatRequest"`` and would treat the
# body model as a (missing) query parameter -> every POST answered 422 "query.body".
import time
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.adapters.llm.deadline import deadline_from_context
from agent_memory.chat.turn import ChatResult, handle_message
from agent_memory.config import get_settings
from agent_memory.domain.ids import idempotency_hash
from agent_memory.http.auth import authorize, caller_from_event
from agent_memory.http.errors import error_response, register_error_handlers
from agent_memory.http.requests import ChatRequest
from agent_memory.http.routes import route_guard
from agent_memory.observability import logger, metrics
from agent_memory.tracing import tracer
from agent_memory.wiring import build_chat_deps

settings = get_settings()
deps = build_chat_deps(settings)
app = APIGatewayHttpResolver(enable_validation=True)
register_error_handlers(app)

idempotency_config = IdempotencyConfig(
    event_key_jmespath="[project_id, session_id, user_id, key]",
    payload_validation_jmespath="[content, patient_id]",
    expires_after_seconds=24 * 3600,
)
persistence = DynamoDBPersistenceLayer(table_name=settings.idempotency_table or "unset")


@idempotent_function(data_keyword_argument="turn", persistence_store=persistence, config=idempotency_config)
def idempotent_turn(turn: dict[str, Any]) -> dict[str, Any]:
    """The turn behind an ``Idempotency-Key``: a retry returns the first answer, writes nothing."""
    return run_turn(turn)


def run_turn(turn: dict[str, Any]) -> dict[str, Any]:
    """One turn from a plain dict (the idempotency payload); returns the response body."""
    result = handle_message(
        deps,
        project_id=turn["project_id"],
        session_id=turn["session_id"],
        user_id=turn["user_id"],
        content=turn["content"],
        patient_id=turn["patient_id"],
        deadline=turn["deadline"],
        idempotency_hash=turn.get("key_hash"),
    )
    _record_metrics(result)
    return result.model_dump(mode="json")


def _record_metrics(result: ChatResult) -> None:
    """One metric per business event: the turn, each routed intent, history weeks loaded and
    prompt tokens by layer (counts only, never text)."""
    metrics.add_metric(name="ChatTurns", unit="Count", value=1)
    for intent in result.intents:
        metrics.add_metric(name=f"IntentRouted_{intent}", unit="Count", value=1)
    for call in result.calls:
        metrics.add_metric(name="HistoryWeeksLoaded", unit="Count", value=call.history_weeks)
        for layer, tokens in call.layers.items():
            metrics.add_metric(name=f"PromptTokens_{layer}", unit="Count", value=tokens)
    if result.truncated:
        metrics.add_metric(name="RepliesTruncated", unit="Count", value=1)


@app.post("/v1/projects/<project_id>/sessions/<session_id>/messages")
@tracer.capture_method(capture_response=False)
def post_message(project_id: str, session_id: str, body: ChatRequest) -> dict[str, Any]:
    """Send a message; the session is created on first use."""
    event = app.current_event
    key = event.headers.get("idempotency-key") or event.headers.get("Idempotency-Key")
    caller = caller_from_event(event)
    authorize(caller, project_id)
    user_id = caller.user_id
    turn: dict[str, Any] = {
        "project_id": project_id,
        "session_id": session_id,
        "user_id": user_id,
        "content": body.content,
        "patient_id": body.patient_id,
        "deadline": deadline_from_context(
            app.lambda_context,
            started_monotonic=app.context.get("started", time.monotonic()),
            api_gateway_timeout_s=settings.api_gateway_timeout_s,
            reserve_s=settings.response_reserve_s,
        ),
    }
    if not key:
        return run_turn(turn)
    if len(key) > 128:
        return error_response(app, 400, "invalid_idempotency_key", "Idempotency-Key is longer than 128 characters")  # type: ignore[return-value]
    turn["key"] = key
    turn["key_hash"] = idempotency_hash(project_id, session_id, user_id, key)
    try:
        return idempotent_turn(turn=turn)  # type: ignore[no-any-return]
    except IdempotencyValidationError:
        return error_response(  # type: ignore[return-value]
            app, 422, "idempotency_key_reused", "this Idempotency-Key was used with a different body"
        )
    except IdempotencyAlreadyInProgressError:
        return error_response(  # type: ignore[return-value]
            app, 409, "request_in_progress", "a request with this Idempotency-Key is in progress",
            retryable=True, retry_after_s=2,
        )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@route_guard(app)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    app.append_context(started=time.monotonic())
    idempotency_config.register_lambda_context(context)
    return app.resolve(event, context)
