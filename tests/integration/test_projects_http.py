"""Projects and members over HTTP through the local stack: a platform operator creates a project
and its first admin, the admin adds a PI and a CRC, each chats as themselves (the context view
names the asker), removing the CRC refuses their next request; every contract code of the
project and member routes; the project's time zone drives its activity markers.

Tokens here carry identity only (``mint_token``): every membership is made through the API.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import requests

from infra.local.stack import LocalStack
from infra.local.token import mint_token
from tests.support.auth import bearer, operator_bearer


def who(user: str) -> dict[str, str]:
    """A token for ``user``: identity only."""
    return {"Authorization": f"Bearer {mint_token(user)}"}


class Api:
    def __init__(self, stack: LocalStack) -> None:
        self.base = stack.base_url

    def call(self, method: str, path: str, headers: dict[str, str], body: Any = None) -> requests.Response:
        return requests.request(method, f"{self.base}{path}", headers=headers, json=body, timeout=30)


@pytest.fixture
def api_(local_stack: LocalStack) -> Api:
    return Api(local_stack)


@pytest.fixture
def project(api_: Api) -> dict[str, str]:
    """A fresh project in Europe/Berlin created by an operator, with ``u-admin`` as its first admin."""
    project_id = f"prj-{uuid.uuid4().hex[:8]}"
    ops = operator_bearer()
    created = api_.call("POST", "/v1/projects", ops,
                        {"project_id": project_id, "name": "柏林研究", "time_zone": "Europe/Berlin", "kind": "iit"})
    assert created.status_code == 201, created.text
    admin = f"u-admin-{project_id}"
    first = api_.call("PUT", f"/v1/projects/{project_id}/members/{admin}", ops,
                      {"project_role": "admin", "study_role": "PI", "display_name": "Dr. Weber"})
    assert first.status_code == 201, first.text
    return {"id": project_id, "admin": admin}


def member_body(project_role: str = "member", study_role: str = "CRC", name: str = "Anna") -> dict[str, str]:
    return {"project_role": project_role, "study_role": study_role, "display_name": name}


# -------------------------------------------------------------------------------- projects
def test_an_operator_creates_a_project_once_and_a_bad_zone_or_id_is_422(api_: Api) -> None:
    ops = operator_bearer()
    project_id = f"prj-{uuid.uuid4().hex[:8]}"
    body = {"project_id": project_id, "name": "新项目", "time_zone": "Europe/Berlin", "kind": "consultation"}
    created = api_.call("POST", "/v1/projects", ops, body)
    assert created.status_code == 201, created.text
    assert {k: created.json()[k] for k in ("project_id", "time_zone", "kind")} == {
        "project_id": project_id, "time_zone": "Europe/Berlin", "kind": "consultation"}
    assert api_.call("POST", "/v1/projects", ops, body).status_code == 409
    for bad in ({**body, "project_id": f"x{uuid.uuid4().hex[:6]}", "time_zone": "Mars/Olympus"},
                {**body, "project_id": "bad id/with slash"}, {**body, "project_id": "-leading-dash"},
                {**body, "project_id": f"x{uuid.uuid4().hex[:6]}", "kind": "trial"}):
        response = api_.call("POST", "/v1/projects", ops, bad)
        assert response.status_code == 422, (bad, response.text)


def test_only_a_platform_operator_creates_projects(api_: Api) -> None:
    body = {"project_id": f"prj-{uuid.uuid4().hex[:8]}", "name": "x", "time_zone": "UTC", "kind": "iit"}
    # a demo project's admin is no operator
    response = api_.call("POST", "/v1/projects", bearer("demo-iit:admin", "u-demo-admin"), body)
    assert response.status_code == 403, response.text


def test_an_operator_is_not_a_member_of_the_project_it_created(api_: Api, project: dict[str, str]) -> None:
    ops = operator_bearer()
    for path in ("", "/members", "/memory", "/reports"):
        assert api_.call("GET", f"/v1/projects/{project['id']}{path}", ops).status_code == 403, path


def test_a_member_reads_the_project_and_only_an_admin_patches_it(api_: Api, project: dict[str, str]) -> None:
    admin = who(project["admin"])
    api_.call("PUT", f"/v1/projects/{project['id']}/members/u-crc-r", admin, member_body())
    crc = who("u-crc-r")
    got = api_.call("GET", f"/v1/projects/{project['id']}", crc)
    assert (got.status_code, got.json()["time_zone"], got.json()["clinical_data"]) == (200, "Europe/Berlin", None)
    assert api_.call("PATCH", f"/v1/projects/{project['id']}", crc, {"name": "改名"}).status_code == 403
    patched = api_.call("PATCH", f"/v1/projects/{project['id']}", admin, {"name": "改名"})
    assert (patched.status_code, patched.json()["name"], patched.json()["time_zone"]) == (200, "改名", "Europe/Berlin")


def test_patch_sets_a_clinical_data_source_by_secret_name_and_refuses_clear_text_urls(
    api_: Api, project: dict[str, str]
) -> None:
    admin = who(project["admin"])
    path = f"/v1/projects/{project['id']}"
    good = {"source": "redcap", "api_url": "https://redcap.example.org/api/", "token_secret": "agent-memory/redcap/p1"}
    local = {**good, "api_url": "http://127.0.0.1:8090/api/"}
    # (the record also says whether the service holds a token: not for a named secret)
    unset = {"token_set": False, "token_updated_at": None}
    for body in (good, local):
        response = api_.call("PATCH", path, admin, {"clinical_data": body})
        assert (response.status_code, response.json()["clinical_data"]) == (200, {**body, **unset})
    for bad in ({**good, "api_url": "http://redcap.example.org/api/"}, {**good, "api_url": "ftp://x/"},
                {**good, "token_secret": "has spaces"}, {**good, "token_secret": "x" * 513},
                {**good, "source": "openclinica"}, {**good, "token": "the-secret-itself"},
                # a secret outside the prefix the functions may read (another secret of the account)
                {**good, "token_secret": "agent-memory/anthropic-api-key"},
                # credentials in the URL (they would be sent and logged as part of it)
                {**good, "api_url": "https://user:pw@redcap.example.org/api/"},
                {"time_zone": "Nowhere/Land"}):
        patch: dict[str, Any] = bad if "time_zone" in bad else {"clinical_data": bad}
        response = api_.call("PATCH", path, admin, patch)
        assert response.status_code == 422, (bad, response.text)
    assert api_.call("GET", path, admin).json()["clinical_data"] == {**local, **unset}


# --------------------------------------------------------------------------------- members
def test_put_member_is_201_when_new_and_200_when_replaced(api_: Api, project: dict[str, str]) -> None:
    admin = who(project["admin"])
    path = f"/v1/projects/{project['id']}/members/u-crc-1"
    new = api_.call("PUT", path, admin, member_body(name="Anna Schmidt"))
    again = api_.call("PUT", path, admin, member_body(study_role="DM", name="Anna Schmidt"))
    assert (new.status_code, again.status_code) == (201, 200)
    assert {k: again.json()[k] for k in ("user_id", "project_role", "study_role", "display_name", "added_by")} == {
        "user_id": "u-crc-1", "project_role": "member", "study_role": "DM", "display_name": "Anna Schmidt",
        "added_by": project["admin"]}
    listed = api_.call("GET", f"/v1/projects/{project['id']}/members", who("u-crc-1"))
    assert [(m["user_id"], m["study_role"]) for m in listed.json()["items"]] == [
        (project["admin"], "PI"), ("u-crc-1", "DM")]


@pytest.mark.parametrize("body", [
    member_body(study_role="Nurse"), member_body(project_role="owner"), {"project_role": "member"},
    member_body(name="   "), member_body(name="a\u0000b"),
])
def test_unknown_roles_or_a_bad_body_are_422(api_: Api, project: dict[str, str], body: dict[str, str]) -> None:
    response = api_.call("PUT", f"/v1/projects/{project['id']}/members/u-x", who(project["admin"]), body)
    assert response.status_code == 422, response.text


@pytest.mark.parametrize("user_id", ["u" * 129, "u%0Ax", "u%00x", "u%7F"])
def test_a_user_id_over_128_characters_or_with_control_characters_is_400(
    api_: Api, project: dict[str, str], user_id: str
) -> None:
    response = api_.call("PUT", f"/v1/projects/{project['id']}/members/{user_id}", who(project["admin"]),
                         member_body())
    assert response.status_code == 400, response.text


def test_a_member_of_one_project_cannot_list_or_change_anothers_members(api_: Api, project: dict[str, str]) -> None:
    outsider = bearer("demo-iit:admin", "u-demo-admin-2")
    assert api_.call("GET", f"/v1/projects/{project['id']}/members", outsider).status_code == 403
    assert api_.call("PUT", f"/v1/projects/{project['id']}/members/u-y", outsider, member_body()).status_code == 403
    assert api_.call("DELETE", f"/v1/projects/{project['id']}/members/{project['admin']}", outsider).status_code == 403


def test_a_member_cannot_add_members(api_: Api, project: dict[str, str]) -> None:
    admin = who(project["admin"])
    api_.call("PUT", f"/v1/projects/{project['id']}/members/u-m", admin, member_body())
    response = api_.call("PUT", f"/v1/projects/{project['id']}/members/u-n", who("u-m"), member_body())
    assert response.status_code == 403, response.text


def test_removing_or_demoting_the_last_admin_is_409(api_: Api, project: dict[str, str]) -> None:
    admin = who(project["admin"])
    path = f"/v1/projects/{project['id']}/members/{project['admin']}"
    removed = api_.call("DELETE", path, admin)
    demoted = api_.call("PUT", path, admin, member_body(study_role="PI"))
    assert (removed.status_code, removed.json()["error"]) == (409, "last_admin")
    assert (demoted.status_code, demoted.json()["error"]) == (409, "last_admin")
    # with a second admin the first may go
    api_.call("PUT", f"/v1/projects/{project['id']}/members/u-admin-2", admin, member_body("admin", "Sub-I"))
    assert api_.call("DELETE", path, admin).status_code == 204
    assert api_.call("DELETE", path, who("u-admin-2")).status_code == 404


# ------------------------------------------------------------------------------ acceptance
def test_a_team_onboards_chats_as_itself_and_a_removed_crc_is_refused(
    api_: Api, project: dict[str, str], local_stack: LocalStack
) -> None:
    admin = who(project["admin"])
    members = f"/v1/projects/{project['id']}/members"
    assert api_.call("PUT", f"{members}/u-pi", admin, member_body("member", "PI", "Prof. Braun")).status_code == 201
    assert api_.call("PUT", f"{members}/u-crc", admin, member_body("member", "CRC", "Lena")).status_code == 201

    # the PI chats; the admin's context view of that turn names the PI as the asker
    chat = f"/v1/projects/{project['id']}/sessions/s-1/messages"
    said = api_.call("POST", chat, who("u-pi"), {"content": "以后汇报只看数据"})
    assert said.status_code == 200, said.text
    context = api_.call("GET", f"/v1/projects/{project['id']}/sessions/s-1/messages/{said.json()['message_id']}"
                        "/context", admin)
    assert context.json()["asker"] == {"user_id": "u-pi", "display_name": "Prof. Braun", "study_role": "PI"}
    session_text = next(b["text"] for c in context.json()["calls"] for b in c["blocks"] if b["name"] == "session")
    assert "Asker: Prof. Braun (user u-pi), study role PI." in session_text

    # the CRC chats, then is removed: their next request, chat or read, is 403 and writes nothing
    keyed = {**who("u-crc"), "Idempotency-Key": "crc-weekend-1"}
    assert api_.call("POST", chat, keyed, {"content": "周末也可以给我发消息"}).status_code == 200
    assert api_.call("POST", chat, keyed, {"content": "周末也可以给我发消息"}).status_code == 200  # a replay
    assert api_.call("DELETE", f"{members}/u-crc", admin).status_code == 204
    # (a replay of their earlier turn with the same Idempotency-Key too)
    replay = api_.call("POST", chat, keyed, {"content": "周末也可以给我发消息"})
    assert (replay.status_code, replay.json()["error"]) == (403, "forbidden")
    refused = api_.call("POST", chat, who("u-crc"), {"content": "还在吗"})
    assert (refused.status_code, refused.json()["error"]) == (403, "forbidden")
    assert api_.call("GET", f"/v1/projects/{project['id']}/reports", who("u-crc")).status_code == 403
    # a non-member's malformed chat request is 403 too, never a 422 describing the route
    assert api_.call("POST", chat, who("u-crc"), {"no": "content"}).status_code == 403

    # the flow log holds each speaker's user id and study role at the time of the message
    flow = local_stack.aws_client("dynamodb").scan(TableName=local_stack.table_names["FlowLogTable"])["Items"]
    spoken = sorted((i["user_id"]["S"], i["study_role"]["S"]) for i in flow
                    if i["project_id"]["S"] == project["id"] and i["role"]["S"] == "user")
    assert spoken == [("u-crc", "CRC"), ("u-pi", "PI")]


def test_the_activity_marker_follows_the_projects_time_zone_after_a_patch(
    api_: Api, project: dict[str, str], local_stack: LocalStack
) -> None:
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    admin = who(project["admin"])
    # Kiritimati (UTC+14) and Pago Pago (UTC-11) are never on the same calendar day
    assert api_.call("PATCH", f"/v1/projects/{project['id']}", admin, {"time_zone": "Pacific/Kiritimati"}).ok
    api_.call("POST", f"/v1/projects/{project['id']}/sessions/s-a/messages", admin, {"content": "你好"})
    assert api_.call("PATCH", f"/v1/projects/{project['id']}", admin, {"time_zone": "Pacific/Pago_Pago"}).ok
    api_.call("POST", f"/v1/projects/{project['id']}/sessions/s-b/messages", admin, {"content": "你好"})
    items = local_stack.aws_client("dynamodb").query(
        TableName=local_stack.table_names["MemoryTable"], KeyConditionExpression="pk = :p AND begins_with(sk, :a)",
        ExpressionAttributeValues={":p": {"S": project["id"]}, ":a": {"S": "ACTIVE#"}})["Items"]
    now = datetime.now(UTC)
    expected = {f"ACTIVE#{now.astimezone(ZoneInfo(z)).date().isoformat()}"
                for z in ("Pacific/Kiritimati", "Pacific/Pago_Pago")}
    assert {i["sk"]["S"] for i in items} == expected


# ------------------------------------------------------------------------- local tooling
def test_make_token_makes_the_user_a_member_while_the_stack_runs_and_keeps_a_study_role(
    api_: Api, local_stack: LocalStack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from infra.local.token import main

    monkeypatch.setattr("infra.local.token.running_stack_url", lambda: local_stack.base_url)
    user = f"u-tok-{uuid.uuid4().hex[:6]}"
    # When make token runs for a new user with STUDY_ROLE=CRC
    assert main(["--user", user, "--project", "demo-iit", "--role", "member", "--study-role", "CRC"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # Then it says so before the token, and the token (the last line) opens the project
    assert f"# made {user} a member of demo-iit: project role member, study role CRC" in lines
    token = {"Authorization": f"Bearer {lines[-1]}"}
    assert api_.call("GET", "/v1/projects/demo-iit", token).status_code == 200
    # When it runs again as admin without a study role, Then the role changes and CRC is kept
    assert main(["--user", user, "--project", "demo-iit", "--role", "admin"]) == 0
    assert f"# updated {user} a member of demo-iit: project role admin, study role CRC" in capsys.readouterr().out
    # and a third identical run changes nothing
    assert main(["--user", user, "--project", "demo-iit", "--role", "admin"]) == 0
    assert f"# {user} is already a member of demo-iit" in capsys.readouterr().out
    # an unknown project is reported, the token still printed last
    assert main(["--user", user, "--project", "no-such-project", "--role", "member"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith(f"# could not make {user} a member of no-such-project (404")
    assert not out[-1].startswith("#")


def test_the_demo_projects_come_with_a_pi_two_crcs_and_a_dm(api_: Api) -> None:
    for project_id in ("demo-iit", "demo-clinic"):
        listed = api_.call("GET", f"/v1/projects/{project_id}/members", bearer(f"{project_id}:admin", "dev"))
        team = {m["user_id"]: (m["project_role"], m["study_role"]) for m in listed.json()["items"]}
        assert {k: team[k] for k in ("pi-zhang", "crc-li", "crc-wang", "dm-chen")} == {
            "pi-zhang": ("admin", "PI"), "crc-li": ("member", "CRC"), "crc-wang": ("member", "CRC"),
            "dm-chen": ("member", "DM")}


def test_an_imported_transcript_records_the_importing_members_study_role(
    api_: Api, project: dict[str, str], local_stack: LocalStack
) -> None:
    admin = who(project["admin"])
    api_.call("PUT", f"/v1/projects/{project['id']}/members/u-doc", admin, member_body("member", "Sub-I", "Dr. Roth"))
    turns = {"turns": [{"role": "doctor", "content": "哪里不舒服？"}, {"role": "patient", "content": "头痛两天"}]}
    response = api_.call("POST", f"/v1/projects/{project['id']}/sessions/t-1/transcript", who("u-doc"), turns)
    assert response.json() == {"appended": 2}
    flow = local_stack.aws_client("dynamodb").scan(TableName=local_stack.table_names["FlowLogTable"])["Items"]
    spoken = sorted((i["content"]["S"], i.get("study_role", {}).get("S")) for i in flow
                    if i["project_id"]["S"] == project["id"] and i["session_id"]["S"] == "t-1")
    assert spoken == [("哪里不舒服？", "Sub-I"), ("头痛两天", None)]


# ------------------------------------------------------------------ concurrent requests, one process
def test_concurrent_member_writes_each_store_their_own_body(api_: Api, project: dict[str, str]) -> None:
    # Given 12 different member bodies sent at once to one function (several containers of one
    # process locally, as Lambda runs several execution environments)
    from concurrent.futures import ThreadPoolExecutor

    admin = who(project["admin"])
    wanted = {
        f"u-{i}": member_body("admin" if i % 2 else "member", "PI" if i % 2 else "CRC", f"name-{i}") for i in range(12)
    }

    def put(user: str) -> int:
        return api_.call("PUT", f"/v1/projects/{project['id']}/members/{user}", admin, wanted[user]).status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(put, wanted))

    # Then every write answered 201 and stored exactly the body it carried
    assert statuses == [201] * 12
    members = api_.call("GET", f"/v1/projects/{project['id']}/members", admin).json()["items"]
    stored = {m["user_id"]: {k: m[k] for k in ("project_role", "study_role", "display_name")} for m in members}
    assert {u: stored[u] for u in wanted} == wanted
