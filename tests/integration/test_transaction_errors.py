"""A cancelled or failed ``TransactWriteItems`` of a chat turn never leaves the adapters as an SDK
exception: a condition or a concurrent transaction is a ``VersionConflict`` (409, retried first), a
throttled or overloaded transaction a retryable ``ExternalServiceError`` (503 with ``Retry-After``),
anything else a non-retryable one (502). Never a 500.

DynamoDB answers these as ``TransactionCanceledException`` with one cancellation reason per item;
the answers are injected through botocore's ``before-call`` event on moto's tables, so the SDK and
PynamoDB parse them exactly as they parse AWS's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.adapters.dynamo.access import connection
from agent_memory.domain.errors import ExternalServiceError, VersionConflict
from agent_memory.http.errors import register_error_handlers
from agent_memory.http.powertools import APIGatewayHttpResolver
from infra.local.events import build_http_api_event
from tests.unit.chat_support import deps_with, seed_project, send


class _HttpAnswer:
    status_code = 400


def _cancelled(*codes: str) -> Any:
    """A ``before-call`` handler answering every TransactWriteItems with a cancellation whose
    per-item reasons are ``codes`` (``"None"`` = that item was fine)."""

    def handler(**_: Any) -> tuple[_HttpAnswer, dict[str, Any]]:
        return _HttpAnswer(), {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": [{"Code": c} for c in codes],
            "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}},
        }

    return handler


@pytest.fixture
def transact_answer(repo: Any) -> Iterator[Any]:
    """Install a ``before-call`` answer for TransactWriteItems on the tables' client (removed after)."""
    events = connection().client.meta.events

    def install(handler: Any) -> None:
        events.register("before-call.dynamodb.TransactWriteItems", handler, unique_id="test-transact-answer")

    yield install
    events.unregister("before-call.dynamodb.TransactWriteItems", unique_id="test-transact-answer")


def _answer(exc: Exception) -> dict[str, Any]:
    app = APIGatewayHttpResolver()
    register_error_handlers(app)

    @app.post("/v1/turn")
    def turn() -> dict[str, str]:
        raise exc

    event = build_http_api_event("POST", "/v1/turn", {}, "", b"", "POST /v1/turn", None, None, request_id="r-1")
    response: dict[str, Any] = app.resolve(event, LambdaContext())
    return response


@pytest.mark.parametrize("code", ["ThrottlingError", "ProvisionedThroughputExceeded"])
def test_a_turn_whose_transaction_is_throttled_is_503_with_retry_after_and_writes_nothing(
    repo: Any, transact_answer: Any, code: str
) -> None:
    # Given: a project, and DynamoDB cancelling every transaction because an item was throttled
    seed_project(repo, "p1")
    deps = deps_with(repo)
    transact_answer(_cancelled("None", code, "None"))

    # When: a chat turn is sent
    with pytest.raises(ExternalServiceError) as raised:
        send(deps, "P001 入组了吗？")

    # Then: the adapter raised a retryable service error named by the cancellation code (no SDK
    # exception), nothing was stored, and the error map answers 503 with Retry-After
    assert raised.value.retryable is True and raised.value.code == code
    assert repo.get_session("p1", "s1") is None
    response = _answer(raised.value)
    assert response["statusCode"] == 503
    assert json.loads(response["body"])["error"] == "service_unavailable"
    assert int(response["headers"]["Retry-After"]) >= 1


def test_a_turn_whose_transaction_fails_validation_is_502_not_500(repo: Any, transact_answer: Any) -> None:
    # Given: DynamoDB refusing the transaction's content (a bug of ours, not worth a retry)
    seed_project(repo, "p1")
    deps = deps_with(repo)
    transact_answer(_cancelled("ValidationError"))

    # When: a chat turn is sent
    with pytest.raises(ExternalServiceError) as raised:
        send(deps, "P001 入组了吗？")

    # Then: a non-retryable service error, answered 502 service_error
    assert raised.value.retryable is False and raised.value.code == "ValidationError"
    response = _answer(raised.value)
    assert response["statusCode"] == 502
    assert json.loads(response["body"])["error"] == "service_error"


def test_a_turn_that_keeps_losing_the_race_is_409_version_conflict_with_retry_after(
    repo: Any, transact_answer: Any
) -> None:
    # Given: every transaction cancelled by a concurrent transaction on the session item
    seed_project(repo, "p1")
    deps = deps_with(repo)
    transact_answer(_cancelled("TransactionConflict", "None"))

    # When: a chat turn is sent (the append retries with backoff, then gives up)
    with pytest.raises(VersionConflict) as raised:
        send(deps, "P001 入组了吗？")

    # Then: 409 version_conflict, retryable, with a Retry-After of at least one second
    response = _answer(raised.value)
    assert response["statusCode"] == 409
    body = json.loads(response["body"])
    assert body["error"] == "version_conflict" and body["retryable"] is True
    assert int(response["headers"]["Retry-After"]) >= 1
