"""The hot-memory editor: read and replace the document, the kill switch (delete one line), the
``If-Match`` of admin writes (the ``ETag`` it names: :func:`agent_memory.http.responses.etag`),
and the one commit every editor write goes through (revisions and the review queue use it too).

No AWS, no HTTP: every use case takes its store (:class:`AdminStore`), the acting user, the clock
value and the token cap as arguments.

Rules every write keeps:
- optimistic locking: a write names the version it is based on (``If-Match``); another save in
  between -> :class:`~agent_memory.domain.errors.VersionConflict` with the current version, and
  nothing is written;
- the token cap: a PUT, a restore or an approval whose document would exceed the cap is refused
  whole (:class:`~agent_memory.domain.errors.OverTokenCap`), nothing stored, nothing clipped;
  a write that only removes lines (the kill switch, or a PUT without new lines) is always allowed:
  it can only shrink the document. Every result reports the document's tokens;
- provenance: a PUT keeps every unchanged line (same section, same text after whitespace
  normalisation) with its id, source, author, time and evidence; a new or changed line is an
  admin line written by the caller;
- every change is a new revision (``HOTREV#``) and an audit record (who, when, what, why), in the
  same transaction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from agent_memory.domain.errors import (
    InvalidInput,
    LineNotFound,
    PayloadTooLarge,
    PreconditionRequired,
    VersionConflict,
)
from agent_memory.domain.models import DISMISSED_KEPT, DismissedLine, HotMemory, HotMemoryLine
from agent_memory.domain.records import AuditAction, AuditRecord, Page, ReviewEntry
from agent_memory.domain.text import utf8_len
from agent_memory.hot_memory.document import (
    MemoryView,
    admin_line,
    check_cap,
    document_tokens,
    document_view,
    line_key,
    new_id,
)
from agent_memory.hot_memory.markdown import DraftLine, parse_markdown
from agent_memory.ports import AdminStore

#: Largest Markdown document a PUT accepts, in UTF-8 bytes (the token cap usually binds first).
MARKDOWN_MAX_BYTES = 65_536
#: Largest ``reason``, in UTF-8 bytes.
REASON_MAX_BYTES = 1_000


# ------------------------------------------------------------------------------------ models
class EditorView(MemoryView):
    """The hot memory as a write answers it: the read view (Markdown, version = the ETag,
    tokens and the cap, lines with provenance)."""


class ChangeResult(BaseModel):
    """What a write did: the new memory (or the unchanged one) and the line ids added/removed."""

    memory: EditorView
    changed: bool
    added_line_ids: list[str] = Field(default_factory=list)
    removed_line_ids: list[str] = Field(default_factory=list)
    audit_id: str | None = None


class EditPlan(BaseModel):
    """The lines of an edited document and what changed against the current version."""

    lines: list[HotMemoryLine]
    added: list[str]
    removed: list[str]


# ------------------------------------------------------------------- If-Match, reasons, audit
_VERSION = re.compile(r"[0-9]{1,12}")


def parse_if_match(value: str | None) -> int:
    """The version an ``If-Match`` header names (``"7"`` or ``7``, ASCII digits).

    Raises:
        PreconditionRequired: no header (428).
        InvalidInput: not a version (``*`` included: a write must name what it is based on), or a
            weak validator (``W/"7"``): a write needs a strong one (RFC 9110 section 13.1.1).
    """
    if value is None or not value.strip():
        raise PreconditionRequired("If-Match with the version you are editing (the ETag) is required")
    raw = value.strip()
    if raw[:2].upper() == "W/":
        raise InvalidInput("If-Match must be a strong ETag (\"7\", not W/\"7\"): a write needs one")
    raw = raw.strip('"')
    if not _VERSION.fullmatch(raw):
        raise InvalidInput("If-Match must be the ETag of the version you are editing, e.g. \"7\"")
    return int(raw)


def check_reason(reason: str | None) -> str | None:
    """The stripped ``reason`` of an admin write (None when blank).

    Raises:
        PayloadTooLarge: over :data:`REASON_MAX_BYTES` (413, never clipped).
    """
    if reason is None:
        return None
    reason = reason.strip()
    if not reason:
        return None
    size = utf8_len(reason)
    if size > REASON_MAX_BYTES:
        raise PayloadTooLarge(f"reason is {size} bytes (limit {REASON_MAX_BYTES})", REASON_MAX_BYTES, size)
    return reason


def check_base_version(current: HotMemory, if_match: int) -> None:
    """Raises VersionConflict (409, with the current version) unless ``if_match`` is current."""
    if current.version != if_match:
        raise VersionConflict(
            f"the hot memory is at version {current.version}, your edit is based on version {if_match}; "
            "reload and apply your change again",
            current_version=current.version,
        )


def audit_record(
    project_id: str, *, action: AuditAction, target: str, actor: str, now: datetime, reason: str | None,
    details: dict[str, Any],
) -> AuditRecord:
    """A new audit record: who (``actor``), when (``now``), what (``action``, ``target``,
    ``details``) and why (``reason``)."""
    return AuditRecord(
        project_id=project_id,
        audit_id=new_id("au"),
        at=now,
        actor=actor,
        action=action,
        target=target,
        reason=reason,
        details=details,
    )


# ------------------------------------------------------------------------- views and commits
def memory_view(hot: HotMemory, cap: int) -> EditorView:
    """The editor's view of ``hot``."""
    return EditorView(**dict(document_view(hot, cap)))


