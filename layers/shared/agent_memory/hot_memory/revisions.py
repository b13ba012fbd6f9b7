"""Hot-memory revisions: the stored versions, a version against the one before it, and restoring
an old version as a NEW one (ids and provenance included).

Every save of the document (editor, review queue, distillation, pruning) stores a revision
(``HOTREV#``); a restore goes through the editor's commit, so it meets the same version check,
token cap and audit record as any other admin write.
"""

from __future__ import annotations

import difflib
from datetime import datetime

from pydantic import BaseModel

from agent_memory.domain.errors import RevisionNotFound
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.domain.records import Page, RevisionSummary
from agent_memory.hot_memory.document import document_tokens
from agent_memory.hot_memory.editor import (
    ChangeResult,
    check_base_version,
    check_reason,
    commit_change,
    unchanged,
)
from agent_memory.ports import AdminStore


class RevisionDiff(BaseModel):
    """A revision against the one before it (``previous_version`` None for the first)."""

    previous_version: int | None
    unified: str
    added_line_ids: list[str]
    removed_line_ids: list[str]


class RevisionView(BaseModel):
    """``GET .../memory/revisions/{version}``: the document as it was, and its diff."""

    version: int
    created_at: datetime
    created_by: str
    reason: str | None = None
    tokens: int
    markdown: str
    lines: list[HotMemoryLine]
    diff: RevisionDiff


def list_revisions(store: AdminStore, project_id: str, *, limit: int, cursor: str | None) -> Page[RevisionSummary]:
    """Stored versions, newest first, one page."""
    store.get_project(project_id)
    return store.list_revisions(project_id, limit=limit, cursor=cursor)


def diff_revisions(previous: HotMemory | None, current: HotMemory) -> RevisionDiff:
    """Unified diff of the rendered documents and the line ids added / removed."""
    before = previous.render() if previous is not None else ""
    prev_label = f"v{previous.version}" if previous is not None else "empty"
    unified = "\n".join(
        difflib.unified_diff(
            before.splitlines(), current.render().splitlines(), fromfile=prev_label,
            tofile=f"v{current.version}", lineterm="",
        )
    )
    before_ids = {ln.line_id for ln in previous.lines} if previous is not None else set()
    after_ids = {ln.line_id for ln in current.lines}
    return RevisionDiff(
        previous_version=previous.version if previous is not None else None,
        unified=unified,
        added_line_ids=[ln.line_id for ln in current.lines if ln.line_id not in before_ids],
        removed_line_ids=[ln.line_id for ln in (previous.lines if previous else []) if ln.line_id not in after_ids],
    )


def get_revision(store: AdminStore, project_id: str, version: int) -> RevisionView:
    """One stored version and its diff against the version before it.

    Raises:
        RevisionNotFound: no such version (404).
    """
    store.get_project(project_id)
    stored = store.get_revision(project_id, version)
    if stored is None:
        raise RevisionNotFound(f"no hot memory version {version}")
    previous = store.get_revision(project_id, version - 1) if version > 1 else None
    return RevisionView(
        version=stored.summary.version,
        created_at=stored.summary.created_at,
        created_by=stored.summary.created_by,
        reason=stored.summary.reason,
        tokens=document_tokens(stored.hot.lines),
        markdown=stored.hot.render(),
        lines=list(stored.hot.lines),
        diff=diff_revisions(previous.hot if previous else None, stored.hot),
    )


def restore_revision(
    store: AdminStore,
    project_id: str,
    version: int,
    *,
    reason: str | None,
    if_match: int,
    actor: str,
    now: datetime,
    cap: int,
) -> ChangeResult:
    """Make a NEW version whose lines are those of ``version`` (ids and provenance included).

    Raises:
        RevisionNotFound: no such version (404).
        VersionConflict: ``if_match`` is not the current version (409).
        OverTokenCap: the old version is over today's cap (422, nothing written or clipped).
    """
    reason = check_reason(reason)
    store.get_project(project_id)
    stored = store.get_revision(project_id, version)
    if stored is None:
        raise RevisionNotFound(f"no hot memory version {version}")
    current = store.load_hot_memory(project_id)
    check_base_version(current, if_match)
    lines = list(stored.hot.lines)
    if [ln.model_dump() for ln in lines] == [ln.model_dump() for ln in current.lines]:
        return unchanged(current, cap)
    now_ids = {ln.line_id for ln in current.lines}
    old_ids = {ln.line_id for ln in lines}
    return commit_change(
        store, current, lines,
        action="memory.restore", what=f"restored version {version}", target=f"hot:v{version}",
        added=[ln.line_id for ln in lines if ln.line_id not in now_ids],
        removed=[ln.line_id for ln in current.lines if ln.line_id not in old_ids],
        actor=actor, now=now, reason=reason, cap=cap, extra={"restored_version": version},
    )


__all__ = [
    "RevisionDiff",
    "RevisionView",
    "diff_revisions",
    "get_revision",
    "list_revisions",
    "restore_revision",
]
