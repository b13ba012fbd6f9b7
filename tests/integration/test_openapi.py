"""The OpenAPI document (``GET /v1/openapi.json``): every route of every function, with who may call it,
generated from the route declarations by Powertools (``make openapi``) and never stale."""

from __future__ import annotations

import json

import requests

from agent_memory.http.routes import route_table
from infra.local.stack import LocalStack
from infra.openapi import OPENAPI_FILE, build
from infra.template_model import function_specs, load_template, table_specs


def test_the_committed_document_matches_the_routes() -> None:
    fresh = build()
    assert fresh == OPENAPI_FILE.read_text(encoding="utf-8"), "functions/api/openapi.json is stale: run `make openapi`"


def test_every_template_route_is_documented_with_its_access() -> None:
    template = load_template()
    specs = function_specs(template, {t.logical_id: t.logical_id for t in table_specs(template)})
    paths = json.loads(OPENAPI_FILE.read_text(encoding="utf-8"))["paths"]
    table = route_table()
    for spec in specs:
        for route in spec.routes:
            operation = paths.get(route.path, {}).get(route.method.lower())
            assert operation is not None, f"{route.method} {route.path} ({spec.logical_id}) is not in the document"
            assert operation["x-access"] == table[f"{route.method} {route.path}"]
            assert (operation.get("security") == []) is (not route.auth)


def test_the_document_is_served_without_a_token(local_stack: LocalStack) -> None:
    response = requests.get(f"{local_stack.base_url}/v1/openapi.json", timeout=30)
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.") and document["info"]["title"] == "Agent Memory Service API"
    assert document["components"]["securitySchemes"]["jwt"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
    }
    put = document["paths"]["/v1/projects/{project_id}/memory"]["put"]
    assert put["x-access"] == "admin" and "403" in put["responses"]