def unchanged(current: HotMemory, cap: int) -> ChangeResult:
    """The result of a write that changed nothing (no revision, no audit record)."""
    return ChangeResult(memory=memory_view(current, cap), changed=False)


def commit_change(
    store: AdminStore,
    current: HotMemory,
    lines: list[HotMemoryLine],
    *,
    action: AuditAction,
    what: str,
    target: str,
    added: list[str],
    removed: list[str],
    actor: str,
    now: datetime,
    reason: str | None,
    cap: int,
    enforce_cap: bool = True,
    extra: dict[str, Any] | None = None,
    decide: ReviewEntry | None = None,
) -> ChangeResult:
    """Save ``lines`` as the version after ``current`` with its audit record (and, for an
    approval, the decided review item) in one transaction, conditional on ``current.version``.

    ``what`` (and ``reason``) become the revision's reason; ``enforce_cap=False`` only for
    writes that can only shrink the document.

    Raises:
        OverTokenCap: ``enforce_cap`` and the new document is over ``cap`` (nothing written).
        VersionConflict: another save came first (nothing written).
    """
    tokens = check_cap(lines, cap) if enforce_cap else document_tokens(lines)
    details = {
        "from_version": current.version, "to_version": current.version + 1, "added_line_ids": added,
        "removed_line_ids": removed, "tokens_before": document_tokens(current.lines), "tokens": tokens,
        **(extra or {}),
    }
    audit = audit_record(current.project_id, action=action, target=target, actor=actor, now=now, reason=reason,
                         details=details)
    saved = store.commit_hot_memory(
        current.model_copy(update={"lines": lines, **dismissals(current, lines, now)}),
        expected_version=current.version, actor=actor,
        reason=f"{what}: {reason}" if reason else what, now=now, tokens=tokens, audit=audit, decide=decide,
    )
    return ChangeResult(
        memory=memory_view(saved, cap),
        changed=True,
        added_line_ids=added,
        removed_line_ids=removed,
        audit_id=audit.audit_id,
    )


def dismissals(current: HotMemory, lines: Sequence[HotMemoryLine], now: datetime) -> dict[str, Any]:
    """The record of what an admin removed, after ``lines`` replace ``current``: the ``HotMemory``
    fields ``dismissed_evidence`` and ``dismissed_lines`` (each the newest :data:`DISMISSED_KEPT`).

    Every distilled line of ``current`` that ``lines`` leave out (deleted, edited into an admin line,
    or absent from a restored version) adds its evidence (flow-log message ids) to
    ``dismissed_evidence`` and itself, removed at ``now`` (UTC), to ``dismissed_lines``; a line an
    admin restores or writes again leaves ``dismissed_lines``. Distillation never learns a dismissed
    message again, nor a statement of a removed line made before its removal: the scheduled run
    after a manual run during the day distils the whole day, and would otherwise bring a deleted
    line back (docs/architecture.md, "Hot memory"). A message behind several lines is dismissed
    with any of them: an admin who deleted what the AI made of it decides what else it may teach.
    """
    kept = {ln.line_id for ln in lines}
    texts = {(ln.section, ln.text) for ln in lines}
    gone = [ln for ln in current.lines if ln.source == "distilled" and ln.line_id not in kept]
    evidence = list(dict.fromkeys([*current.dismissed_evidence, *(e for ln in gone for e in ln.evidence)]))
    removed = [*current.dismissed_lines, *(
        DismissedLine(section=ln.section, text=ln.text, role_tag=ln.role_tag, dismissed_at=now) for ln in gone)]
    return {"dismissed_evidence": evidence[-DISMISSED_KEPT:],
            "dismissed_lines": [d for d in removed if (d.section, d.text) not in texts][-DISMISSED_KEPT:]}


