"""The admin function's place in template.yaml: least privilege, routes, public pages.

Linting (cfn-lint, ``sam validate --lint``) of the whole template is in ``test_template.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.http.routes import route_table
from agent_memory.http.routing import route_key_of
from infra.template_model import load_template

ROUTE_POLICY = route_table()


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    return load_template()["Resources"]


def _statements(function: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for policy in function["Properties"].get("Policies") or []:
        assert isinstance(policy, dict) and set(policy) <= {"Version", "Statement"}, policy  # inline only
        out.extend(policy["Statement"])
    return out


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def test_admin_function_writes_only_the_memory_table_and_reads_the_flow_log_by_query_only(
    resources: dict[str, Any],
) -> None:
    # (the customer-key grant, present only with KmsKeyArn, is checked in test_governance_template.py;
    # the write-only project secrets in test_project_secrets_template.py)
    statements = {s["Sid"]: s for s in _statements(resources["AdminFunction"])
                  if "Fn::If" not in s and not str(s.get("Sid", "")).startswith("ProjectSecrets")}
    assert set(statements) == {"MemoryReadWrite", "MemberIndexQuery", "FlowLogEvidenceRead"}
    assert all(s["Effect"] == "Allow" for s in statements.values())
    memory = statements["MemoryReadWrite"]
    assert memory["Resource"] == {"Fn::GetAtt": ["MemoryTable", "Arn"]}
    assert set(_actions(memory)) == {
        "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DeleteItem",  # removing a member (MEMBER# items only)
    }
    # one index of the MemoryTable (a user's own memberships), read only
    assert statements["MemberIndexQuery"]["Resource"] == {"Fn::Sub": "${MemoryTable.Arn}/index/MemberIndex"}
    assert _actions(statements["MemberIndexQuery"]) == ["dynamodb:Query"]
    # the flow log: a Query of the cited messages, never a Scan, a batch read or a write
    assert statements["FlowLogEvidenceRead"]["Resource"] == {"Fn::GetAtt": ["FlowLogTable", "Arn"]}
    assert _actions(statements["FlowLogEvidenceRead"]) == ["dynamodb:Query"]
    text = json.dumps(resources["AdminFunction"])
    for other in ("SessionsTable", "IdempotencyTable", "secretsmanager", '"*"'):
        assert other not in json.dumps(list(statements.values())), other
    assert "anthropic" not in text.lower()


#: The project and member routes (also in the admin function, the MemoryTable's one HTTP writer).
PROJECT_ROUTES = {
    "POST /v1/projects": "operator",
    "GET /v1/projects/{project_id}": "member",
    "PATCH /v1/projects/{project_id}": "admin",
    "GET /v1/projects/{project_id}/members": "member",
    "PUT /v1/projects/{project_id}/members/{user_id}": "admin_or_operator",
    "DELETE /v1/projects/{project_id}/members/{user_id}": "admin",
}


#: The team console's pages and files (public: static; their data calls carry the token).
CONSOLE_ROUTES = {
    "GET /console", "GET /admin", "GET /console/{name}", "GET /console/{folder}/{name}",
    "GET /console/{folder}/{subfolder}/{name}",
}
#: What members may read besides the project routes, and the caller's own identity.
OTHER_ROUTES = {
    "GET /v1/projects/{project_id}/reports/{iso_week}/revisions": "member",
    "GET /v1/me": "signed_in",
}


def test_admin_routes_belong_to_the_admin_function_and_are_admin_only(resources: dict[str, Any]) -> None:
    events = resources["AdminFunction"]["Properties"]["Events"]
    keys = {route_key_of(e["Properties"]["Method"], e["Properties"]["Path"]): e["Properties"] for e in events.values()}
    assert "PUT /v1/projects/{project_id}/memory" in keys
    assert "PUT /v1/projects/{project_id}/reports/{iso_week}" in keys
    assert set(PROJECT_ROUTES) | CONSOLE_ROUTES | set(OTHER_ROUTES) <= set(keys)
    for key, props in keys.items():
        if key in CONSOLE_ROUTES:
            assert ROUTE_POLICY[key] == "public" and props["Auth"] == {"Authorizer": "NONE"}
        elif key in OTHER_ROUTES:
            assert ROUTE_POLICY[key] == OTHER_ROUTES[key], key
            assert "Auth" not in props, key
        elif key in PROJECT_ROUTES:
            assert ROUTE_POLICY[key] == PROJECT_ROUTES[key], key
            assert "Auth" not in props, key
        else:
            assert ROUTE_POLICY[key] == "admin", key
            assert "Auth" not in props, key  # the API's default JWT authorizer applies


def test_admin_function_has_its_log_group(resources: dict[str, Any]) -> None:
    props = resources["AdminFunction"]["Properties"]
    assert props["LoggingConfig"]["LogGroup"] == {"Ref": "AdminFunctionLogGroup"}
    assert resources["AdminFunctionLogGroup"]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
