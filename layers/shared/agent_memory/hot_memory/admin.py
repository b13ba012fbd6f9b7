"""The hot-memory editor's logic (seed 001 section 5.3, "the kill switch") and report corrections.

No AWS, no HTTP: every use case takes its store (:class:`AdminStore`), the acting user, the clock
value and the token cap as arguments.

Rules every write keeps (DESIGN.md "Properties the seeds insist on"):
- optimistic locking: a write names the version it is based on (``If-Match``); another save in
  between -> :class:`~agent_memory.domain.errors.VersionConflict` with the current version (case B19);
- the token cap: a PUT, a restore or an approval whose document would exceed the cap is refused
  whole (:class:`~agent_memory.domain.errors.OverTokenCap`), nothing stored, nothing clipped (case B07);
  a write that only removes lines (the kill switch, or a PUT without new lines) is always allowed:
  it can only shrink the document. Every result reports the document's tokens;
- provenance: a PUT keeps every unchanged line (same section, same text after whitespace
  normalisation) with its id, source, author, time and evidence; a new or changed line is an
  admin line written by the caller;
- every change is a new revision (``HOTREV#``) and an audit record (who, when, what, why), in the
  same transaction.
"""

from __future__ import annotations

import difflib
import re
import secrets
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from agent_memory.domain.errors import (
    AlreadyDecided,
    InvalidInput,
    LineNotFound,
    OverTokenCap,
    PayloadTooLarge,
    PreconditionRequired,
    ReportNotFound,
    ReviewItemNotFound,
    RevisionNotFound,
    VersionConflict,
)
from agent_memory.domain.models import HOT_MEMORY_SECTIONS, HotMemory, HotMemoryLine
from agent_memory.domain.records import (
    AuditAction,
    AuditRecord,
    Page,
    ReviewEntry,
    RevisionSummary,
    split_review_item_id,
)
from agent_memory.domain.text import estimate_tokens, utf8_len
from agent_memory.ports import AdminStore

#: Largest corrected weekly report, in UTF-8 bytes (413 above it; never clipped).
REPORT_MAX_BYTES = 16_384
#: Largest Markdown document a PUT accepts, in UTF-8 bytes (the token cap usually binds first).
MARKDOWN_MAX_BYTES = 65_536
#: Largest ``reason``, in UTF-8 bytes.
REASON_MAX_BYTES = 1_000


# ------------------------------------------------------------------------------------ models
class MemoryView(BaseModel):
    """The hot memory as the editor shows it: Markdown, version (the ETag), tokens, lines."""

    project_id: str
    version: int
    markdown: str
    tokens: int
    cap: int
    over_cap: bool
    lines: list[HotMemoryLine]
    updated_at: datetime | None = None
    updated_by: str | None = None


class ChangeResult(BaseModel):
    """What a write did: the new memory (or the unchanged one) and the line ids added/removed."""

    memory: MemoryView
    changed: bool
    added_line_ids: list[str] = Field(default_factory=list)
    removed_line_ids: list[str] = Field(default_factory=list)
    audit_id: str | None = None


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


class ReportView(BaseModel):
    """A weekly report with its revision (the ETag of report corrections)."""

    project_id: str
    iso_week: str
    summary: str
    revision: int
    created_at: datetime
    created_by: str
    evidence: list[str] = Field(default_factory=list)
    changed: bool = True
    audit_id: str | None = None


# -------------------------------------------------------------------------------------- port


# ----------------------------------------------------------------------------- small helpers
def etag(version: int) -> str:
    """The ETag of a version: ``"7"`` (quoted, strong)."""
    return f'"{version}"'


def parse_if_match(value: str | None) -> int:
    """The version an ``If-Match`` header names (``"7"``, ``W/"7"`` or ``7``).

    Raises:
        PreconditionRequired: no header (428).
        InvalidInput: not a version (``*`` included: a write must name what it is based on).
    """
    if value is None or not value.strip():
        raise PreconditionRequired("If-Match with the version you are editing (the ETag) is required")
    raw = value.strip()
    raw = raw.removeprefix("W/").strip().strip('"')
    if not raw.isdigit() or len(raw) > 12:
        raise InvalidInput("If-Match must be the ETag of the version you are editing, e.g. \"7\"")
    return int(raw)


