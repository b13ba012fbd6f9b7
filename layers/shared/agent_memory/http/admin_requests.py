"""The admin API's requests (bodies, query parameters, ``If-Match``, reasons), the response of a
hot-memory change, and the answer to an approval that needs the admin's confirmation. Bodies and
parameters are validated by the Powertools event handler (bad input -> 422)."""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_memory.domain.errors import InvalidInput
from agent_memory.hot_memory.editor import ChangeResult, parse_if_match
from agent_memory.http.powertools import Query, Request, Response
from agent_memory.http.responses import etag, model_response
from agent_memory.observability import logger, metrics

Cursor = Annotated[str | None, Query(max_length=512)]
ReasonQuery = Annotated[str | None, Query(max_length=1000)]
ReviewStatus = Annotated[str | None, Query(pattern="^(pending|approved|rejected)$")]


class MemoryPutRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/memory`` (``If-Match``: the version edited)."""

    model_config = ConfigDict(extra="forbid")

    markdown: str = Field(
        description="The whole document: '# Section' headings and '- [TAG] text' lines (the format GET returns)."
    )
    reason: str | None = Field(default=None, description="Why (kept in the revision and the audit record).")


class ReasonRequest(BaseModel):
    """Optional body of the restore / reject routes."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = None


class ApproveRequest(BaseModel):
    """Optional body of ``POST /v1/projects/{project_id}/memory/review/{item_id}/approve``."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(default=None, description="Why (kept in the revision and the audit record).")
    confirm: bool = Field(
        default=False,
        strict=True,
        description=(
            "true: approve an item that would relax System Rules (without it such an approval answers 422 "
            "`confirmation_required`, naming the rules). Not needed for other items."
        ),
    )


class ReportCorrectionRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/reports/{iso_week}`` (``If-Match``: the revision)."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, description="The corrected report text (replaces the whole text).")
    reason: str | None = None


def if_match(request: Request) -> int:
    """The version the request's ``If-Match`` names.

    Raises:
        PreconditionRequired: no header (428); InvalidInput: not a version (422).
    """
    return parse_if_match(request.headers.get("if-match"))


def optional_if_match(request: Request) -> int | None:
    """The version ``If-Match`` names, or None without the header."""
    value = request.headers.get("if-match")
    return parse_if_match(value) if value else None


def reason_from_body(request: Request) -> str | None:
    """The optional ``{"reason": ...}`` body of the POST routes (no body = no reason).

    Raises:
        InvalidInput: a body of another shape (422).
    """
    raw = request.resolved_event.decoded_body
    if not raw or not raw.strip():
        return None
    try:
        return ReasonRequest.model_validate(json.loads(raw)).reason
    except (ValueError, ValidationError):
        raise InvalidInput('the body must be {"reason": string or null}') from None


def change_response(result: ChangeResult, metric: str) -> Response[str]:
    """The answer to a hot-memory write, with the new version's ETag; a real change counts
    ``metric`` and is logged (ids and counts only)."""
    if result.changed:
        metrics.add_metric(name=metric, unit="Count", value=1)
        logger.info(
            "hot memory changed",
            extra={
                "project_id": result.memory.project_id,
                "version": result.memory.version,
                "tokens": result.memory.tokens,
                "added": len(result.added_line_ids),
                "removed": len(result.removed_line_ids),
            },
        )
    return model_response(result, etag=etag(result.memory.version))
