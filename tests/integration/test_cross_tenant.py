"""Cross-tenant: project B's admin and member never read, write, or cause an outbound call with
project A's data or secrets, through ANY route of the API (field case B08, the whole kind).

Two projects made through the API as a new team would: A (the victim) holds a session and a
patient named like B's (``s-001``, ``pt-1``) and ones only A has, messages, a diagnosis, a
feedback rating, a reminder, an erasure record, hot memory, its REDCap token (the local REDCap
server, which nothing else in this module calls) and its reminder webhook (a listener). B (the
attacker) points its clinical source at a listener posing as REDCap, with its own token.

For every route of the route table (``route_table()``: a route someone adds fails
:func:`test_every_route_has_its_cross_tenant_attempts` until it has its attempts here), B's admin or
member calls it: on A's path (403), and on B's own path naming A's things (A's ids, A's secret
names, A's URLs; 404 / 422 or B's own data). After each route's attempts:

- no answer holds anything of A's (its canary text, its token, its webhook key);
- A is unchanged: its export (every item of every table), its secrets' values, its schedules;
- A's REDCap got no request (A's token was used by nobody), the listener posing as REDCap got B's
  token only, A's webhook received nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from agent_memory.http.routes import route_table
from infra.local.demo.redcap_project import DEMO_TOKEN
from infra.local.stack import LocalStack
from infra.local.token import mint_token
from tests.support.auth import operator_bearer
from tests.support.listener import Listener

#: B's own REDCap token (sent only to the listener posing as its REDCap).
B_TOKEN = "B" * 32


def who(user: str) -> dict[str, str]:
    """A token for ``user``: identity only (the memberships are made through the API)."""
    return {"Authorization": f"Bearer {mint_token(user)}"}


@dataclass(frozen=True)
class Call:
    """One attempt: ``as_`` is ``"admin"`` / ``"member"`` of B, or ``"operator"``; ``expect`` the
    statuses it may answer (empty: any, the invariants decide)."""

    method: str
    path: str
    body: Any = None
    as_: str = "admin"
    expect: tuple[int, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class World:
    """The two projects, A's ids, secrets and canary, and the listeners."""

    stack: LocalStack
    a: str
    b: str
    canary: str
    users: dict[str, str]
    ids: dict[str, str]
    redcap_b: Listener
    hook_a: Listener
    a_webhook_key: str = ""

    def call(self, method: str, path: str, caller: str, body: Any = None, **headers: str) -> requests.Response:
        auth = operator_bearer("u-ops-xt") if caller == "operator" else who(self.users[caller])
        return requests.request(method, f"{self.stack.base_url}{path}", headers={**auth, **headers}, json=body,
                                timeout=60)

    def ok(self, method: str, path: str, caller: str, body: Any = None, **headers: str) -> Any:
        response = self.call(method, path, caller, body, **headers)
        assert response.status_code < 300, (method, path, response.text)
        return response.json() if response.text else None

    def a_state(self) -> dict[str, Any]:
        """Everything of A: its export (every item; the manifest's time left out), its secrets'
        values and its reminder schedules."""
        export = self.call("GET", f"/v1/projects/{self.a}/export?include=flow_log", "a_admin")
        assert export.status_code == 200, export.text
        sm = self.stack.aws_client("secretsmanager")
        secrets = {name: sm.get_secret_value(SecretId=name)["SecretString"]
                   for name in (f"agent-memory/redcap/{self.a}", f"agent-memory/reminder-webhook/{self.a}")}
        scheduler = self.stack.aws_client("scheduler")
        group = self.stack.env["REMINDER_SCHEDULE_GROUP"]
        schedules = sorted(s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]
                           if s["Name"] == f"reminder-{self.ids['reminder']}")
        return {"export": export.text.split("\n", 1)[1], "secrets": secrets, "schedules": schedules}

    def secrets_of_a(self) -> list[str]:
        """What no answer to B may hold: A's canary, its REDCap token, its webhook key."""
        return [self.canary, DEMO_TOKEN, self.a_webhook_key]


