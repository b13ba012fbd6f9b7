"""The one error map: storage-service failures answer 503 (retryable, with Retry-After) or 502,
with the common error body and nothing of the request in it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.domain.errors import ExternalServiceError
from agent_memory.http.errors import register_error_handlers
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
