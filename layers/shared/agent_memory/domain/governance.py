"""Data governance: the erasure of a patient or a session, and the project export.

Pure types and rules (docs/architecture.md, "Data governance"). An erasure is recorded once per target, as
``ErasureRecord`` (the audit record: who, when, what kind, how many items of each kind, no
content); it is never erased itself. Items are removed in bounded batches, inline for a small
target and through the job queue for a large one.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

ErasureKind = Literal["patient", "session"]
ErasureStatus = Literal["running", "done"]

#: Items deleted per batch (one BatchWriteItem takes 25; a batch is a few of them).
ERASURE_BATCH_ITEMS = 100
#: A target with at most this many items (session items, messages, diagnoses: from the session
#: counters) is erased inline (204); a larger one runs as a job (202 + status URL).
ERASURE_INLINE_ITEMS = 400
#: What replaces the erased patient's id in text that stays (reports, revisions, review items).
REDACTED = "[erased]"


class MessageRef(BaseModel):
    """What erasing one message needs besides its key: its time (its flow-log item's key) and
    the hash of the Idempotency-Key of its request (the cached reply)."""

    message_id: str
    at: datetime
    idempotency_hash: str | None = None


class ErasureRecord(BaseModel):
    """The audit record of one erasure (MemoryTable ``ERASURE#{kind}#{target_id}``).

    ``counts`` are items removed per kind (``session``, ``message``, ``diagnosis``,
    ``flow_log``, ``idempotency``, ``evidence_refs``, ``lines_to_review``, ``redactions``);
    ``sessions`` the sessions still to erase (emptied as they are done).
    """

    project_id: str
    kind: ErasureKind
    target_id: str
    actor: str
    requested_at: datetime
    status: ErasureStatus = "running"
    finished_at: datetime | None = None
    mode: Literal["inline", "job"] = "inline"
    sessions: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)

    def status_path(self) -> str:
        """The status URL's path of this erasure."""
        base = f"/v1/projects/{self.project_id}"
        return f"{base}/{'patients' if self.kind == 'patient' else 'sessions'}/{self.target_id}/erasure"


def names_id(text: str, target_id: str) -> bool:
    """True if ``text`` names ``target_id`` as a word (not inside a longer id: ``P001`` is not
    named by ``P0011``)."""
    return bool(_id_pattern(target_id).search(text))


def redact_id(text: str, target_id: str) -> str:
    """``text`` with every standalone occurrence of ``target_id`` replaced by :data:`REDACTED`."""
    return _id_pattern(target_id).sub(REDACTED, text)


def _id_pattern(target_id: str) -> re.Pattern[str]:
    # Ids are letters, digits, ".", "_", "-": a neighbour of that class would make it another id.
    return re.compile(rf"(?<![A-Za-z0-9._-]){re.escape(target_id)}(?![A-Za-z0-9_-])")


def add_counts(total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    """``total`` plus ``more``, per kind (a new dict)."""
    out = dict(total)
    for kind, n in more.items():
        out[kind] = out.get(kind, 0) + n
    return out


#: The MemoryTable partition of platform records (project removals). Project ids start with a
#: letter or digit (``JobRequest.project_id``'s pattern), so no project can own this partition.
PLATFORM_PK = "_platform"
#: An erasure still ``running`` and requested less than this long ago counts as a job in progress
#: for the project (the removal answers 409): the job queue's visibility timeout (6 x the
#: worker's 900 s timeout), the longest one delivery of a job can run before SQS retries it.
JOB_RUNNING_WINDOW_S = 5400


class RemovalRecord(BaseModel):
    """The audit record of a project removal (MemoryTable pk :data:`PLATFORM_PK`, sk
    ``REMOVED#{project_id}``): who, when, status and how many items per kind were removed, no
    content. It lives outside the removed partition so it survives the removal.

    ``counts`` kinds: ``memory`` (items of the project's MemoryTable partition: project, hot
    memory, revisions, reports, review, audit, members, reminders, webhook, erasure records,
    activity markers), ``session``, ``message``, ``diagnosis``, ``other`` (feedback and other
    session-partition items), ``flow_log``, ``idempotency``, ``schedules``, ``secrets`` (project
    secrets scheduled for deletion).
    """

    project_id: str
    actor: str
    requested_at: datetime
    status: ErasureStatus = "running"
    finished_at: datetime | None = None
    mode: Literal["inline", "job"] = "inline"
    #: When the project was created (the first flow-log day to clear).
    since: datetime
    counts: dict[str, int] = Field(default_factory=dict)

    def status_path(self) -> str:
        """The status URL's path of this removal."""
        return f"/v1/projects/{self.project_id}/removal"