def _team(world: World, project: str, admin: str, member: str) -> None:
    ops = "operator"
    created = world.call("POST", "/v1/projects", ops, {"project_id": project, "name": project, "time_zone": "UTC"})
    assert created.status_code == 201, created.text
    world.ok("PUT", f"/v1/projects/{project}/members/{world.users[admin]}", ops,
             {"project_role": "admin", "study_role": "PI", "display_name": admin})
    world.ok("PUT", f"/v1/projects/{project}/members/{world.users[member]}", admin,
             {"project_role": "member", "study_role": "CRC", "display_name": member})


def _seed_a(world: World) -> None:
    """A's data, made by A's own admin and member through the API."""
    a, canary = f"/v1/projects/{world.a}", world.canary
    world.ok("PATCH", a, "a_admin", {"clinical_data": {"api_url": world.stack.redcap.api_url, "token": DEMO_TOKEN}})
    world.a_webhook_key = world.ok("PUT", f"{a}/reminder-webhook", "a_admin",
                                   {"url": f"http://127.0.0.1:{world.hook_a.port}/hook"})["signing_key"]
    memory = world.ok("GET", f"{a}/memory", "a_admin")
    world.ok("PUT", f"{a}/memory", "a_admin", {"markdown": f"# System Rules\n- {canary} 禁止输出身份证号\n"},
             **{"If-Match": f'"{memory["version"]}"'})
    world.ids["line"] = world.ok("GET", f"{a}/memory", "a_admin")["lines"][0]["line_id"]
    for session, patient in (("s-001", "pt-1"), ("s-a-only", "pt-a-only"), ("s-a-erased", "pt-1")):
        world.ok("POST", f"{a}/sessions", "a_member", {"session_id": session, "patient_id": patient,
                                                      "type": "consultation"})
    turn = world.ok("POST", f"{a}/sessions/s-001/messages", "a_member",
                    {"content": f"{canary} 孩子胸痛 3 天", "patient_id": "pt-1"})
    world.ids["message"] = turn["message_id"]
    world.ok("PUT", f"{a}/sessions/s-001/messages/{turn['message_id']}/feedback", "a_member",
             {"rating": "down", "reason": f"{canary} 太长了"})
    world.ids["diagnosis"] = world.ok("POST", f"{a}/sessions/s-a-only/diagnoses", "a_member",
                                      {"report": {"summary": canary}})["diagnosis_id"]
    world.ok("POST", f"{a}/sessions/s-001/messages", "a_admin", {"content": f"明天上午10点提醒我{canary}给P005打电话"})
    world.ids["reminder"] = world.ok("GET", f"{a}/reminders", "a_admin")["reminders"][0]["reminder_id"]
    world.ok("POST", f"{a}/sessions/s-a-erased/messages", "a_member", {"content": f"{canary} 撤回同意"})
    assert world.call("DELETE", f"{a}/sessions/s-a-erased", "a_admin").status_code in (202, 204)


def _seed_b(world: World) -> None:
    """B's own source (a listener posing as REDCap, B's token) and a session and patient named like A's."""
    b = f"/v1/projects/{world.b}"
    world.ok("PATCH", b, "b_admin", {"clinical_data": {"api_url": world.redcap_b.api_url, "token": B_TOKEN}})
    world.ok("POST", f"{b}/sessions", "b_member", {"session_id": "s-001", "patient_id": "pt-1",
                                                  "type": "consultation"})
    world.ok("POST", f"{b}/sessions/s-001/messages", "b_member", {"content": "B 的患者咳嗽", "patient_id": "pt-1"})


@pytest.fixture(scope="module")
def world(local_stack: LocalStack) -> Iterator[World]:
    suffix = uuid.uuid4().hex[:8]
    users = {role: f"u-{role.replace('_', '-')}-{suffix}" for role in ("a_admin", "a_member", "b_admin", "b_member")}
    redcap_b, hook_a = Listener(status=403), Listener()
    try:
        w = World(local_stack, f"xt-a-{suffix}", f"xt-b-{suffix}", f"CANARYA{suffix}", users, {}, redcap_b, hook_a)
        _team(w, w.a, "a_admin", "a_member")
        _team(w, w.b, "b_admin", "b_member")
        _seed_a(w)
        _seed_b(w)
        yield w
    finally:
        redcap_b.close()
        hook_a.close()


# ------------------------------------------------------------------------ the attempts per route
_P = "/v1/projects/{a}"
_B = "/v1/projects/{b}"
Attempts = Callable[[World], list[Call]]
_FORBIDDEN = (403,)


