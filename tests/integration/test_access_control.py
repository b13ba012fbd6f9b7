"""Access control of EVERY route of template.yaml, over HTTP through the local stack (no project
reaches another's data).

The routes are enumerated from the template (``infra.template_model.function_specs``), so a route
someone adds is covered without touching this file, and each template route must be declared, with
its access, by the routes of the function the template gives it to
(``agent_memory.http.routes.<function>``; the API's table is ``route_table()``, derived from those
declarations) or the test fails.

Per route: 401 without a token and with an expired one (the gateway, before the function); 403 for
a user of another project (P2's admin calling P1 - both projects use session ``s-001`` and patient
``pt-1``); 403 for a member on an admin route; neither 401 nor 403 (nor a 5xx) for an allowed
caller. Public routes answer without a token (WeCom's callback when WeCom's signature is right).
"""

from __future__ import annotations

import re
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import requests

from agent_memory.domain.models import Project
from agent_memory.http.routes import function_routes, route_table
from agent_memory.http.routing import route_key_of
from infra.local.stack import LocalStack
from infra.local.token import mint_token
from infra.template_model import RouteSpec, function_specs, load_template, table_specs
from tests.support.auth import bearer, operator_bearer

_TEMPLATE = load_template()
_SPECS = function_specs(_TEMPLATE, {t.logical_id: t.logical_id for t in table_specs(_TEMPLATE)})
ROUTES: list[tuple[str, RouteSpec]] = [(spec.logical_id, route) for spec in _SPECS for route in spec.routes]
#: The API's route table, derived from the route declarations.
ROUTE_POLICY = route_table()
PROTECTED = [(fn, r) for fn, r in ROUTES if ROUTE_POLICY.get(route_key_of(r.method, r.path)) != "public"]
PUBLIC = [(fn, r) for fn, r in ROUTES if ROUTE_POLICY.get(route_key_of(r.method, r.path)) == "public"]

#: Same ids in both projects: only the project in the path differs.
PATH_VALUES = {"session_id": "s-001", "patient_id": "pt-1", "version": "1", "iso_week": "2026-W05"}
#: The console's file routes name files of its folder (functions/admin/static/console/).
CONSOLE_FILES = {
    "/console/{name}": "/console/index.html",
    "/console/{folder}/{name}": "/console/js/app.js",
    "/console/{folder}/{subfolder}/{name}": "/console/js/views/memory.js",
}


def _id(item: tuple[str, RouteSpec]) -> str:
    return f"{item[1].method} {item[1].path}"


def _url(stack: LocalStack, route: RouteSpec, project_id: str) -> str:
    if route.path in CONSOLE_FILES:
        return stack.base_url + CONSOLE_FILES[route.path]

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return project_id if name == "project_id" else PATH_VALUES.get(name, "x-1")

    return stack.base_url + re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\+?\}", value, route.path)


def _call(stack: LocalStack, route: RouteSpec, project_id: str, headers: dict[str, str]) -> requests.Response:
    body: dict[str, Any] | None = {} if route.method in ("POST", "PUT", "PATCH") else None
    return requests.request(
        route.method, _url(stack, route, project_id), headers=headers, json=body, timeout=30
    )


@pytest.fixture(scope="module")
def projects(local_stack: LocalStack) -> dict[str, str]:
    """Two projects P1 and P2 (fresh ids, so other tests' data never matters)."""
    suffix = uuid.uuid4().hex[:8]
    ids = {"P1": f"acl-p1-{suffix}", "P2": f"acl-p2-{suffix}"}
    for project_id in ids.values():
        local_stack.repo.projects.put_project(
            Project(project_id=project_id, name=project_id, created_at=datetime(2026, 1, 5, tzinfo=UTC))
        )
    return ids


