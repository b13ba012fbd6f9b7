"""The identifier scrub of what a project already stores (docs/architecture.md, "Identifiers").

A one-off job for data stored before the identifier firewall (or before a subject's identifiers
were known): every stored text of the project (flow log, sessions and their messages, diagnoses
and ratings, hot memory and its revisions, the history book, the review queue) passes the
scrubber again and is rewritten where something was withheld. Pure types; the use case is
``agent_memory.governance.scrub``, the store ``ScrubStore``.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Where a stored text lives (the audit record counts rewritten items by it).
TextArea = Literal[
    "flow_log", "session", "message", "diagnosis", "feedback", "hot_memory", "hot_memory_revision",
    "weekly_report", "report_revision", "yearly_summary", "review_item",
]
ScrubStatus = Literal["running", "done"]


class StoredText(BaseModel):
    """One attribute of one stored item that holds text a person or the model wrote.

    ``table`` / ``key``: where the item is (``memory`` | ``sessions`` | ``flow_log``; its ``pk``
    and ``sk``); ``attribute``: the attribute; ``value``: its value as stored (a string, a JSON
    document as a string, or a list of strings); ``version``: the item's version when it has one
    (a rewrite is conditional on it and increments it, so a concurrent writer that read the old
    text fails its own condition instead of writing it back).
    """

    model_config = ConfigDict(frozen=True)

    area: TextArea
    table: Literal["memory", "sessions", "flow_log"]
    key: dict[str, str]
    attribute: str
    value: Any
    version: int | None = None


class ScrubRecord(BaseModel):
    """The audit record of one scrub of a project (MemoryTable ``SCRUB#{run_key}``): who asked,
    when, and how many values of each kind were withheld (``withheld``) in how many items of
    each area (``items``); never a value.

    ``run_key`` names the run (the job request's date): a retry or a duplicate delivery of the
    same request continues this record; its counts grow in the same transaction as each rewritten
    item, so a retry after a crash counts nothing twice and misses nothing.
    """

    project_id: str
    run_key: str
    actor: str
    requested_at: datetime
    status: ScrubStatus = "running"
    finished_at: datetime | None = None
    withheld: dict[str, int] = Field(default_factory=dict)
    items: dict[str, int] = Field(default_factory=dict)


def scrub_run_key(day: date) -> str:
    """The run key of a scrub requested for ``day`` (its job request's date)."""
    return day.isoformat()


__all__ = ["ScrubRecord", "ScrubStatus", "StoredText", "TextArea", "scrub_run_key"]