def _on_a(method: str, path: str, body: Any = None, **headers: str) -> Attempts:
    """B's admin and B's member call A's route: refused (403) before it runs."""
    def attempts(w: World) -> list[Call]:
        url = path.format(a=w.a, b=w.b, **w.ids, **w.users)
        return [Call(method, url, body, caller, _FORBIDDEN, headers) for caller in ("admin", "member")]
    return attempts


def _on_b(*calls: tuple[Any, ...]) -> Attempts:
    """B's own route naming A's things: ``(method, path, body[, as_[, expect[, headers]]])``."""
    def attempts(w: World) -> list[Call]:
        out = []
        for method, path, body, *rest in calls:
            as_ = rest[0] if rest else "admin"
            expect = rest[1] if len(rest) > 1 else ()
            headers = rest[2] if len(rest) > 2 else {}
            filled = body(w) if callable(body) else body
            out.append(Call(method, path.format(a=w.a, b=w.b, **w.ids, **w.users), filled, as_, expect, headers))
        return out
    return attempts


def _both(on_a: Attempts, on_b: Attempts) -> Attempts:
    return lambda w: [*on_a(w), *on_b(w)]


_IF = {"If-Match": '"1"'}
_NOT_FOUND = (404,)
_REFUSED = (400, 404, 409, 422, 428)
_SESSION = {"session_id": "s-001", "patient_id": "pt-1", "type": "consultation"}
_REMINDER_FIRE = "明天上午10点提醒我给P005打电话"