# -------------------------------------------------------------------------------- use cases
def plan_edit(current: HotMemory, drafts: Sequence[DraftLine], *, actor: str, now: datetime) -> EditPlan:
    """Match the edited lines to the current ones (section + normalised text, in order).

    A matched line is kept as it is (id, source, author, time, evidence); an unmatched draft is a
    new admin line by ``actor``; an unmatched current line is removed (an AI line edited by an
    admin becomes an admin line with the new text, and the AI line is gone).
    """
    pool: dict[tuple[str, str], list[HotMemoryLine]] = {}
    for line in current.lines:
        pool.setdefault(line_key(line), []).append(line)
    lines: list[HotMemoryLine] = []
    added: list[str] = []
    for draft in drafts:
        candidates = pool.get((draft.section, draft.content))
        if candidates:
            lines.append(candidates.pop(0))
            continue
        line = admin_line(section=draft.section, text=draft.text, role_tag=draft.role_tag, actor=actor, now=now)
        lines.append(line)
        added.append(line.line_id)
    kept = {ln.line_id for ln in lines}
    removed = [ln.line_id for ln in current.lines if ln.line_id not in kept]
    return EditPlan(lines=lines, added=added, removed=removed)


def get_memory(store: AdminStore, project_id: str, *, cap: int) -> EditorView:
    """The current hot memory (``version`` 0 and no lines when none was ever stored)."""
    store.get_project(project_id)
    return memory_view(store.load_hot_memory(project_id), cap)


def put_memory(
    store: AdminStore,
    project_id: str,
    *,
    markdown: str,
    reason: str | None,
    if_match: int,
    actor: str,
    now: datetime,
    cap: int,
) -> ChangeResult:
    """Replace the document with an edited Markdown version (see the module docstring).

    Raises:
        VersionConflict: ``if_match`` is not the current version (409, nothing written).
        OverTokenCap: the edited document is over the cap (422, nothing written or clipped).
        InvalidInput: the Markdown cannot be read (422 with the line number).
    """
    reason = check_reason(reason)
    size = utf8_len(markdown)
    if size > MARKDOWN_MAX_BYTES:
        raise PayloadTooLarge(f"markdown is {size} bytes (limit {MARKDOWN_MAX_BYTES})", MARKDOWN_MAX_BYTES, size)
    drafts = parse_markdown(markdown)
    store.get_project(project_id)
    current = store.load_hot_memory(project_id)
    check_base_version(current, if_match)
    plan = plan_edit(current, drafts, actor=actor, now=now)
    if [ln.line_id for ln in plan.lines] == [ln.line_id for ln in current.lines]:
        return unchanged(current, cap)
    # An edit that only removes (or reorders) lines can never grow the document: like the kill
    # switch it is allowed even while the document is over the cap; anything new must fit.
    return commit_change(
        store, current, plan.lines,
        action="memory.put", what="admin edit", target=f"hot:v{current.version + 1}",
        added=plan.added, removed=plan.removed, actor=actor, now=now, reason=reason, cap=cap,
        enforce_cap=bool(plan.added),
    )


def delete_line(
    store: AdminStore,
    project_id: str,
    line_id: str,
    *,
    reason: str | None,
    if_match: int,
    actor: str,
    now: datetime,
    cap: int,
) -> ChangeResult:
    """The kill switch: remove one line (AI or admin) by id.

    Always allowed by the cap (it only shrinks the document).

    Raises:
        VersionConflict: ``if_match`` is not the current version (409).
        LineNotFound: no such line in the current version (404).
    """
    reason = check_reason(reason)
    store.get_project(project_id)
    current = store.load_hot_memory(project_id)
    check_base_version(current, if_match)
    victim = next((ln for ln in current.lines if ln.line_id == line_id), None)
    if victim is None:
        raise LineNotFound(f"no line {line_id} in hot memory version {current.version}")
    lines = [ln for ln in current.lines if ln.line_id != line_id]
    return commit_change(
        store, current, lines,
        action="memory.delete_line", what=f"deleted {victim.source} line {line_id}",
        target=f"line:{line_id}", added=[], removed=[line_id], actor=actor, now=now, reason=reason,
        cap=cap, enforce_cap=False, extra={"line_source": victim.source, "line_section": victim.section},
    )


def list_audit(store: AdminStore, project_id: str, *, limit: int, cursor: str | None) -> Page[AuditRecord]:
    """Admin changes of the project, newest first, one page."""
    store.get_project(project_id)
    return store.list_audit(project_id, limit=limit, cursor=cursor)


__all__ = [
    "MARKDOWN_MAX_BYTES",
    "REASON_MAX_BYTES",
    "ChangeResult",
    "EditPlan",
    "EditorView",
    "audit_record",
    "check_base_version",
    "check_reason",
    "commit_change",
    "delete_line",
    "dismissals",
    "get_memory",
    "list_audit",
    "memory_view",
    "parse_if_match",
    "plan_edit",
    "put_memory",
    "unchanged",
]
