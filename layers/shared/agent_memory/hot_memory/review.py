"""The review queue: distillation candidates the AI may not apply on its own (a proposed System
Rule, a statement relaxing the admin's rules, one that targets or contradicts an admin line) wait
here for an admin.

Approving adds the candidate as an ADMIN line through the editor's commit (same version check,
token cap and audit record as every admin write); rejecting leaves the hot memory untouched.
Either way the decision is recorded once: a decided item cannot be decided again.
"""

from __future__ import annotations

from datetime import datetime

from agent_memory.domain.errors import AlreadyDecided, InvalidInput, ReviewItemNotFound
from agent_memory.domain.records import ReviewEntry, split_review_item_id
from agent_memory.hot_memory.document import admin_line, line_key, normalise_text, tagged_text
from agent_memory.hot_memory.editor import (
    ChangeResult,
    audit_record,
    check_base_version,
    check_reason,
    commit_change,
    unchanged,
)
from agent_memory.ports import AdminStore


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
    reason = check_reason(reason)
    store.get_project(project_id)
    item = _pending(store, project_id, item_id)
    current = store.load_hot_memory(project_id)
    if if_match is not None:
        check_base_version(current, if_match)
    decided = item.model_copy(
        update={"status": "approved", "decided_by": actor, "decided_at": now, "decision_reason": reason}
    )
    key = (item.section, normalise_text(tagged_text(item.text, item.role_tag)))
    if any(line_key(ln) == key for ln in current.lines):
        audit = audit_record(
            project_id, action="review.approve", target=f"review:{item_id}", actor=actor, now=now,
            reason=reason, details={"already_present": True, "version": current.version},
        )
        store.decide_review(project_id, decided, audit=audit)
        result = unchanged(current, cap)
        result.audit_id = audit.audit_id
        return result
    line = admin_line(
        section=item.section, text=normalise_text(item.text), role_tag=item.role_tag, actor=actor, now=now,
        evidence=item.evidence,
    )
    return commit_change(
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
    reason = check_reason(reason)
    store.get_project(project_id)
    item = _pending(store, project_id, item_id)
    decided = item.model_copy(
        update={"status": "rejected", "decided_by": actor, "decided_at": now, "decision_reason": reason}
    )
    audit = audit_record(
        project_id, action="review.reject", target=f"review:{item_id}", actor=actor, now=now,
        reason=reason, details={"review_reason": item.reason},
    )
    store.decide_review(project_id, decided, audit=audit)
    return decided


__all__ = ["approve_review", "list_review", "reject_review"]
