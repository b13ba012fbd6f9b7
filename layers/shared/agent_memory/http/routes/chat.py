"""The chat function's route: ``POST /v1/projects/{project_id}/sessions/{session_id}/messages``
(members).

The request becomes a :class:`~agent_memory.http.requests.ChatTurn`, answered by
``agent_memory.chat.turn.handle_message``. With an ``Idempotency-Key`` the turn runs under
Powertools idempotency: the turn is the stored payload and the ``ChatResult`` the stored answer
(``PydanticSerializer``), so a retry returns the first answer and writes nothing.

Membership is decided once, by the route guard, on the turn's own read: the function's membership
source (:func:`turn_membership`) makes the turn's one BatchGetItem (``agent_memory.chat.read``),
the guard refuses a non-member on it (403 before any 400 / 422, nothing written), and the route
hands the read to the turn, which does not read again: a turn stays at one read and one write
(docs/architecture.md, "Request path"). A replay of a stored answer passes the same guard, so a
member removed since the first request is refused too.
"""

# No ``from __future__ import annotations``: Powertools resolves the route's body, header and
# dependency annotations at runtime.
import base64
import binascii
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from agent_memory.chat.read import TurnRead, read_turn
from agent_memory.chat.turn import ChatDeps, ChatResult, handle_message
from agent_memory.domain.errors import ProjectNotFound
from agent_memory.domain.ids import CHAT_IDEMPOTENCY_PREFIX
from agent_memory.http.deadline import deadline_from_context
from agent_memory.http.guard import (
    MAX_BODY_DEPTH,
    PATH_PARAMETER_RE,
    CurrentCaller,
    Membership,
    MembershipSource,
    body_depth,
    guarded_resolver,
    member_lookup,
)
from agent_memory.http.powertools import (
    APIGatewayHttpResolver,
    ApiGatewayResolver,
    Depends,
    NextMiddleware,
    Request,
    Response,
)
from agent_memory.http.requests import ChatRequest, ChatTurn, IdempotencyKey
from agent_memory.http.routing import Routes
from agent_memory.observability import metrics
from agent_memory.ports import MemberReader
from agent_memory.tracing import tracer

routes = Routes()


@dataclass(frozen=True)
class ChatFunctionDeps:
    """The chat function's collaborators (built by ``wiring.build_chat_function``).

    ``members``: the membership lookup for a request whose path the turn cannot read (a malformed
    session id, refused by the path gate right after); ``api_gateway_timeout_s`` /
    ``response_reserve_s``: the turn's deadline (``agent_memory.http.deadline``).
    """

    chat: ChatDeps
    members: MemberReader
    idempotency_table: str
    api_gateway_timeout_s: float
    response_reserve_s: float


class ChatTurns:
    """Runs one turn, under Powertools idempotency when the request has an ``Idempotency-Key``.

    The key is the hash of (project, session, user, Idempotency-Key) and the records carry a fixed
    prefix, so an erasure can find a turn's record from its message
    (``domain.ids.chat_idempotency_record_id``).
    """

    def __init__(self, deps: ChatFunctionDeps) -> None:
        # Imported here: the idempotency package loads boto3 for its DynamoDB store.
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
            idempotent_function,
        )
        from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer

        self.deps = deps
        self.config = IdempotencyConfig(
            event_key_jmespath="key_hash",
            payload_validation_jmespath="[content, patient_id]",
            expires_after_seconds=24 * 3600,
        )
        self._idempotent = idempotent_function(
            data_keyword_argument="turn",
            persistence_store=DynamoDBPersistenceLayer(table_name=deps.idempotency_table),
            key_prefix=CHAT_IDEMPOTENCY_PREFIX,
            config=self.config,
            output_serializer=PydanticSerializer(model=ChatResult),
        )(self._turn)

    @tracer.capture_method(capture_response=False)
    def run(self, turn: ChatTurn, read: TurnRead | None) -> ChatResult:
        """The turn's answer (a retry with the same key: the first answer, nothing written)."""
        result: ChatResult = self._idempotent(turn=turn, read=read) if turn.key else self._turn(turn=turn, read=read)
        return result

    def _turn(self, turn: ChatTurn, read: TurnRead | None) -> ChatResult:
        """One turn, and one metric per business event: the turn, each routed intent, history
        weeks loaded and prompt tokens by layer (counts only, never text)."""
        result = handle_message(
            self.deps.chat, project_id=turn.project_id, session_id=turn.session_id, user_id=turn.user_id,
            content=turn.content, patient_id=turn.patient_id, deadline=turn.deadline,
            idempotency_hash=turn.key_hash, prefetched=read,
        )
        _count(result)
        return result

    def invocation(self, app: ApiGatewayResolver, next_middleware: NextMiddleware) -> Response:
        """Middleware: the Lambda context for the idempotency records (an in-progress record of a
        container that died expires with the function's timeout) and the turn's ``deadline``."""
        self.config.register_lambda_context(app.lambda_context)
        app.append_context(deadline=deadline_from_context(
            app.lambda_context,
            started_monotonic=float(app.context.get("received_at") or time.monotonic()),
            api_gateway_timeout_s=self.deps.api_gateway_timeout_s,
            reserve_s=self.deps.response_reserve_s,
        ))
        return next_middleware(app)