# ------------------------------------------------------------------------------ the policy table
def test_every_template_route_is_declared_with_its_access_by_its_own_function() -> None:
    # Given each HTTP function of the template and the routes its handler's module declares
    for spec in _SPECS:
        if not spec.routes:
            continue
        declared = function_routes(spec.code_uri.rstrip("/").rsplit("/", 1)[-1]).table
        keys = [route_key_of(r.method, r.path) for r in spec.routes]
        # Then the template gives the function exactly the routes it declares
        assert sorted(k for k in keys if k not in declared) == [], f"{spec.logical_id}: routes it does not declare"
        assert sorted(set(declared) - set(keys)) == [], f"{spec.logical_id}: declared routes the template lacks"
    keys = [route_key_of(r.method, r.path) for _, r in ROUTES]
    assert len(keys) == len(set(keys)), "a route is declared twice in template.yaml"
    assert sorted(ROUTE_POLICY) == sorted(keys)


@pytest.mark.parametrize("item", ROUTES, ids=_id)
def test_only_public_routes_opt_out_of_the_jwt_authorizer(item: tuple[str, RouteSpec]) -> None:
    _, route = item
    public = ROUTE_POLICY.get(route_key_of(route.method, route.path)) == "public"
    assert route.auth is not public, f"{_id(item)}: template auth={route.auth} but policy says public={public}"


# ---------------------------------------------------------------------------------- over HTTP
def _wecom_signed(stack: LocalStack, route: RouteSpec) -> requests.Response:
    """WeCom's callback, which WeCom's signature authenticates instead of a token: a URL verification
    (GET) or an event (POST: acknowledged, no turn) signed and encrypted with demo-iit's channel."""
    import xmltodict

    from agent_memory.adapters.wecom.crypto import WeComCallbackCrypto

    assert stack.wecom is not None
    demo = stack.wecom.describe()
    crypto = WeComCallbackCrypto(corp_id=demo["corp_id"], agent_id=demo["agent_id"], token=demo["token"],
                                 encoding_aes_key=demo["encoding_aes_key"])
    now = str(int(time.time()))
    event = (f"<xml><ToUserName>{demo['corp_id']}</ToUserName><FromUserName>crc.li</FromUserName><CreateTime>{now}"
             f"</CreateTime><MsgType>event</MsgType><Event>enter_agent</Event><AgentID>{demo['agent_id']}</AgentID></xml>")
    signature, body = crypto.seal_callback(event, timestamp=now, nonce="2718")
    params = {"msg_signature": signature, "timestamp": now, "nonce": "2718"}
    if route.method == "GET":  # the echostr is such a ciphertext; the answer is its plaintext
        params["echostr"] = xmltodict.parse(body)["xml"]["Encrypt"]
    return requests.request(route.method, _url(stack, route, "demo-iit"), params=params, timeout=30,
                            data=body.encode() if route.method == "POST" else None)


@pytest.mark.parametrize("item", PUBLIC, ids=_id)
def test_public_route_answers_without_a_token(local_stack: LocalStack, item: tuple[str, RouteSpec]) -> None:
    signed = item[1].path.startswith("/v1/wecom/")
    response = _wecom_signed(local_stack, item[1]) if signed else _call(local_stack, item[1], "demo-iit", {})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("item", PROTECTED, ids=_id)
def test_b08_route_is_401_without_a_valid_token(
    local_stack: LocalStack, projects: dict[str, str], item: tuple[str, RouteSpec]
) -> None:
    _, route = item
    bearer(f"{projects['P1']}:admin", "u-acl")  # a member: only the token's expiry refuses it
    expired = mint_token("u-acl", ttl_s=60, now=time.time() - 3600)
    for headers in ({}, {"Authorization": f"Bearer {expired}"}, {"Authorization": "Bearer x.y.z"}):
        response = _call(local_stack, route, projects["P1"], headers)
        assert response.status_code == 401, (headers.keys(), response.text)
        assert response.json() == {"message": "Unauthorized"}


