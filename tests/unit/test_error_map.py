"""The one error map: storage-service failures answer 503 (retryable, with Retry-After) or 502; LLM
failures answer 503 / 504 / 502 with their own codes, never 500; all with the common error body and
nothing of the request in it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyInconsistentStateError,
    IdempotencyPersistenceLayerError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.domain.errors import (
    ExternalServiceError,
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMDeadlineExceeded,
    LLMEmptyReply,
    LLMModelNotFound,
    LLMTruncated,
    LLMUnavailable,
    VersionConflict,
)
from agent_memory.http.errors import register_error_handlers
from agent_memory.http.powertools import APIGatewayHttpResolver
from agent_memory.observability import metrics
from infra.local.events import build_http_api_event


def _invoke(exc: Exception) -> dict[str, Any]:
    app = APIGatewayHttpResolver()
    register_error_handlers(app)

    @app.get("/v1/boom")
    def boom() -> dict[str, str]:
        raise exc

    event = build_http_api_event("GET", "/v1/boom", {}, "", b"", "GET /v1/boom", None, None, request_id="req-1")
    response: dict[str, Any] = app.resolve(event, LambdaContext())
    return response


@pytest.mark.parametrize(
    ("code", "retryable", "status", "error"),
    [
        ("ProvisionedThroughputExceededException", True, 503, "service_unavailable"),
        (None, True, 503, "service_unavailable"),
        ("AccessDeniedException", False, 502, "service_error"),
    ],
)
def test_external_service_error_maps_to_503_when_retryable_else_502(
    code: str | None, retryable: bool, status: int, error: str
) -> None:
    # Given: a route whose storage call failed with a service error
    exc = ExternalServiceError("dynamodb", code, retryable=retryable)

    # When: the error map answers it
    response = _invoke(exc)

    # Then: the status, the code and the retry hint follow the error's retryability
    body = json.loads(response["body"])
    assert response["statusCode"] == status
    assert body["error"] == error
    assert body["retryable"] is retryable
    assert body["request_id"] == "req-1"
    assert ("Retry-After" in response["headers"]) is retryable


@pytest.mark.parametrize(
    ("exc", "status", "error", "retryable"),
    [
        (LLMEmptyReply("the model's reply had no text, twice"), 502, "llm_empty_reply", True),
        (LLMBadResponse("not a Messages response"), 502, "llm_bad_response", False),
        (LLMAuthError("HTTP 401 authentication_error"), 502, "llm_auth", False),
        (LLMModelNotFound("HTTP 404 not_found_error"), 502, "llm_model_not_found", False),
        (LLMBadRequest("HTTP 400 invalid_request_error"), 502, "llm_bad_request", False),
        (LLMUnavailable("HTTP 529 overloaded_error", retry_after_s=7), 503, "llm_unavailable", True),
        (LLMDeadlineExceeded("no reply before the deadline"), 504, "llm_timeout", True),
        (LLMTruncated("a structured output was cut"), 502, "llm_error", False),  # mapped nowhere else
    ],
)
def test_llm_errors_map_to_their_status_and_code(exc: Exception, status: int, error: str, retryable: bool) -> None:
    # Given: a route whose LLM call failed
    # When: the error map answers it
    response = _invoke(exc)

    # Then: the status, the code and retryability are the error's, never a 500, and the reason is the
    # map's own (nothing the provider said)
    body = json.loads(response["body"])
    assert response["statusCode"] == status
    assert body["error"] == error
    assert body["retryable"] is retryable
    assert body["request_id"] == "req-1"
    assert str(exc) not in body["reason"] or isinstance(exc, LLMUnavailable | LLMDeadlineExceeded)
    assert ("Retry-After" in response["headers"]) is (status in (503, 504))


def test_an_empty_reply_is_counted_by_the_map_and_the_adapters_faults_are_not_counted_twice() -> None:
    # Given: no metric recorded yet
    metrics.clear_metrics()
    try:
        # When: an empty reply and a credential fault are answered
        _invoke(LLMEmptyReply("empty"))
        _invoke(LLMAuthError("HTTP 401"))

        # Then: the map counts the empty reply (raised by the chat loop), and leaves LLMAuthError to the
        # adapter, which counts it where it is raised (the jobs' calls too)
        assert "LLMEmptyReply" in metrics.metric_set
        assert "LLMAuthError" not in metrics.metric_set
    finally:
        metrics.clear_metrics()


def _invoke_with_idempotency(exc: Exception) -> dict[str, Any]:
    app = APIGatewayHttpResolver()
    register_error_handlers(app, idempotency=True)

    @app.get("/v1/boom")
    def boom() -> dict[str, str]:
        raise exc

    event = build_http_api_event("GET", "/v1/boom", {}, "", b"", "GET /v1/boom", None, None, request_id="req-1")
    response: dict[str, Any] = app.resolve(event, LambdaContext())
    return response


def test_a_version_conflict_is_409_retryable_with_a_jittered_retry_after_of_one_to_three_seconds() -> None:
    # Given: a write that lost the optimistic lock to a concurrent writer
    exc = VersionConflict("session changed concurrently", current_version=7)

    # When: the error map answers it many times
    responses = [_invoke(exc) for _ in range(40)]

    # Then: every answer is 409 version_conflict, retryable, with a whole-second Retry-After of 1..3
    # that varies between answers (clients that collided do not retry in step)
    bodies = [json.loads(r["body"]) for r in responses]
    assert {r["statusCode"] for r in responses} == {409}
    assert all(b["error"] == "version_conflict" and b["retryable"] is True for b in bodies)
    assert all(b["current_version"] == 7 for b in bodies)
    waits = [int(r["headers"]["Retry-After"]) for r in responses]
    assert set(waits) <= {1, 2, 3}
    assert len(set(waits)) > 1


def test_a_conflict_on_what_has_no_version_leaves_current_version_out() -> None:
    # a session or a membership written concurrently has no version to show: no null field
    body = json.loads(_invoke(VersionConflict("the membership changed concurrently"))["body"])
    assert body["error"] == "version_conflict" and "current_version" not in body


def test_a_request_still_in_progress_is_409_retryable_with_retry_after() -> None:
    # Given: a second request with an Idempotency-Key whose first request is still running
    exc = IdempotencyAlreadyInProgressError("in progress")

    # When: the chat function's error map answers it
    response = _invoke_with_idempotency(exc)

    # Then: 409 request_in_progress, retryable, Retry-After of at least one second
    body = json.loads(response["body"])
    assert response["statusCode"] == 409
    assert body["error"] == "request_in_progress" and body["retryable"] is True
    assert 1 <= int(response["headers"]["Retry-After"]) <= 3


@pytest.mark.parametrize(
    "exc",
    [
        IdempotencyPersistenceLayerError("Failed to save in progress record to idempotency store"),
        IdempotencyInconsistentStateError("record changed between put and get"),
    ],
)
def test_the_idempotency_store_failing_is_503_with_retry_after_never_500(exc: Exception) -> None:
    # Given: the idempotency table throttled or changed under the request
    # When: the chat function's error map answers it
    response = _invoke_with_idempotency(exc)

    # Then: 503 service_unavailable, retryable, with Retry-After; nothing of the SDK's message in it
    body = json.loads(response["body"])
    assert response["statusCode"] == 503
    assert body["error"] == "service_unavailable" and body["retryable"] is True
    assert int(response["headers"]["Retry-After"]) >= 1
    assert "idempotency" not in body["reason"]
