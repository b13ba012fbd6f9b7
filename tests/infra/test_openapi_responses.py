"""The OpenAPI document states every status each route of template.yaml can answer, with the error
body, derived from what the route is (access, method, parameters, LLM), so routes added later are
documented by the same rules."""

from __future__ import annotations

import json
import re
from typing import Any

from agent_memory.http.routes import route_table
from infra.openapi import OPENAPI_FILE, response_codes
from infra.template_model import FUNCTION_TYPE, function_specs, load_template, resources_of_type, table_specs

_BODY = {"POST", "PUT", "PATCH"}
_WRITE = _BODY | {"DELETE"}


def _llm_functions(template: dict[str, Any]) -> set[str]:
    """Functions the template lets invoke a model (Bedrock) or read the Anthropic key."""
    return {
        logical_id
        for logical_id, resource in resources_of_type(template, FUNCTION_TYPE).items()
        if "bedrock:InvokeModel" in json.dumps((resource.get("Properties") or {}).get("Policies") or [])
    }


def _requires_if_match(operation: dict[str, Any]) -> bool:
    return any(p["in"] == "header" and p["name"] == "if-match" and p.get("required")
               for p in operation.get("parameters") or [])


def _expected(method: str, path: str, auth: bool, llm: bool, if_match: bool, raw_body: bool = False) -> set[int]:
    codes = {429}
    has_params = "{" in path
    if auth:
        codes |= {401, 403, 502, 503}
    if has_params:
        codes |= {400, 404, 422}
    if method in _BODY:
        codes |= {400, 413} if raw_body else {400, 413, 415, 422}
    if method in _WRITE and auth:
        codes.add(409)
    if if_match:
        codes.add(428)
    if llm:
        codes |= {502, 503, 504}
    return codes


def test_every_template_route_documents_every_status_it_can_answer_with_the_error_body() -> None:
    template = load_template()
    llm = _llm_functions(template)
    specs = function_specs(template, {t.logical_id: t.logical_id for t in table_specs(template)})
    document = json.loads(OPENAPI_FILE.read_text(encoding="utf-8"))
    assert set(document["components"]["schemas"]["Error"]["required"]) == {"error", "reason", "retryable", "request_id"}
    checked = 0
    for spec in specs:
        for route in spec.routes:
            operation = document["paths"][route.path][route.method.lower()]
            responses = operation["responses"]
            documented = {int(code) for code in responses}
            expected = _expected(route.method, route.path, route.auth, spec.logical_id in llm,
                                 _requires_if_match(operation), "x-raw-body" in operation)
            missing = expected - documented
            assert not missing, f"{route.method} {route.path} does not document {sorted(missing)}"
            # a success: a 2xx, or a redirect (the console's page: /console and /admin answer 302)
            assert any(200 <= code < 400 for code in documented), f"{route.method} {route.path}: no success"
            for code in expected:
                entry = responses[str(code)]
                if route.method == "HEAD":
                    assert "content" not in entry  # a HEAD answer has no body
                    continue
                schema = json.dumps(entry["content"]["application/json"]["schema"])
                assert re.search(r"#/components/schemas/(Error|GatewayError)", schema), (route.path, code)
                if code in (409, 503, 504):
                    assert entry["headers"]["Retry-After"]["schema"] == {"type": "integer", "minimum": 1}
            checked += 1
    assert checked == len(route_table())


def test_every_admin_write_that_changes_a_versioned_document_requires_if_match() -> None:
    # the hot memory (put, delete a line, restore) and a weekly report's correction
    document = json.loads(OPENAPI_FILE.read_text(encoding="utf-8"))
    required = sorted(f"{method.upper()} {path}" for path, item in document["paths"].items()
                      for method, operation in item.items() if _requires_if_match(operation))
    assert required == [
        "DELETE /v1/projects/{project_id}/memory/lines/{line_id}",
        "POST /v1/projects/{project_id}/memory/revisions/{version}/restore",
        "PUT /v1/projects/{project_id}/memory",
        "PUT /v1/projects/{project_id}/reports/{iso_week}",
    ]
    for key in required:
        method, path = key.split(" ")
        assert "428" in document["paths"][path][method.lower()]["responses"], key


def test_a_route_added_later_gets_its_codes_from_what_it_is() -> None:
    # Given: a member route that takes a body under a project, on a function without the LLM
    codes = response_codes(method="post", access="member", parameters={"project_id"}, query=False, body=True, llm=False)

    # Then: the token, membership, path gate, body gate, conflicts, storage and throttling are all stated
    assert codes == {400, 401, 403, 404, 409, 413, 415, 422, 429, 502, 503}
    # and an LLM route adds the LLM's 504; a public route without parameters only the gateway's 429
    assert 504 in response_codes(method="post", access="member", parameters={"project_id"}, query=False,
                                 body=True, llm=True)
    assert response_codes(method="get", access="public", parameters=set(), query=False, body=False, llm=False) == {429}


def test_creating_routes_document_201_and_non_json_pages_their_media_type() -> None:
    paths = json.loads(OPENAPI_FILE.read_text(encoding="utf-8"))["paths"]
    assert "201" in paths["/v1/projects/{project_id}/sessions"]["post"]["responses"]
    assert "201" in paths["/v1/projects/{project_id}/sessions/{session_id}/diagnoses"]["post"]["responses"]
    console_file = paths["/console/{folder}/{name}"]["get"]["responses"]
    assert set(console_file["200"]["content"]) == {"text/html", "text/css", "text/javascript", "application/json"}
    assert "content" not in console_file["304"]
    assert set(paths["/console"]["get"]["responses"]) == {"302", "429"}