def _count(result: ChatResult) -> None:
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


def chat_turns() -> ChatTurns:
    """The function's turn runner: given to the resolver by :func:`chat_app`."""
    raise RuntimeError("the chat function's turn runner is given by chat_app()")


Turns = Annotated[ChatTurns, Depends(chat_turns)]


@routes.post("/v1/projects/<project_id>/sessions/<session_id>/messages", "member", rules={
    413: "content over MAX_MESSAGE_BYTES UTF-8 bytes (32,768 by default)",
    422: "patient_id other than the session's patient; an Idempotency-Key reused with another body",
})
def post_message(
    project_id: str, session_id: str, body: ChatRequest, caller: CurrentCaller, turns: Turns, request: Request,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """Send a message (members); the session is created on first use."""
    turn = ChatTurn.of(project_id, session_id, body, user_id=caller.user_id, key=idempotency_key or None,
                       deadline=float(request.context["deadline"]))
    read = request.context.get("membership_read")
    return turns.run(turn, read if isinstance(read, TurnRead) else None).model_dump(mode="json")


def turn_membership(deps: ChatFunctionDeps) -> MembershipSource:
    """The chat function's membership source: the turn's one read, for the path's session and the
    body's patient as sent (:func:`patient_hint`); the read goes to the route with the membership.
    A path the turn cannot read (a malformed session id: the path gate answers 400 right after)
    takes the plain ``MEMBER#`` lookup; a project that does not exist has no members."""
    lookup = member_lookup(deps.members)

    def read(event: Mapping[str, Any], project_id: str, user_id: str) -> Membership:
        session_id = str((event.get("pathParameters") or {}).get("session_id") or "")
        if not PATH_PARAMETER_RE.fullmatch(session_id):
            return lookup(event, project_id, user_id)
        chat = deps.chat
        try:
            found = read_turn(chat.store, chat.cache, project_id, session_id, user_id=user_id,
                              patient_id=patient_hint(event), now=chat.now())
        except ProjectNotFound:
            return Membership(None)
        return Membership(found.context.asker, found)

    return read


def patient_hint(event: Mapping[str, Any]) -> str | None:
    """The body's ``patient_id`` as sent, when it is an id (else None), read before the body is
    validated: only so that the turn's read can include that patient's earlier-diagnosis
    references. The turn uses the read only when the validated body names the same patient
    (``agent_memory.chat.read.context_for_turn``)."""
    raw = event.get("body")
    if not raw:
        return None
    try:
        text = base64.b64decode(raw, validate=True).decode("utf-8") if event.get("isBase64Encoded") else str(raw)
        # nested too deep for a parser: no hint (the path gate refuses the body right after)
        value = json.loads(text).get("patient_id") if body_depth(text) <= MAX_BODY_DEPTH else None
    except (binascii.Error, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and PATH_PARAMETER_RE.fullmatch(value) else None


def chat_app(deps: ChatFunctionDeps) -> APIGatewayHttpResolver:
    """The chat function's event handler."""
    turns = ChatTurns(deps)
    app = guarded_resolver(routes, membership=turn_membership(deps), provide={chat_turns: turns}, idempotency=True)
    app.use([turns.invocation])
    return app


__all__ = ["ChatFunctionDeps", "ChatTurns", "chat_app", "patient_hint", "routes", "tracer", "turn_membership"]