@pytest.mark.parametrize("item", PROTECTED, ids=_id)
def test_b08_route_is_403_for_a_user_of_another_project(
    local_stack: LocalStack, projects: dict[str, str], item: tuple[str, RouteSpec]
) -> None:
    # Given P2's admin (same session / patient ids exist in both projects), When they call P1's route
    response = _call(local_stack, item[1], projects["P1"], bearer(f"{projects['P2']}:admin", "u-p2-admin"))
    if ROUTE_POLICY[route_key_of(item[1].method, item[1].path)] == "signed_in":
        # a route naming no project answers the caller's own data: P2's membership, nothing of P1
        assert response.status_code == 200, response.text
        assert [p["project_id"] for p in response.json()["projects"]] == [projects["P2"]]
        return
    # Then 403, whatever the body or the ids
    assert response.status_code == 403, response.text
    assert response.json()["error"] == "forbidden"


@pytest.mark.parametrize("item", PROTECTED, ids=_id)
def test_route_is_403_for_a_member_when_it_is_an_admin_route(
    local_stack: LocalStack, projects: dict[str, str], item: tuple[str, RouteSpec]
) -> None:
    _, route = item
    access = ROUTE_POLICY[route_key_of(route.method, route.path)]
    response = _call(local_stack, route, projects["P1"], bearer(f"{projects['P1']}:member", "u-p1-member"))
    if access in ("admin", "operator", "admin_or_operator"):
        assert response.status_code == 403, response.text
    else:
        assert response.status_code not in (401, 403), response.text
        assert response.status_code < 500, response.text


@pytest.mark.parametrize("item", PROTECTED, ids=_id)
def test_route_admits_the_project_admin(
    local_stack: LocalStack, projects: dict[str, str], item: tuple[str, RouteSpec]
) -> None:
    access = ROUTE_POLICY[route_key_of(item[1].method, item[1].path)]
    response = _call(local_stack, item[1], projects["P1"], bearer(f"{projects['P1']}:admin", "u-p1-admin"))
    if access == "operator":  # creating projects is the platform operators' alone
        assert response.status_code == 403, response.text
        return
    assert response.status_code not in (401, 403), response.text
    assert response.status_code < 500, response.text


@pytest.mark.parametrize("item", PROTECTED, ids=_id)
def test_a_platform_operator_is_admitted_only_to_operator_routes_and_is_no_member_by_being_one(
    local_stack: LocalStack, projects: dict[str, str], item: tuple[str, RouteSpec]
) -> None:
    access = ROUTE_POLICY[route_key_of(item[1].method, item[1].path)]
    response = _call(local_stack, item[1], projects["P1"], operator_bearer("u-ops"))
    if access in ("operator", "admin_or_operator"):
        assert response.status_code not in (401, 403), response.text
        assert response.status_code < 500, response.text
    elif access == "signed_in":  # their own identity: an operator, a member of no project
        assert response.status_code == 200, response.text
        assert (response.json()["operator"], response.json()["projects"]) == (True, [])
    else:
        assert response.status_code == 403, response.text


def test_a_stale_projects_claim_grants_nothing(local_stack: LocalStack, projects: dict[str, str]) -> None:
    # Given a token that still lists P1 in the old custom:projects claim, for a user who is no member
    token = mint_token("u-claim-only", extra={"custom:projects": f"{projects['P1']}:admin"})
    # When they read P1's reports and memory, Then both are refused: the membership decides
    for path in ("reports", "memory"):
        response = requests.get(f"{local_stack.base_url}/v1/projects/{projects['P1']}/{path}",
                                headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert response.status_code == 403, response.text


def test_a_token_for_several_projects_opens_each_of_them(local_stack: LocalStack, projects: dict[str, str]) -> None:
    headers = bearer(f"{projects['P1']}:member,{projects['P2']}:admin", "u-both")
    for project_id in projects.values():
        response = requests.get(f"{local_stack.base_url}/v1/projects/{project_id}/reports", headers=headers, timeout=30)
        assert response.status_code == 200, response.text
    # and the role is per project: admin in P2, member in P1
    p2 = requests.get(f"{local_stack.base_url}/v1/projects/{projects['P2']}/memory/audit", headers=headers, timeout=30)
    p1 = requests.get(f"{local_stack.base_url}/v1/projects/{projects['P1']}/memory/audit", headers=headers, timeout=30)
    assert (p2.status_code, p1.status_code) == (200, 403)
