"""The admin API's requests (bodies, query parameters, ``If-Match``, reasons) and the response of a
hot-memory change. Bodies, parameters and headers are validated by the Powertools event handler
(bad input -> 422; a missing ``If-Match`` -> 428)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from agent_memory.domain.text import has_forbidden_controls
from agent_memory.hot_memory.editor import ChangeResult
from agent_memory.hot_memory.review import APPROVED_TEXT_MAX_BYTES
from agent_memory.http.powertools import Header, Query, Response
from agent_memory.http.responses import etag, model_response
from agent_memory.http.text_patterns import NO_CONTROLS, NOT_BLANK
from agent_memory.observability import logger, metrics

Cursor = Annotated[str | None, Query(max_length=512)]
ReasonQuery = Annotated[str | None, Query(max_length=1000)]
ReviewStatus = Annotated[str | None, Query(pattern="^(pending|approved|rejected)$")]

#: ``If-Match`` as :func:`agent_memory.hot_memory.editor.parse_if_match` reads it: a strong ETag,
#: ``"7"`` (the quotes may be left out), 1-12 ASCII digits; never ``*`` nor a weak ``W/"7"``.
IF_MATCH_PATTERN = r'^[ \t]*"*[0-9]{1,12}"*[ \t]*$'
_IF_MATCH = (
    "The version the write is based on: the `ETag` of what was read (\"7\"). Without it the answer "
    "is 428; a stale version, 409 with `current_version`."
)
#: A write based on a version: without ``If-Match`` the request is refused with 428 (the error map
#: answers a missing ``If-Match`` so, ``agent_memory.http.errors``).
IfMatch = Annotated[str, Header(alias="If-Match", pattern=IF_MATCH_PATTERN, description=_IF_MATCH)]
#: ``If-Match`` where it may be left out (approving a review item).
OptionalIfMatch = Annotated[
    str | None, Header(alias="If-Match", pattern=IF_MATCH_PATTERN, description="Optional: " + _IF_MATCH)
]


def _no_controls(text: str) -> str:
    """``text`` unless it holds a forbidden control character (ValueError: 422)."""
    if has_forbidden_controls(text):
        raise ValueError("must not contain control characters (tab, newline and carriage return are fine)")
    return text


#: Text stored as it is sent, without control characters (a hot-memory document, a reason).
StoredText = Annotated[str, AfterValidator(_no_controls), Field(json_schema_extra={"pattern": NO_CONTROLS})]


class MemoryPutRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/memory`` (``If-Match``: the version edited)."""

    model_config = ConfigDict(extra="forbid")

    markdown: StoredText = Field(
        description="The whole document: '# Section' headings and '- [TAG] text' lines (the format GET returns); "
        "no control character but tab, newline and carriage return."
    )
    reason: StoredText | None = Field(default=None, description="Why (kept in the revision and the audit record).")


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
    text: str | None = Field(
        default=None, min_length=1, json_schema_extra={"pattern": NOT_BLANK},
        description=(
            "The candidate reworded by the admin, approved instead of the proposed text (edit before approve; "
            f"one line, at most {APPROVED_TEXT_MAX_BYTES:,} UTF-8 bytes). The rules it would relax are decided "
            "on this text; the item keeps it as `approved_text`."
        ),
    )


class ReportCorrectionRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/reports/{iso_week}`` (``If-Match``: the revision)."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1, json_schema_extra={"pattern": NOT_BLANK},
        description="The corrected report text (replaces the whole text); not blank.",
    )
    reason: str | None = None


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
