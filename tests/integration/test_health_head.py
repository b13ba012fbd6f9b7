"""``HEAD /v1/health``: liveness probes that send HEAD get 200 with no body, without a token; HEAD on a
route that does not declare it stays 404, as API Gateway answers it."""

from __future__ import annotations

import requests

from infra.local.stack import LocalStack


def test_head_health_is_200_with_no_body_and_no_token(local_stack: LocalStack) -> None:
    # When: a probe sends HEAD /v1/health without a token
    response = requests.head(f"{local_stack.base_url}/v1/health", timeout=30)

    # Then: 200, no body
    assert response.status_code == 200
    assert response.content == b""


def test_the_handler_answers_head_health_with_200_and_an_empty_body(local_stack: LocalStack) -> None:
    # Given: the event API Gateway sends for HEAD /v1/health
    from infra.local.events import build_http_api_event

    event = build_http_api_event("HEAD", "/v1/health", {}, "", b"", "HEAD /v1/health", None, None, request_id="r-1")

    # When: the API function handles it
    result = local_stack.invoke("ApiFunction", event)

    # Then: 200 with an empty body (the function itself, not only the gateway, sends none)
    assert result["statusCode"] == 200
    assert result.get("body", "") == ""


def test_head_on_a_route_that_declares_only_get_is_404(local_stack: LocalStack) -> None:
    # When: HEAD is sent to a GET-only public route
    response = requests.head(f"{local_stack.base_url}/v1/openapi.json", timeout=30)

    # Then: 404, as API Gateway answers a method no route declares
    assert response.status_code == 404