ATTEMPTS: dict[str, Attempts] = {
    "GET /admin": _on_b(("GET", "/admin", None)),
    # the console's files are static (its data calls carry the caller's token, checked per route)
    "GET /console": _on_b(("GET", "/console", None, "admin", (200,))),
    "GET /console/{name}": _on_b(("GET", "/console/config.json", None, "admin", (200,))),
    "GET /console/{folder}/{name}": _on_b(("GET", "/console/locales/zh.json", None, "admin", (200,))),
    "GET /console/{folder}/{subfolder}/{name}": _on_b(("GET", "/console/js/views/members.js", None, "member", (200,))),
    # who am I: the caller's own memberships only (B's), never A
    "GET /v1/me": _on_b(("GET", "/v1/me", None, "admin", (200,)), ("GET", "/v1/me", None, "member", (200,))),
    "GET /v1/health": _on_b(("GET", "/v1/health", None)),
    "HEAD /v1/health": _on_b(("HEAD", "/v1/health", None)),
    "GET /v1/openapi.json": _on_b(("GET", "/v1/openapi.json", None)),
    # creating a project is the operators'; an operator naming A's id cannot overwrite it
    "POST /v1/projects": _on_b(("POST", "/v1/projects", lambda w: {"project_id": w.a, "name": "x", "time_zone": "UTC"},
                                "admin", _FORBIDDEN),
                               ("POST", "/v1/projects", lambda w: {"project_id": w.a, "name": "x", "time_zone": "UTC"},
                                "operator", (409,))),
    "GET /v1/projects/{project_id}": _both(_on_a("GET", _P), _on_b(("GET", _B, None, "member"))),
    "PATCH /v1/projects/{project_id}": _both(
        _on_a("PATCH", _P, {"clinical_data": {"api_url": "http://127.0.0.1:9/api/", "token": B_TOKEN}}),
        _on_b(("PATCH", _B, lambda w: {"clinical_data": {"token_secret": f"agent-memory/redcap/{w.a}"}}, "admin",
               (422,)),
              ("PATCH", _B, lambda w: {"clinical_data": {"api_url": w.stack.redcap.api_url,
                                                         "token_secret": f"agent-memory/redcap/{w.a}"}},
               "admin", (422,)),
              ("PATCH", _B, lambda w: {"clinical_data": {"api_url": w.stack.redcap.api_url}}, "admin", (422,)),
              ("PATCH", _B, {"clinical_data": {"api_url": "https://169.254.169.254/api/", "token": B_TOKEN}},
               "admin", (422,)),
              ("PATCH", _B, lambda w: {"clinical_data": {"api_url": w.redcap_b.api_url}}, "admin", (200,)),
              ("POST", f"{_B}/sessions/s-xt-chat/messages", {"content": "P001 入组了吗？"}, "member", (200,)))),
    "DELETE /v1/projects/{project_id}": _on_a("DELETE", f"{_P}?confirm={{a}}"),
    "GET /v1/projects/{project_id}/export": _both(_on_a("GET", f"{_P}/export?include=flow_log"),
                                                  _on_b(("GET", f"{_B}/export?include=flow_log", None))),
    "GET /v1/projects/{project_id}/feedback": _both(_on_a("GET", f"{_P}/feedback"),
                                                    _on_b(("GET", f"{_B}/feedback", None))),
    "GET /v1/projects/{project_id}/members": _both(_on_a("GET", f"{_P}/members"),
                                                   _on_b(("GET", f"{_B}/members", None, "member"))),
    # joining A is refused; adding A's admin to B changes nothing of A
    "PUT /v1/projects/{project_id}/members/{user_id}": _both(
        _on_a("PUT", f"{_P}/members/{{b_admin}}", {"project_role": "admin", "study_role": "PI", "display_name": "x"}),
        _on_b(("PUT", f"{_B}/members/{{a_admin}}", {"project_role": "member", "study_role": "PI", "display_name": "x"},
               "admin", (200, 201)))),
    "DELETE /v1/projects/{project_id}/members/{user_id}": _both(
        _on_a("DELETE", f"{_P}/members/{{a_member}}"),
        _on_b(("DELETE", f"{_B}/members/{{a_member}}", None, "admin", _NOT_FOUND))),
    "PUT /v1/projects/{project_id}/memory": _both(
        _on_a("PUT", f"{_P}/memory", {"markdown": "# System Rules\n- x\n"}, **_IF),
        _on_b(("GET", f"{_B}/memory", None))),
    "GET /v1/projects/{project_id}/memory": _both(_on_a("GET", f"{_P}/memory"), _on_b(("GET", f"{_B}/memory", None))),
    "GET /v1/projects/{project_id}/memory/audit": _both(_on_a("GET", f"{_P}/memory/audit"),
                                                        _on_b(("GET", f"{_B}/memory/audit", None))),
    "DELETE /v1/projects/{project_id}/memory/lines/{line_id}": _both(
        _on_a("DELETE", f"{_P}/memory/lines/{{line}}", **_IF),
        _on_b(("DELETE", f"{_B}/memory/lines/{{line}}", None, "admin", _REFUSED, {"If-Match": '"0"'}))),
    "GET /v1/projects/{project_id}/memory/review": _both(_on_a("GET", f"{_P}/memory/review"),
                                                         _on_b(("GET", f"{_B}/memory/review", None))),
    "POST /v1/projects/{project_id}/memory/review/{item_id}/approve": _both(
        _on_a("POST", f"{_P}/memory/review/rv-x/approve", {"confirm": True}),
        _on_b(("POST", f"{_B}/memory/review/rv-x/approve", {"confirm": True}, "admin", _NOT_FOUND))),
    "POST /v1/projects/{project_id}/memory/review/{item_id}/reject": _both(
        _on_a("POST", f"{_P}/memory/review/rv-x/reject", {}),
        _on_b(("POST", f"{_B}/memory/review/rv-x/reject", {}, "admin", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/memory/revisions": _both(_on_a("GET", f"{_P}/memory/revisions"),
                                                            _on_b(("GET", f"{_B}/memory/revisions", None))),
    "GET /v1/projects/{project_id}/memory/revisions/{version}": _both(
        # A's version 2 holds the canary; B (baseline rules at version 1) has none of that number
        _on_a("GET", f"{_P}/memory/revisions/2"),
        _on_b(("GET", f"{_B}/memory/revisions/2", None, "admin", _NOT_FOUND))),
    "POST /v1/projects/{project_id}/memory/revisions/{version}/restore": _both(
        _on_a("POST", f"{_P}/memory/revisions/1/restore", {}, **_IF),
        _on_b(("POST", f"{_B}/memory/revisions/1/restore", {}, "admin", _REFUSED, {"If-Match": '"0"'}))),
    "DELETE /v1/projects/{project_id}/patients/{patient_id}": _both(
        _on_a("DELETE", f"{_P}/patients/pt-1"),
        _on_b(("DELETE", f"{_B}/patients/pt-a-only", None, "admin", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/patients/{patient_id}/compare": _both(
        _on_a("GET", f"{_P}/patients/pt-a-only/compare?from={{diagnosis}}&to=current:s-a-only"),
        _on_b(("GET", f"{_B}/patients/pt-a-only/compare?from={{diagnosis}}&to=current:s-a-only", None, "member",
               _NOT_FOUND),
              ("GET", f"{_B}/patients/pt-1/compare?from={{diagnosis}}&to=current:s-001", None, "member",
               _NOT_FOUND))),
    "GET /v1/projects/{project_id}/patients/{patient_id}/erasure": _both(
        _on_a("GET", f"{_P}/patients/pt-1/erasure"),
        _on_b(("GET", f"{_B}/patients/pt-1/erasure", None, "admin", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/patients/{patient_id}/sessions": _both(
        _on_a("GET", f"{_P}/patients/pt-1/sessions"), _on_b(("GET", f"{_B}/patients/pt-1/sessions", None, "member"),
                                                            ("GET", f"{_B}/patients/pt-a-only/sessions", None,
                                                             "member"))),
    "GET /v1/projects/{project_id}/memory/lines/{line_id}/evidence": _both(
        _on_a("GET", f"{_P}/memory/lines/{{line}}/evidence"),
        _on_b(("GET", f"{_B}/memory/lines/{{line}}/evidence", None, "admin", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/memory/review/{item_id}/evidence": _both(
        _on_a("GET", f"{_P}/memory/review/rv-x/evidence"),
        _on_b(("GET", f"{_B}/memory/review/rv-x/evidence", None, "admin", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/patients": _both(_on_a("GET", f"{_P}/patients"),
                                                    _on_b(("GET", f"{_B}/patients", None, "member", (200,)))),
    "GET /v1/projects/{project_id}/patients/{patient_id}/trend": _both(
        _on_a("GET", f"{_P}/patients/pt-a-only/trend"),
        # (B's trend of a patient B never saw is empty: nothing of A's)
        _on_b(("GET", f"{_B}/patients/pt-a-only/trend", None, "member", (200, 404)))),
    "GET /v1/projects/{project_id}/reports/{iso_week}/revisions": _both(
        _on_a("GET", f"{_P}/reports/2026-W05/revisions"),
        _on_b(("GET", f"{_B}/reports/2026-W05/revisions", None, "member", (200, 404)))),
    "GET /v1/projects/{project_id}/sessions/{session_id}/messages": _both(
        _on_a("GET", f"{_P}/sessions/s-a-only/messages"),
        _on_b(("GET", f"{_B}/sessions/s-a-only/messages", None, "member", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/yearly-summaries": _both(
        _on_a("GET", f"{_P}/yearly-summaries"), _on_b(("GET", f"{_B}/yearly-summaries", None, "member", (200,)))),
    "GET /v1/projects/{project_id}/reminders": _both(_on_a("GET", f"{_P}/reminders"),
                                                     _on_b(("GET", f"{_B}/reminders", None))),
    "DELETE /v1/projects/{project_id}/reminders/{reminder_id}": _both(
        _on_a("DELETE", f"{_P}/reminders/{{reminder}}"),
        _on_b(("DELETE", f"{_B}/reminders/{{reminder}}", None, "admin", _NOT_FOUND),
              ("DELETE", f"{_B}/reminders/{{reminder}}", None, "member", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/removal": _on_a("GET", f"{_P}/removal"),
    "GET /v1/projects/{project_id}/reports": _both(_on_a("GET", f"{_P}/reports"),
                                                   _on_b(("GET", f"{_B}/reports", None, "member"))),
    "PUT /v1/projects/{project_id}/reports/{iso_week}": _both(
        _on_a("PUT", f"{_P}/reports/2026-W05", {"summary": "x"}, **_IF),
        _on_b(("PUT", f"{_B}/reports/2026-W05", {"summary": "x"}, "admin", _NOT_FOUND, _IF))),
    "POST /v1/projects/{project_id}/sessions": _both(
        _on_a("POST", f"{_P}/sessions", {"session_id": "s-xt-new"}),
        _on_b(("POST", f"{_B}/sessions", {"session_id": "s-a-only", "patient_id": "pt-a-only"}, "member",
               (201,)))),
    "GET /v1/projects/{project_id}/sessions": _both(_on_a("GET", f"{_P}/sessions"),
                                                    _on_b(("GET", f"{_B}/sessions", None, "member"))),
    "DELETE /v1/projects/{project_id}/sessions/{session_id}": _both(
        _on_a("DELETE", f"{_P}/sessions/s-001"),
        _on_b(("DELETE", f"{_B}/sessions/s-a-erased", None, "admin", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/sessions/{session_id}": _both(
        _on_a("GET", f"{_P}/sessions/s-001"), _on_b(("GET", f"{_B}/sessions/s-001", None, "member"))),
    "POST /v1/projects/{project_id}/sessions/{session_id}/diagnoses": _both(
        _on_a("POST", f"{_P}/sessions/s-001/diagnoses", {"report": {"x": 1}}),
        _on_b(("POST", f"{_B}/sessions/s-001/diagnoses", lambda w: {"report": {"x": 1},
                                                                      "diagnosis_id": w.ids["diagnosis"]},
               "member", (201, 409)))),
    "GET /v1/projects/{project_id}/sessions/{session_id}/diagnoses": _both(
        _on_a("GET", f"{_P}/sessions/s-a-only/diagnoses"),
        _on_b(("GET", f"{_B}/sessions/s-a-only/diagnoses", None, "member"))),
    "GET /v1/projects/{project_id}/sessions/{session_id}/diagnoses/{diagnosis_id}": _both(
        _on_a("GET", f"{_P}/sessions/s-a-only/diagnoses/{{diagnosis}}"),
        _on_b(("GET", f"{_B}/sessions/s-a-only/diagnoses/{{diagnosis}}", None, "member", _NOT_FOUND))),
    "GET /v1/projects/{project_id}/sessions/{session_id}/erasure": _both(
        _on_a("GET", f"{_P}/sessions/s-a-erased/erasure"),
        _on_b(("GET", f"{_B}/sessions/s-a-erased/erasure", None, "admin", _NOT_FOUND))),
    "POST /v1/projects/{project_id}/sessions/{session_id}/messages": _both(
        _on_a("POST", f"{_P}/sessions/s-001/messages", {"content": "P001 入组了吗？"}),
        _on_b(("POST", f"{_B}/sessions/s-001/messages", {"content": "总结 pt-1 的症状", "patient_id": "pt-1"},
               "member", (200,)),
              ("POST", f"{_B}/sessions/s-001/messages", {"content": "P001 入组了吗？现在一共入组多少人了"}, "member",
               (200,)),
              ("POST", f"{_B}/sessions/s-001/messages", lambda w: {"content": f"取消提醒 {w.ids['reminder']}"},
               "admin", (200,)),
              ("POST", f"{_B}/sessions/s-001/messages", {"content": "我的提醒有哪些？"}, "admin", (200,)),
              ("POST", f"{_B}/sessions/s-001/messages", {"content": _REMINDER_FIRE}, "member", (200,)))),
    "GET /v1/projects/{project_id}/sessions/{session_id}/messages/{message_id}/context": _both(
        _on_a("GET", f"{_P}/sessions/s-001/messages/{{message}}/context"),
        _on_b(("GET", f"{_B}/sessions/s-001/messages/{{message}}/context", None, "admin", _NOT_FOUND))),
    "PUT /v1/projects/{project_id}/sessions/{session_id}/messages/{message_id}/feedback": _both(
        _on_a("PUT", f"{_P}/sessions/s-001/messages/{{message}}/feedback", {"rating": "up"}),
        _on_b(("PUT", f"{_B}/sessions/s-001/messages/{{message}}/feedback", {"rating": "up"}, "member",
               _NOT_FOUND))),
    "POST /v1/projects/{project_id}/sessions/{session_id}/transcript": _both(
        _on_a("POST", f"{_P}/sessions/s-001/transcript", {"turns": [{"role": "patient", "content": "x"}]}),
        _on_b(("POST", f"{_B}/sessions/s-001/transcript", {"turns": [{"role": "patient", "content": "咳嗽"}]},
               "member", (200,)))),
    # B may send its own reminders anywhere the policy allows (A's receiver too: signed with B's key,
    # B's data); it never touches A's webhook or key
    "PUT /v1/projects/{project_id}/reminder-webhook": _both(
        _on_a("PUT", f"{_P}/reminder-webhook", {"url": "http://127.0.0.1:9/hook"}),
        _on_b(("PUT", f"{_B}/reminder-webhook", lambda w: {"url": f"http://127.0.0.1:{w.hook_a.port}/hook"},
               "admin", (200,)),
              ("PUT", f"{_B}/reminder-webhook", {"url": "https://169.254.169.254/latest/"}, "admin", (422,)))),
    "DELETE /v1/projects/{project_id}/reminder-webhook": _both(
        _on_a("DELETE", f"{_P}/reminder-webhook"),
        _on_b(("DELETE", f"{_B}/reminder-webhook", None, "admin", (204, 404)))),
    # A's WeCom channel: its settings only through A's own admin; B's own settings name nothing of A's
    "PUT /v1/projects/{project_id}/channels/wecom": _both(
        _on_a("PUT", f"{_P}/channels/wecom", {"corp_id": "ww0123456789abcdef"}),
        _on_b(("PUT", f"{_B}/channels/wecom", {"corp_id": "ww0123456789abcdef"}, "member", _FORBIDDEN))),
    "GET /v1/projects/{project_id}/channels/wecom": _both(
        _on_a("GET", f"{_P}/channels/wecom"),
        _on_b(("GET", f"{_B}/channels/wecom", None, "admin", _NOT_FOUND))),
    "DELETE /v1/projects/{project_id}/channels/wecom": _both(
        _on_a("DELETE", f"{_P}/channels/wecom"),
        _on_b(("DELETE", f"{_B}/channels/wecom", None, "admin", (204, 404)))),
    # WeCom's callback answers only a request signed with the project's own token (none here): a caller
    # of any project gets no answer naming A's channel
    "GET /v1/wecom/{project_id}/callback": _on_b(
        ("GET", "/v1/wecom/{a}/callback?msg_signature=x&timestamp=1&nonce=n&echostr=e", None, "admin",
         (401, 404, 422))),
    "POST /v1/wecom/{project_id}/callback": _on_b(
        ("POST", "/v1/wecom/{a}/callback?msg_signature=x&timestamp=1&nonce=n", {"xml": "x"}, "member",
         (400, 401, 404, 415, 422))),
}


def test_every_route_has_its_cross_tenant_attempts() -> None:
    assert sorted(ATTEMPTS) == sorted(route_table())


def _caller(call: Call) -> str:
    return call.as_ if call.as_ == "operator" else f"b_{call.as_}"


@pytest.mark.parametrize("route", sorted(ATTEMPTS))
def test_b08_project_bs_admin_and_member_never_reach_project_as_data_secrets_or_outbound_calls(
    world: World, route: str
) -> None:
    # Given A as it is, and what its REDCap and webhook received so far
    before = world.a_state()
    redcap_calls = len(world.stack.redcap.requests)
    # When B's admin and member try the route
    for call in ATTEMPTS[route](world):
        response = world.call(call.method, call.path, _caller(call), call.body, **call.headers)
        # Then the answer holds nothing of A's, and is what the route answers B
        for secret in world.secrets_of_a():
            assert secret not in response.text, (call, "A's data or secret in B's answer")
        assert response.status_code < 500, (call, response.text)
        if call.expect:
            assert response.status_code in call.expect, (call, response.status_code, response.text)
    # and A is unchanged, its token was sent nowhere, its webhook got nothing
    assert world.a_state() == before
    assert len(world.stack.redcap.requests) == redcap_calls
    assert set(world.redcap_b.tokens()) <= {B_TOKEN}
    assert world.hook_a.seen == []


def test_bs_chat_reached_its_own_source_with_its_own_token_only(world: World) -> None:
    # (after the routes above: B's chat asked its clinical source, so the outbound path was taken)
    response = world.call("POST", f"/v1/projects/{world.b}/sessions/s-xt-own/messages", "b_member",
                          {"content": "P001 入组了吗？"})
    assert response.status_code == 200, response.text
    assert world.redcap_b.tokens() and set(world.redcap_b.tokens()) == {B_TOKEN}