def _check_reason(reason: str | None) -> str | None:
    if reason is None:
        return None
    reason = reason.strip()
    if not reason:
        return None
    size = utf8_len(reason)
    if size > REASON_MAX_BYTES:
        raise PayloadTooLarge(f"reason is {size} bytes (limit {REASON_MAX_BYTES})", REASON_MAX_BYTES, size)
    return reason


def new_id(prefix: str) -> str:
    """A random id ``{prefix}-{12 hex}``."""
    return f"{prefix}-{secrets.token_hex(6)}"


def document_tokens(hot: HotMemory) -> int:
    """Estimated tokens of the rendered document (the measure of the cap)."""
    return estimate_tokens(hot.render())


def memory_view(hot: HotMemory, cap: int) -> MemoryView:
    """The editor's view of ``hot``."""
    tokens = document_tokens(hot)
    return MemoryView(
        project_id=hot.project_id,
        version=hot.version,
        markdown=hot.render(),
        tokens=tokens,
        cap=cap,
        over_cap=tokens > cap,
        lines=list(hot.lines),
        updated_at=hot.updated_at,
        updated_by=hot.updated_by,
    )


def _normalise(text: str) -> str:
    """Whitespace-insensitive form used to recognise an unchanged line (NFC, spaces collapsed)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def _content(line: HotMemoryLine) -> str:
    """The bullet content exactly as ``HotMemory.render`` writes it (tag included)."""
    tag = f"[{line.role_tag}] " if line.role_tag else ""
    return f"{tag}{line.text}"


# --------------------------------------------------------------------------- Markdown parsing
class DraftLine(BaseModel):
    """One line of an edited document: section, optional role tag, text, source line number."""

    section: str
    role_tag: str | None
    text: str
    content: str
    lineno: int


_HEADING = re.compile(r"^\s*#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s*(.*)$")
_TAG = re.compile(r"^\[([^\[\]\s][^\[\]]{0,31})\]\s*(.*)$")
_SECTIONS = {s.casefold(): s for s in HOT_MEMORY_SECTIONS}


def parse_markdown(markdown: str) -> list[DraftLine]:
    """Parse an edited hot-memory document (the format ``HotMemory.render`` writes).

    ``# Section`` headings (one of :data:`HOT_MEMORY_SECTIONS`, any case) open a section; every
    other non-blank line is one memory line (a leading ``-``/``*``/``+`` bullet is optional), with
    an optional ``[TAG]`` role tag.

    Raises:
        InvalidInput: a line outside any section, an unknown section, or the same line twice in a
            section (each with its line number).
    """
    drafts: list[DraftLine] = []
    section: str | None = None
    seen: dict[tuple[str, str], int] = {}
    text = markdown.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        heading = _HEADING.match(raw)
        if heading:
            name = heading.group(1).strip()
            canonical = _SECTIONS.get(name.casefold())
            if canonical is None:
                allowed = ", ".join(f"'# {s}'" for s in HOT_MEMORY_SECTIONS)
                raise InvalidInput(f"line {lineno}: unknown section {name[:60]!r}; the sections are {allowed}")
            section = canonical
            continue
        bullet = _BULLET.match(raw)
        content = _normalise(bullet.group(1) if bullet else raw)
        if not content:
            continue
        if section is None:
            raise InvalidInput(f"line {lineno}: a memory line must come after a '# Section' heading")
        tag_match = _TAG.match(content)
        role_tag, line_text = (tag_match.group(1).strip(), tag_match.group(2).strip()) if tag_match else (None, content)
        if not line_text:
            raise InvalidInput(f"line {lineno}: the line has a role tag but no text")
        key = (section, content)
        if key in seen:
            raise InvalidInput(f"line {lineno}: repeats line {seen[key]} in section '{section}'")
        seen[key] = lineno
        drafts.append(
            DraftLine(section=section, role_tag=role_tag, text=line_text, content=content, lineno=lineno)
        )
    return drafts


class EditPlan(BaseModel):
    """The lines of an edited document and what changed against the current version."""

    lines: list[HotMemoryLine]
    added: list[str]
    removed: list[str]


def plan_edit(current: HotMemory, drafts: Sequence[DraftLine], *, actor: str, now: datetime) -> EditPlan:
    """Match the edited lines to the current ones (section + normalised text, in order).

    A matched line is kept as it is (id, source, author, time, evidence); an unmatched draft is a
    new admin line by ``actor``; an unmatched current line is removed (an AI line edited by an
    admin becomes an admin line with the new text, and the AI line is gone).
    """
    pool: dict[tuple[str, str], list[HotMemoryLine]] = {}
    for line in current.lines:
        pool.setdefault((line.section, _normalise(_content(line))), []).append(line)
    lines: list[HotMemoryLine] = []
    added: list[str] = []
    for draft in drafts:
        candidates = pool.get((draft.section, draft.content))
        if candidates:
            lines.append(candidates.pop(0))
            continue
        line = HotMemoryLine(
            line_id=new_id("hm"),
            section=draft.section,
            text=draft.text,
            source="admin",
            role_tag=draft.role_tag,
            created_at=now,
            created_by=actor,
            evidence=[],
        )
        lines.append(line)
        added.append(line.line_id)
    kept = {ln.line_id for ln in lines}
    removed = [ln.line_id for ln in current.lines if ln.line_id not in kept]
    return EditPlan(lines=lines, added=added, removed=removed)


def _check_cap(hot: HotMemory, cap: int) -> int:
    tokens = document_tokens(hot)
    if tokens > cap:
        raise OverTokenCap(
            f"the hot memory would be {tokens} tokens, over the cap of {cap}; nothing was saved "
            "(shorten or delete lines)",
            tokens=tokens,
            cap=cap,
        )
    return tokens


def _check_base(current: HotMemory, if_match: int) -> None:
    if current.version != if_match:
        raise VersionConflict(
            f"the hot memory is at version {current.version}, your edit is based on version {if_match}; "
            "reload and apply your change again",
            current_version=current.version,
        )


def _audit(
    project_id: str, *, action: AuditAction, target: str, actor: str, now: datetime, reason: str | None,
    details: dict[str, Any],
) -> AuditRecord:
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


def _revision_reason(what: str, reason: str | None) -> str:
    return f"{what}: {reason}" if reason else what


def _commit(
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
    candidate = current.model_copy(update={"lines": lines})
    tokens = _check_cap(candidate, cap) if enforce_cap else document_tokens(candidate)
    audit = _audit(
        current.project_id,
        action=action,
        target=target,
        actor=actor,
        now=now,
        reason=reason,
        details={
            "from_version": current.version,
            "to_version": current.version + 1,
            "added_line_ids": added,
            "removed_line_ids": removed,
            "tokens_before": document_tokens(current),
            "tokens": tokens,
            **(extra or {}),
        },
    )
    saved = store.commit_hot_memory(
        candidate,
        expected_version=current.version,
        actor=actor,
        reason=_revision_reason(what, reason),
        now=now,
        tokens=tokens,
        audit=audit,
        decide=decide,
    )
    return ChangeResult(
        memory=memory_view(saved, cap),
        changed=True,
        added_line_ids=added,
        removed_line_ids=removed,
        audit_id=audit.audit_id,
    )


def _unchanged(current: HotMemory, cap: int) -> ChangeResult:
    return ChangeResult(memory=memory_view(current, cap), changed=False)


# -------------------------------------------------------------------------------- use cases
def get_memory(store: AdminStore, project_id: str, *, cap: int) -> MemoryView:
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
        VersionConflict: ``if_match`` is not the current version (409, nothing written; B19).
        OverTokenCap: the edited document is over the cap (422, nothing written; B07).
        InvalidInput: the Markdown cannot be read (422 with the line number).
    """
    reason = _check_reason(reason)
    size = utf8_len(markdown)
    if size > MARKDOWN_MAX_BYTES:
        raise PayloadTooLarge(f"markdown is {size} bytes (limit {MARKDOWN_MAX_BYTES})", MARKDOWN_MAX_BYTES, size)
    drafts = parse_markdown(markdown)
    store.get_project(project_id)
    current = store.load_hot_memory(project_id)
    _check_base(current, if_match)
    plan = plan_edit(current, drafts, actor=actor, now=now)
    if [ln.line_id for ln in plan.lines] == [ln.line_id for ln in current.lines]:
        return _unchanged(current, cap)
    # An edit that only removes (or reorders) lines can never grow the document: like the kill
    # switch it is allowed even while the document is over the cap; anything new must fit.
    return _commit(
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
    reason = _check_reason(reason)
    store.get_project(project_id)
    current = store.load_hot_memory(project_id)
    _check_base(current, if_match)
    victim = next((ln for ln in current.lines if ln.line_id == line_id), None)
    if victim is None:
        raise LineNotFound(f"no line {line_id} in hot memory version {current.version}")
    lines = [ln for ln in current.lines if ln.line_id != line_id]
    return _commit(
        store, current, lines,
        action="memory.delete_line", what=f"deleted {victim.source} line {line_id}",
        target=f"line:{line_id}", added=[], removed=[line_id], actor=actor, now=now, reason=reason,
        cap=cap, enforce_cap=False, extra={"line_source": victim.source, "line_section": victim.section},
    )


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
        tokens=document_tokens(stored.hot),
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
        OverTokenCap: the old version is over today's cap (422, nothing written; B07).
    """
    reason = _check_reason(reason)
    store.get_project(project_id)
    stored = store.get_revision(project_id, version)
    if stored is None:
        raise RevisionNotFound(f"no hot memory version {version}")
    current = store.load_hot_memory(project_id)
    _check_base(current, if_match)
    lines = list(stored.hot.lines)
    if [ln.model_dump() for ln in lines] == [ln.model_dump() for ln in current.lines]:
        return _unchanged(current, cap)
    now_ids = {ln.line_id for ln in current.lines}
    old_ids = {ln.line_id for ln in lines}
    return _commit(
        store, current, lines,
        action="memory.restore", what=f"restored version {version}", target=f"hot:v{version}",
        added=[ln.line_id for ln in lines if ln.line_id not in now_ids],
        removed=[ln.line_id for ln in current.lines if ln.line_id not in old_ids],
        actor=actor, now=now, reason=reason, cap=cap, extra={"restored_version": version},
    )


def list_review(store: AdminStore, project_id: str, *, status: str | None) -> list[ReviewEntry]:
    """The review queue (held distillation candidates), oldest first; ``status`` filters."""
    if status is not None and status not in ("pending", "approved", "rejected"):
        raise InvalidInput("status must be pending, approved or rejected")
    store.get_project(project_id)
    return store.list_review(project_id, status=status)


def _pending(store: AdminStore, project_id: str, item_id: str) -> ReviewEntry:
    split_review_item_id(item_id)
    item = store.get_review(project_id, item_id)
    if item is None:
        raise ReviewItemNotFound(f"no review item {item_id}")
    if item.status != "pending":
        raise AlreadyDecided(f"review item {item_id} was already {item.status}", status=item.status)
    return item


def approve_review(
    store: AdminStore,
    project_id: str,
    item_id: str,
    *,
    reason: str | None,
    if_match: int | None,
    actor: str,
    now: datetime,
    cap: int,
) -> ChangeResult:
    """Add a held candidate to the hot memory as an ADMIN line (the admin now owns it, so the AI
    never changes it; its evidence is kept), through the same cap check as every write.

    ``if_match`` is optional here (the candidate is added to whatever version is current; the
    save is still conditional on that version).

    Raises:
        ReviewItemNotFound (404), AlreadyDecided (409), VersionConflict (409), OverTokenCap (422).
    """
    reason = _check_reason(reason)
    store.get_project(project_id)
    item = _pending(store, project_id, item_id)
    current = store.load_hot_memory(project_id)
    if if_match is not None:
        _check_base(current, if_match)
    decided = item.model_copy(
        update={"status": "approved", "decided_by": actor, "decided_at": now, "decision_reason": reason}
    )
    content = _normalise(f"[{item.role_tag}] {item.text}" if item.role_tag else item.text)
    if any(ln.section == item.section and _normalise(_content(ln)) == content for ln in current.lines):
        audit = _audit(
            project_id, action="review.approve", target=f"review:{item_id}", actor=actor, now=now,
            reason=reason, details={"already_present": True, "version": current.version},
        )
        store.decide_review(project_id, decided, audit=audit)
        result = _unchanged(current, cap)
        result.audit_id = audit.audit_id
        return result
    line = HotMemoryLine(
        line_id=new_id("hm"),
        section=item.section,
        text=_normalise(item.text),
        source="admin",
        role_tag=item.role_tag,
        created_at=now,
        created_by=actor,
        evidence=list(item.evidence),
    )
    return _commit(
        store, current, [*current.lines, line],
        action="review.approve", what=f"approved review item {item_id}", target=f"review:{item_id}",
        added=[line.line_id], removed=[], actor=actor, now=now, reason=reason, cap=cap,
        extra={"review_reason": item.reason}, decide=decided,
    )


def reject_review(
    store: AdminStore, project_id: str, item_id: str, *, reason: str | None, actor: str, now: datetime
) -> ReviewEntry:
    """Reject a held candidate (the hot memory is not touched).

    Raises:
        ReviewItemNotFound (404), AlreadyDecided (409).
    """
    reason = _check_reason(reason)
    store.get_project(project_id)
    item = _pending(store, project_id, item_id)
    decided = item.model_copy(
        update={"status": "rejected", "decided_by": actor, "decided_at": now, "decision_reason": reason}
    )
    audit = _audit(
        project_id, action="review.reject", target=f"review:{item_id}", actor=actor, now=now,
        reason=reason, details={"review_reason": item.reason},
    )
    store.decide_review(project_id, decided, audit=audit)
    return decided


def list_audit(store: AdminStore, project_id: str, *, limit: int, cursor: str | None) -> Page[AuditRecord]:
    """Admin changes of the project, newest first, one page."""
    store.get_project(project_id)
    return store.list_audit(project_id, limit=limit, cursor=cursor)


_ISO_WEEK = re.compile(r"^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$")


def correct_report(
    store: AdminStore,
    project_id: str,
    iso_week: str,
    *,
    summary: str,
    reason: str | None,
    if_match: int,
    actor: str,
    now: datetime,
) -> ReportView:
    """Replace a weekly report's text; the previous text is kept as a revision (``REPORTREV#``).

    Raises:
        ReportNotFound (404), VersionConflict (409 with the current revision),
        PayloadTooLarge (413, never clipped), InvalidInput (422: empty text or a bad week).
    """
    if not _ISO_WEEK.match(iso_week):
        raise InvalidInput("iso_week must look like 2026-W05")
    reason = _check_reason(reason)
    text = summary.strip()
    if not text:
        raise InvalidInput("summary must not be empty")
    size = utf8_len(text)
    if size > REPORT_MAX_BYTES:
        raise PayloadTooLarge(f"summary is {size} bytes (limit {REPORT_MAX_BYTES})", REPORT_MAX_BYTES, size)
    store.get_project(project_id)
    previous = store.get_report(project_id, iso_week)
    if previous is None:
        raise ReportNotFound(f"no report for {iso_week}")
    if previous.revision != if_match:
        raise VersionConflict(
            f"the report is at revision {previous.revision}, your correction is based on revision {if_match}",
            current_version=previous.revision,
        )
    if text == previous.summary:
        return ReportView(**previous.model_dump(), changed=False)
    corrected = previous.model_copy(
        update={"summary": text, "revision": previous.revision + 1, "created_at": now, "created_by": actor}
    )
    audit = _audit(
        project_id, action="report.correct", target=f"report:{iso_week}", actor=actor, now=now, reason=reason,
        details={
            "from_revision": previous.revision,
            "to_revision": corrected.revision,
            "bytes_before": utf8_len(previous.summary),
            "bytes": size,
        },
    )
    store.correct_report(previous, corrected, replaced_by=actor, audit=audit)
    return ReportView(**corrected.model_dump(), changed=True, audit_id=audit.audit_id)


__all__ = [
    "ChangeResult",
    "DraftLine",
    "EditPlan",
    "MemoryView",
    "ReportView",
    "RevisionDiff",
    "RevisionView",
    "approve_review",
    "correct_report",
    "delete_line",
    "diff_revisions",
    "etag",
    "get_memory",
    "get_revision",
    "list_audit",
    "list_review",
    "list_revisions",
    "memory_view",
    "parse_if_match",
    "parse_markdown",
    "plan_edit",
    "put_memory",
    "reject_review",
    "restore_revision",
]
