"""The API function's routes: those that need no LLM (health, context inspection, the memory and
report views, the OpenAPI document).

This module and what it imports must never import ``anthropic`` (a test enforces it) nor the X-Ray
SDK, so the function's cold start stays close to ``import boto3`` alone (``make bench``:
import_ratio_no_llm_handler; docs/architecture.md, "Cold start"). What one admin route alone uses
(the context view's rebuilding, the hot-memory document and its renderers) is imported by that
route on its first call, not at cold start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from agent_memory.history.reports import ISO_WEEK_PATTERN, MAX_REPORTS, project_reports, project_yearly_summaries
from agent_memory.http.guard import guarded_resolver, member_lookup
from agent_memory.http.powertools import APIGatewayHttpResolver, Depends, Query, Response, content_types
from agent_memory.http.responses import etag, model_response
from agent_memory.http.routing import Routes

if TYPE_CHECKING:
    from agent_memory.ports import ContextStore, MemberReader, ViewStore

routes = Routes()
_P = "/v1/projects/<project_id>"


@dataclass(frozen=True)
class ApiFunctionDeps:
    """The API function's read-only collaborators (built by ``wiring.build_api_function``).

    ``contexts()`` makes the turn-context store on its first call (the same one afterwards): its
    adapter, the chat's repository with the session and message models, is imported by the
    admins' context route only, outside the function's cold start (docs/architecture.md, "Cold
    start"). ``stage``: the deployment stage the health route names; ``hot_memory_token_cap``:
    the cap (estimated tokens) the memory view states.
    """

    views: ViewStore
    contexts: Callable[[], ContextStore]
    members: MemberReader
    stage: str
    hot_memory_token_cap: int = 2000


def function_deps() -> ApiFunctionDeps:
    """The function's collaborators: given to the resolver by :func:`api_app`."""
    raise RuntimeError("the API function's collaborators are given by api_app()")


def openapi_text() -> str:
    """The OpenAPI document's text: given to the resolver by :func:`api_app`."""
    raise RuntimeError("the OpenAPI document is given by api_app()")


Deps = Annotated[ApiFunctionDeps, Depends(function_deps)]
OpenApiText = Annotated[str, Depends(openapi_text)]


@routes.get("/v1/health", "public")
def health(deps: Deps) -> dict[str, str]:
    """Liveness: 200 with the stage (public; no dependencies touched)."""
    return {"status": "ok", "stage": deps.stage}


@routes.head("/v1/health", "public")
def health_head() -> Response[str]:
    """Liveness for probes that send ``HEAD``: 200 with no body (public; no dependencies touched)."""
    return Response(status_code=200, body="")


@routes.get(f"{_P}/sessions/<session_id>/messages/<message_id>/context", "admin")
def get_context(project_id: str, session_id: str, message_id: str, deps: Deps) -> dict[str, Any]:
    """The blocks (name, tokens, text) that were sent to the LLM for that turn (admins)."""
    from agent_memory.chat.context_view import turn_context  # this route only (module docstring)

    return turn_context(deps.contexts(), project_id, session_id, message_id)


@routes.get(f"{_P}/memory", "admin")
def get_memory(project_id: str, deps: Deps) -> Response[str]:
    """The hot memory (Markdown), its tokens and cap, and its lines with provenance; ``ETag`` is
    the version (admins)."""
    from agent_memory.hot_memory.document import project_memory  # this route only (module docstring)

    view = project_memory(deps.views, project_id, cap=deps.hot_memory_token_cap)
    return model_response(view, etag=etag(view.version))


@routes.get(f"{_P}/reports", "member", rules={
    422: "a week that does not exist (week 53 of a year with 52 ISO weeks), or from after to",
})
def get_reports(
    project_id: str,
    deps: Deps,
    from_week: Annotated[str | None, Query(alias="from", pattern=ISO_WEEK_PATTERN)] = None,
    to_week: Annotated[str | None, Query(alias="to", pattern=ISO_WEEK_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_REPORTS)] = MAX_REPORTS,
) -> dict[str, Any]:
    """Weekly reports ``?from=YYYY-Www&to=YYYY-Www`` (both optional, inclusive), newest first (members)."""
    return project_reports(deps.views, project_id, from_week, to_week, limit=limit).model_dump(mode="json")


@routes.get(f"{_P}/yearly-summaries", "member")
def get_yearly_summaries(project_id: str, deps: Deps) -> Response[str]:
    """The history book's yearly summaries, one per complete ISO year, newest first (members)."""
    return model_response(project_yearly_summaries(deps.views, project_id))


@routes.get("/v1/openapi.json", "public")
def openapi_document(text: OpenApiText) -> Response[str]:
    """The OpenAPI 3 document of the whole API (public)."""
    return Response(
        status_code=200, content_type=content_types.APPLICATION_JSON, body=text,
        headers={"Cache-Control": "public, max-age=300"},
    )


def api_app(deps: ApiFunctionDeps, *, openapi_file: Path) -> APIGatewayHttpResolver:
    """The API function's event handler; ``openapi_file``: the document it serves (read now)."""
    return guarded_resolver(
        routes, membership=member_lookup(deps.members),
        provide={function_deps: deps, openapi_text: openapi_file.read_text(encoding="utf-8")},
    )
