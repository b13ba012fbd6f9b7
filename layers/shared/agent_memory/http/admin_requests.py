"""Request bodies of the admin API (validated by the Powertools event handler: bad input -> 422)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MemoryPutRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/memory`` (``If-Match``: the version edited)."""

    model_config = ConfigDict(extra="forbid")

    markdown: str = Field(
        description="The whole document: '# Section' headings and '- [TAG] text' lines (the format GET returns)."
    )
    reason: str | None = Field(default=None, description="Why (kept in the revision and the audit record).")


class ReasonRequest(BaseModel):
    """Optional body of the restore / approve / reject routes."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = None


class ReportCorrectionRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/reports/{iso_week}`` (``If-Match``: the revision)."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, description="The corrected report text (replaces the whole text).")
    reason: str | None = None
