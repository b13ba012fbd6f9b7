"""The request gate of every route (http/guard.py, http/auth.py): bodies must be one JSON object
of bounded depth, ids are checked on the raw path, the token's subject is a printable id, and a
project named twice in the roles claim gets the least privilege."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.errors import Unauthorized
from agent_memory.http.auth import caller_from_event
from agent_memory.http.errors import RequestRejected
from agent_memory.http.guard import MAX_BODY_DEPTH, body_depth, check_request
from infra.local.events import build_http_api_event

ROUTE = "POST /v1/projects/{project_id}/sessions/{session_id}/messages"


PATH = "/v1/projects/p1/sessions/s-1/messages"


def _event(body: bytes, *, raw_path: str = PATH, session: str = "s-1") -> dict[str, Any]:
    return build_http_api_event(
        "POST", raw_path, {"content-type": "application/json"}, "", body, ROUTE,
        {"project_id": "p1", "session_id": session}, {"sub": "u1", "custom:projects": "p1:member"},
    )


@pytest.mark.parametrize("body", [b"[]", b'[{"content": "a"}]', b'"text"', b"3", b"null"])
def test_a_body_that_is_not_one_json_object_is_422(body: bytes) -> None:
    with pytest.raises(RequestRejected) as refused:
        check_request(_event(body))
    assert (refused.value.status, refused.value.code) == (422, "invalid_body")


def test_depth_is_measured_without_recursion_and_ignores_brackets_in_strings() -> None:
    assert body_depth('{"a": "[[[{{{\\" [", "b": [1, [2, {"c": 3}]]}') == 4
    assert body_depth("[" * 100_000) == 100_000
    check_request(_event(b'{"content": ' + b"[" * (MAX_BODY_DEPTH - 1) + b"]" * (MAX_BODY_DEPTH - 1) + b"}"))
    with pytest.raises(RequestRejected, match="nested deeper"):
        check_request(_event(b'{"content": ' + b"[" * MAX_BODY_DEPTH + b"]" * MAX_BODY_DEPTH + b"}"))


def test_invalid_json_and_numbers_beyond_pythons_limit_are_422() -> None:
    for body in (b'{"content": "hi",}', b'{"content": "hi", "n": ' + b"9" * 5000 + b"}"):
        with pytest.raises(RequestRejected) as refused:
            check_request(_event(body))
        assert refused.value.code == "invalid_body"


@pytest.mark.parametrize(("raw", "decoded"), [("pct%2D1", "pct-1"), ("a%0A", "a\n"), ("ok%41", "okA")])
def test_ids_are_checked_on_the_raw_path(raw: str, decoded: str) -> None:
    event = _event(b'{"content": "hi"}', raw_path=f"/v1/projects/p1/sessions/{raw}/messages", session=decoded)
    with pytest.raises(RequestRejected) as refused:
        check_request(event)
    assert (refused.value.status, refused.value.code) == (400, "invalid_path_parameter")


def test_a_valid_request_passes_the_gate() -> None:
    check_request(_event('{"content": "P001 入组了吗"}'.encode()))


@pytest.mark.parametrize("sub", ["u" * 129, "u\u202e1", "u\x001", "a b", "用户"])
def test_a_subject_that_is_not_a_printable_id_is_401(sub: str) -> None:
    from agent_memory.http.powertools import APIGatewayProxyEventV2

    event = _event(b"{}")
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = sub
    with pytest.raises(Unauthorized):
        caller_from_event(APIGatewayProxyEventV2(event))
