"""Malformed requests are refused before routing with a JSON 4xx that never quotes the
request's content (found by a fresh-clone tester: 500s on long ids and non-UTF-8 bodies,
and a form-encoded body echoed in a validation error)."""

from __future__ import annotations

import http.client
import json
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


def test_json_media_types_in_any_case_or_with_a_suffix_are_json(local_stack: Any) -> None:
    # Media types are case-insensitive, and "+json" is JSON (RFC 6838): each posts a message
    for n, content_type in enumerate(("APPLICATION/JSON", "Application/Json; charset=UTF-8",
                                      "application/vnd.api+json")):
        response = _post(local_stack, f"/v1/projects/demo-iit/sessions/guard-media-{n}/messages",
                         data='{"content": "你好"}'.encode(), content_type=content_type)
        assert response.status_code == 200, (content_type, response.text)


def test_validation_errors_never_quote_request_content(local_stack: Any) -> None:
    # Given a JSON body whose unknown field NAME carries patient text
    body = ('{"content": "hi", "%s": 1}' % SECRET).encode("utf-8")  # noqa: UP031
    response = _post(local_stack, "/v1/projects/demo-iit/sessions/guard-3/messages", data=body)
    # Then the 422 names no patient text
    assert response.status_code == 422
    assert SECRET not in response.text
    assert "<value>" in response.text


def test_a_json_array_body_is_422_and_nothing_is_written(local_stack: Any) -> None:
    # Given an admin sending the hot memory as a one-element array (it used to REPLACE the memory)
    before = requests.get(f"{local_stack.base_url}/v1/projects/demo-iit/memory",
                          headers=bearer("demo-iit:admin", "u-guard"), timeout=30)
    body = b'[{"markdown": "# System Rules\\n- arr"}]'
    headers = {**bearer("demo-iit:admin", "u-guard"), "Content-Type": "application/json",
               "If-Match": before.headers["ETag"]}
    # When it is PUT, and an array of messages is posted
    put = requests.put(f"{local_stack.base_url}/v1/projects/demo-iit/memory", data=body, headers=headers, timeout=30)
    post = _post(local_stack, "/v1/projects/demo-iit/sessions/arr-1/messages",
                 data=b'[{"content": "a"}, {"content": "b"}]')
    # Then both are refused as not one JSON object, and the memory is unchanged
    assert (put.status_code, put.json()["error"]) == (422, "invalid_body")
    assert (post.status_code, post.json()["error"]) == (422, "invalid_body")
    after = requests.get(f"{local_stack.base_url}/v1/projects/demo-iit/memory",
                         headers=bearer("demo-iit:admin", "u-guard"), timeout=30)
    assert after.headers["ETag"] == before.headers["ETag"]


def test_deep_nesting_and_oversized_numbers_are_422_never_500(local_stack: Any) -> None:
    deep = b'{"content": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
    huge_int = b'{"content": "hi", "patient_id": ' + b"9" * 5000 + b"}"
    for body in (deep, huge_int):
        response = _post(local_stack, "/v1/projects/demo-iit/sessions/deep-1/messages", data=body)
        assert (response.status_code, response.json()["error"]) == (422, "invalid_body")


def test_percent_escapes_and_trailing_newlines_in_ids_are_refused_on_the_raw_path(local_stack: Any) -> None:
    # Sent byte for byte (http.client): client libraries normalise %2D to '-' before sending.
    # %2D decodes to a valid '-' and %0A to a newline that `$` used to let through.
    host, port = local_stack.base_url.removeprefix("http://").split(":")
    headers = {**bearer("demo-iit:admin", "u-guard"), "Content-Type": "application/json"}
    for bad in ("pct%2D1", "a%0A", "a%0a", "s" * 127 + "%0a"):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("POST", f"/v1/projects/demo-iit/sessions/{bad}/messages", body=b'{"content": "hi"}',
                     headers=headers)
        response = conn.getresponse()
        body = json.loads(response.read())
        conn.close()
        assert (response.status, body["error"]) == (400, "invalid_path_parameter"), bad
    listed = requests.get(f"{local_stack.base_url}/v1/projects/demo-iit/sessions",
                          headers=bearer("demo-iit:admin", "u-guard"), timeout=30).json()
    assert not any("%" in s["session_id"] or "\n" in s["session_id"] for s in listed["sessions"])
