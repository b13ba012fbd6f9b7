"""The route guard decides who may call a route ONCE per request, from the access each route
declares where it is defined (``agent_memory.http.routing``); on the chat route it decides on the
turn's own read, which it hands to the turn (``agent_memory.http.routes.chat``).

Whole chat requests run through the chat function's event handler on the in-memory fakes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.chat.read import TurnRead
from agent_memory.domain.errors import Forbidden
from agent_memory.http.guard import Membership, admit
from agent_memory.http.routes.chat import ChatFunctionDeps, chat_app, patient_hint
from agent_memory.http.routing import Routes, route_key_of
from infra.local.events import build_http_api_event
from tests.fakes import InMemoryStore, Recorder
from tests.support.auth import add_member
from tests.unit.chat_support import USER, deps_with, llm_requests, seed_project

ROUTE = "POST /v1/projects/{project_id}/sessions/{session_id}/messages"


class _Context:
    function_name = "chat"
    aws_request_id = "req-1"
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:chat"
    memory_limit_in_mb = 1024

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def _chat(store: Any) -> tuple[Any, Recorder]:
    """The chat function's event handler on ``store``, and the recorder of its turn reads."""
    app, reads, _ = _chat_with_llm(store)
    return app, reads


def _chat_with_llm(store: Any) -> tuple[Any, Recorder, Any]:
    reads = Recorder(store)
    chat = deps_with(store)
    chat.store = reads
    deps = ChatFunctionDeps(chat=chat, members=store, idempotency_table="idempotency", api_gateway_timeout_s=30,
                            response_reserve_s=3)
    return chat_app(deps), reads, chat


