"""Success responses shared by the HTTP functions (errors: :mod:`agent_memory.http.errors`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agent_memory.http.powertools import Response, content_types


def created(body: dict[str, Any]) -> Response[dict[str, Any]]:
    """201 with ``body`` as JSON."""
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)


def etag(version: int) -> str:
    """The ``ETag`` of a version (of the hot memory, of a weekly report): ``"7"`` (quoted, strong);
    a write names it back in ``If-Match`` (:func:`agent_memory.hot_memory.editor.parse_if_match`)."""
    return f'"{version}"'


def model_response(model: BaseModel, *, etag: str | None = None) -> Response[str]:
    """200 with ``model`` as JSON, never cached; ``etag``: the version it shows (what ``If-Match`` names)."""
    headers = {"Cache-Control": "no-store"}
    if etag is not None:
        headers["ETag"] = etag
    return Response(
        status_code=200, content_type=content_types.APPLICATION_JSON, body=model.model_dump_json(), headers=headers
    )
