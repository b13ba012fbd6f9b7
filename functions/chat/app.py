"""Chat function: ``POST /v1/projects/{project_id}/sessions/{session_id}/messages`` (members).

Thin handler: the request becomes a :class:`~agent_memory.http.requests.ChatTurn`, answered by
``agent_memory.chat.turn.handle_message``. With an ``Idempotency-Key`` the turn runs under
Powertools idempotency: the turn is the stored payload and the ``ChatResult`` the stored answer
(``PydanticSerializer``), so a retry returns the first answer and writes nothing. With SnapStart,
everything at module level (including the anthropic import made by ``build_chat_deps`` when the
provider is anthropic) is in the snapshot.
"""

# No ``from __future__ import annotations`` here: the route below is wrapped by
# ``tracer.capture_method``, whose wrapper's ``__globals__`` are the tracer module's, so the
# event handler could not resolve a string annotation ``"ChatRequest"`` and would treat the
# body model as a (missing) query parameter -> every POST answered 422 "query.body".
import time
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.adapters.llm.deadline import deadline_from_context
from agent_memory.chat.turn import ChatResult, handle_message
from agent_memory.config import get_settings
from agent_memory.domain.errors import Forbidden
from agent_memory.domain.ids import CHAT_IDEMPOTENCY_PREFIX
from agent_memory.http.requests import ChatRequest, ChatTurn, idempotency_key
from agent_memory.http.routes import CHAT_ROUTE, current_caller, guarded_resolver
from agent_memory.observability import logger, metrics
from agent_memory.tracing import tracer
from agent_memory.wiring import build_chat_deps, build_members

settings = get_settings()
deps = build_chat_deps(settings)
members = build_members(settings)
# The turn reads the asker's membership in its own BatchGetItem (no GetItem by the guard); the
# guard reads it only for a request it refuses before the turn runs (403 before 400 / 422).
app = guarded_resolver(members=members, idempotency=True, deferred=frozenset({CHAT_ROUTE}))

#: What a replay answers in place of the stored reply when its caller is no longer a member.
NOT_A_MEMBER = object()


def replay_only_to_members(response: Any, idempotent_data: DataRecord) -> Any:
    """Idempotency response hook: a stored reply is returned only while the caller is still a
    member of the project (one GetItem, on replays only: the turn itself reads the membership in
    its BatchGetItem, a replay runs no turn). An exception raised here would be reported by
    Powertools as a persistence failure, so the refusal is a marker :func:`post_message` turns
    into 403."""
    project_id = str((app.current_event.path_parameters or {}).get("project_id"))
    if members.get_member(project_id, current_caller(app).user_id) is None:
        return NOT_A_MEMBER
    return response


# The key is the hash of (project, session, user, Idempotency-Key) and the records carry a fixed
# prefix, so an erasure can find a turn's record from its message (domain.ids.chat_idempotency_record_id).
idempotency_config = IdempotencyConfig(
    event_key_jmespath="key_hash",
    payload_validation_jmespath="[content, patient_id]",
    expires_after_seconds=24 * 3600,
    response_hook=replay_only_to_members,
)
persistence = DynamoDBPersistenceLayer(table_name=settings.idempotency_table_name())


@idempotent_function(
    data_keyword_argument="turn",
    persistence_store=persistence,
    key_prefix=CHAT_IDEMPOTENCY_PREFIX,
    config=idempotency_config,
    output_serializer=PydanticSerializer(model=ChatResult),
)
def idempotent_turn(turn: ChatTurn) -> ChatResult:
    """The turn behind an ``Idempotency-Key``: a retry returns the first answer, writes nothing."""
    return run_turn(turn)


def run_turn(turn: ChatTurn) -> ChatResult:
    """One turn, and one metric per business event: the turn, each routed intent, history weeks
    loaded and prompt tokens by layer (counts only, never text)."""
    result = handle_message(
        deps, project_id=turn.project_id, session_id=turn.session_id, user_id=turn.user_id,
        content=turn.content, patient_id=turn.patient_id, deadline=turn.deadline, idempotency_hash=turn.key_hash,
    )
    metrics.add_metric(name="ChatTurns", unit="Count", value=1)
    for intent in result.intents:
        metrics.add_metric(name=f"IntentRouted_{intent}", unit="Count", value=1)
    for call in result.calls:
        metrics.add_metric(name="HistoryWeeksLoaded", unit="Count", value=call.history_weeks)
        if call.history_tool_weeks:
            # A question the router did not send to history, answered through read_history.
            metrics.add_metric(name="HistoryToolWeeksRead", unit="Count", value=call.history_tool_weeks)
        for layer, tokens in call.layers.items():
            metrics.add_metric(name=f"PromptTokens_{layer}", unit="Count", value=tokens)
    if result.truncated:
        metrics.add_metric(name="RepliesTruncated", unit="Count", value=1)
    return result


def deadline() -> float:
    """The ``time.monotonic()`` instant by which the LLM must have answered this request."""
    return deadline_from_context(
        app.lambda_context,
        started_monotonic=app.context.get("started", time.monotonic()),
        api_gateway_timeout_s=settings.api_gateway_timeout_s,
        reserve_s=settings.response_reserve_s,
    )


@app.post("/v1/projects/<project_id>/sessions/<session_id>/messages")
@tracer.capture_method(capture_response=False)
def post_message(project_id: str, session_id: str, body: ChatRequest) -> dict[str, Any]:
    """Send a message (members); the session is created on first use."""
    turn = ChatTurn.of(
        project_id, session_id, body, user_id=current_caller(app).user_id,
        key=idempotency_key(app.current_event.headers), deadline=deadline(),
    )
    result = idempotent_turn(turn=turn) if turn.key else run_turn(turn)
    if result is NOT_A_MEMBER:
        raise Forbidden(f"you are not a member of project {project_id}")
    return result.model_dump(mode="json")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    app.append_context(started=time.monotonic())
    idempotency_config.register_lambda_context(context)
    return app.resolve(event, context)