def _post(app: Any, body: Any, *, user: str = USER, project: str = "p1", session: str = "s-1") -> dict[str, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    event = build_http_api_event(
        "POST", f"/v1/projects/{project}/sessions/{session}/messages", {"content-type": "application/json"}, "",
        raw, ROUTE, {"project_id": project, "session_id": session}, {"sub": user},
    )
    response: dict[str, Any] = app.resolve(event, _Context())
    return response


def _error(response: dict[str, Any]) -> tuple[int, str]:
    return response["statusCode"], json.loads(response["body"])["error"]


# ------------------------------------------------------------------------- route declarations
def test_each_route_declares_its_access_and_the_table_is_derived_from_the_declarations() -> None:
    # Given routes declared with their access
    routes = Routes()

    @routes.get("/v1/projects/<project_id>/things/<thing_id>", "admin")
    def thing(project_id: str, thing_id: str) -> dict[str, str]:
        return {}

    @routes.head("/v1/ping", "public")
    def ping() -> dict[str, str]:
        return {}

    # Then the table holds them by API Gateway's route key, as the template writes it
    assert routes.table == {"GET /v1/projects/{project_id}/things/{thing_id}": "admin", "HEAD /v1/ping": "public"}
    assert route_key_of("get", "/v1/projects/<project_id>") == "GET /v1/projects/{project_id}"


def test_a_route_without_a_known_access_or_declared_twice_is_refused_at_import() -> None:
    routes = Routes()
    with pytest.raises(ValueError, match="unknown access"):
        routes.get("/x", "everyone")  # type: ignore[arg-type]
    routes.get("/x", "public")
    with pytest.raises(ValueError, match="declared twice"):
        routes.get("/x", "member")
    with pytest.raises(ValueError, match="openapi_extensions"):
        routes.get("/y", "member", openapi_extensions={"x-access": "public"})


def test_an_undeclared_route_is_refused() -> None:
    event = build_http_api_event("GET", "/v1/other", {}, "", b"", "GET /v1/other", None, {"sub": "u1"})
    with pytest.raises(Forbidden, match="no access policy"):
        admit(event, {"GET /v1/health": "public"}, None)


def test_a_member_route_asks_the_membership_source_once_and_refuses_a_non_member() -> None:
    # Given a membership source that knows no one
    asked: list[tuple[str, str]] = []

    def nobody(event: Any, project_id: str, user_id: str) -> Membership:
        asked.append((project_id, user_id))
        return Membership(None)

    event = build_http_api_event("GET", "/v1/projects/p1/reports", {}, "", b"", "GET /v1/projects/{project_id}/reports",
                                 {"project_id": "p1"}, {"sub": "u9"})
    # When a user asks for a member route, Then 403, after one look
    with pytest.raises(Forbidden, match="not a member"):
        admit(event, {"GET /v1/projects/{project_id}/reports": "member"}, nobody)
    assert asked == [("p1", "u9")]


# ---------------------------------------------------------------------- the chat route
def test_a_members_turn_reads_once_in_the_guard_and_the_turn_reads_nothing_more(store: InMemoryStore) -> None:
    # Given a member of p1
    seed_project(store, "p1")
    app, reads = _chat(store)
    # When they send a message
    response = _post(app, {"content": "你好"})
    # Then it is answered after ONE read of the turn's context (the guard's, handed to the turn)
    assert response["statusCode"] == 200, response["body"]
    assert reads.count("load_turn_context") == 1
    assert [c.kwargs["user_id"] for c in reads.calls if c.name == "load_turn_context"] == [USER]


@pytest.mark.parametrize(
    "body",
    [{"content": "你好"}, {"content": ""}, {"content": "hi", "unknown": 1}, b"not json",
     {"content": "你好", "patient_id": "a b"}],
)
def test_a_non_member_is_refused_403_before_any_400_or_422_and_nothing_is_written(
    store: InMemoryStore, body: Any
) -> None:
    # Given p1 and a user who is not its member
    seed_project(store, "p1")
    add_member(store, "p2", "u-other", "admin")
    app, reads, chat = _chat_with_llm(store)
    before = store.snapshot()
    # When they send a message, valid or not, Then 403 after the one read, nothing written, no LLM call
    assert _error(_post(app, body, user="u-other")) == (403, "forbidden")
    assert store.snapshot() == before
    assert reads.count("load_turn_context") == 1
    assert llm_requests(chat) == []


def test_a_project_that_does_not_exist_is_refused_as_for_any_non_member(store: InMemoryStore) -> None:
    seed_project(store, "p1")
    app, _ = _chat(store)
    before = store.snapshot()
    assert _error(_post(app, {"content": "P001 入组了吗？"}, project="nope")) == (403, "forbidden")
    assert store.snapshot() == before


def test_a_removed_member_is_refused_at_once(store: InMemoryStore) -> None:
    # Given a member who chatted, then was removed
    seed_project(store, "p1")
    add_member(store, "p1", "u-crc", "member", "CRC")
    app, _ = _chat(store)
    assert _post(app, {"content": "你好"}, user="u-crc")["statusCode"] == 200
    store.remove_member("p1", "u-crc")
    # When they send again, Then 403
    assert _error(_post(app, {"content": "还在吗"}, user="u-crc")) == (403, "forbidden")


def test_a_malformed_session_id_is_checked_for_membership_then_refused_by_the_path_gate(store: InMemoryStore) -> None:
    seed_project(store, "p1")
    app, reads = _chat(store)
    # a member: the path gate's 400; a non-member: 403 (without the turn's read)
    assert _error(_post(app, {"content": "hi"}, session="s" * 200)) == (400, "invalid_path_parameter")
    assert _error(_post(app, {"content": "hi"}, session="s" * 200, user="u-x")) == (403, "forbidden")
    assert reads.count("load_turn_context") == 0


def test_the_turns_read_includes_the_patient_the_body_names() -> None:
    # The hint is the body's patient id as sent, when it is an id; anything else names no one
    def event(body: bytes) -> dict[str, Any]:
        return build_http_api_event("POST", "/x", {}, "", body, ROUTE, {}, {"sub": "u1"})

    assert patient_hint(event(b'{"content": "hi", "patient_id": "pt-1"}')) == "pt-1"
    deep = b'{"patient_id": "pt-1", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    huge = b'{"patient_id": "pt-1", "n": ' + b"9" * 5000 + b"}"
    for body in (b'{"content": "hi"}', b'{"patient_id": "a b"}', b'{"patient_id": 3}', b"[1]", b"{", b"", deep, huge):
        assert patient_hint(event(body)) is None


def test_a_patients_first_turn_reads_their_references_with_the_one_read(store: InMemoryStore) -> None:
    seed_project(store, "p1")
    app, reads = _chat(store)
    response = _post(app, {"content": "头痛三天了", "patient_id": "pt-7"}, session="visit-1")
    assert response["statusCode"] == 200, response["body"]
    assert [c.kwargs["patient_id"] for c in reads.calls if c.name == "load_turn_context"] == ["pt-7"]


def test_the_read_handed_to_the_turn_is_the_guards(store: InMemoryStore) -> None:
    # Given the membership the chat function's source found for a member
    from agent_memory.http.routes.chat import turn_membership

    seed_project(store, "p1")
    chat = deps_with(store)
    source = turn_membership(ChatFunctionDeps(chat=chat, members=store, idempotency_table="t",
                                              api_gateway_timeout_s=30, response_reserve_s=3))
    event = build_http_api_event("POST", "/x", {}, "", b'{"content": "hi"}', ROUTE,
                                 {"project_id": "p1", "session_id": "s-1"}, {"sub": USER})
    found = source(event, "p1", USER)
    # Then the member is the one the turn's read found, and the read goes with it
    assert isinstance(found.read, TurnRead) and found.member is found.read.context.asker
    assert found.member is not None and found.member.user_id == USER


def test_a_resolver_made_while_another_serves_a_request_starts_with_no_request_context(store: InMemoryStore) -> None:
    # Given a chat function's resolver in the middle of a request (the local runtime runs several
    # containers of one function in one process)
    seed_project(store, "p1")
    serving, _ = _chat(store)
    serving.append_context(caller="someone else's caller", received_at=1.0)
    # When another container makes its resolver from the same routes
    fresh, _ = _chat(store)
    # Then it holds nothing of that request, and answers its own first request as its caller's
    assert fresh.context == {}
    assert _post(fresh, {"content": "你好"})["statusCode"] == 200
