"""Malformed requests are refused before routing with a JSON 4xx that never quotes the
request's content (found by a fresh-clone tester: 500s on long ids and non-UTF-8 bodies,
and a form-encoded body echoed in a validation error)."""

from __future__ import annotations

from typing import Any

import requests

from tests.support.auth import bearer

SECRET = "患者张三身份证110101199001011234"


def _post(stack: Any, path: str, *, data: bytes, content_type: str | None = "application/json") -> requests.Response:
    headers = dict(bearer("demo-iit:admin", "u-guard"))
    if content_type:
        headers["Content-Type"] = content_type
    return requests.post(f"{stack.base_url}{path}", data=data, headers=headers, timeout=30)


def test_an_overlong_session_id_is_400_not_a_dynamodb_error(local_stack: Any) -> None:
    # Given a session id of 2,000 characters (DynamoDB keys are limited to 1,024 bytes)
    path = f"/v1/projects/demo-iit/sessions/{'s' * 2000}/messages"
    # When a message is posted to it
    response = _post(local_stack, path, data=b'{"content": "hi"}')
    # Then the request is refused with a reason naming the parameter
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_path_parameter"
    assert "session_id" in response.json()["reason"]


def test_ids_with_separators_or_encoded_characters_are_refused(local_stack: Any) -> None:
    for bad in ("a%20b", "a%23b", "%2e%2e", "a%00b"):
        response = _post(local_stack, f"/v1/projects/demo-iit/sessions/{bad}/messages", data=b'{"content": "hi"}')
        assert response.status_code == 400, (bad, response.text)


def test_a_body_that_is_not_utf8_is_400(local_stack: Any) -> None:
    response = _post(local_stack, "/v1/projects/demo-iit/sessions/guard-1/messages", data=b'{"content":"\xff\xfe"}')
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_encoding"


def test_a_body_without_json_content_type_is_415_and_not_echoed(local_stack: Any) -> None:
    # Given what `curl -d` sends without a Content-Type header (a form-encoded body)
    body = ('{"content": "%s"}' % SECRET).encode("utf-8")  # noqa: UP031 - the raw body as a client sends it
    response = _post(local_stack, "/v1/projects/demo-iit/sessions/guard-2/messages", data=body,
                     content_type="application/x-www-form-urlencoded")
    # Then it is refused as an unsupported media type, without quoting the body
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"
    assert SECRET not in response.text and "110101" not in response.text


def test_validation_errors_never_quote_request_content(local_stack: Any) -> None:
    # Given a JSON body whose unknown field NAME carries patient text
    body = ('{"content": "hi", "%s": 1}' % SECRET).encode("utf-8")  # noqa: UP031
    response = _post(local_stack, "/v1/projects/demo-iit/sessions/guard-3/messages", data=body)
    # Then the 422 names no patient text
    assert response.status_code == 422
    assert SECRET not in response.text
    assert "<value>" in response.text
