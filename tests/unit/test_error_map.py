"""The one error map: storage-service failures answer 503 (retryable, with Retry-After) or 502; LLM
failures answer 503 / 504 / 502 with their own codes, never 500; all with the common error body and
nothing of the request in it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
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
)
from agent_memory.http.errors import register_error_handlers
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
