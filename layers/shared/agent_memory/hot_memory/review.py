"""The review queue: distillation candidates the AI may not apply on its own (a proposed System
Rule, a statement relaxing the admin's rules, one that targets or contradicts an admin line) wait
here for an admin.

Approving adds the candidate as an ADMIN line through the editor's commit (same version check,
token cap and audit record as every admin write); rejecting leaves the hot memory untouched.
Either way the decision is recorded once: a decided item cannot be decided again.

An approval that would relax a System Rule (:func:`relaxed_rules`) needs the admin's explicit
confirmation, which names the rules it relaxes (:class:`ConfirmationRequired`). The rules are the
admin's own lines: they are shown to the admin, never logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agent_memory.domain.errors import AlreadyDecided, ConfirmationRequired, InvalidInput, ReviewItemNotFound
from agent_memory.domain.jobs import SYSTEM_RULES
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.domain.records import ReviewEntry, split_review_item_id
from agent_memory.hot_memory.analysis import analyse, contradicts, same_topic, supersedes
from agent_memory.hot_memory.document import admin_line, line_key, normalise_text, tagged_text
from agent_memory.hot_memory.editor import (
    ChangeResult,
    audit_record,
    check_base_version,
    check_reason,
    commit_change,
    unchanged,
)
from agent_memory.hot_memory.guards import relaxed_rules as guard_relaxed_rules
from agent_memory.hot_memory.statements import relaxes_system_rules
from agent_memory.ports import AdminStore


def confirmation_required(item_id: str, rules: Sequence[HotMemoryLine], current_version: int) -> ConfirmationRequired:
    """The refusal of an unconfirmed approval that would relax ``rules`` (non-empty, in document
    order): the reason names the first rule by id and text (the admin's own line, shown to the
    admin; never logged)."""
    first = rules[0]
    more = f" (and {len(rules) - 1} more)" if len(rules) > 1 else ""
    reason = (
        f'approving review item {item_id} would relax the System Rule {first.line_id} '
        f'"{tagged_text(first.text, first.role_tag)}"{more}; approve it again with '
        '{"confirm": true} to add it anyway'
    )
    return ConfirmationRequired(reason, item_id=item_id, rules=list(rules), current_version=current_version)


def relaxed_rules(item: ReviewEntry, current: HotMemory) -> list[HotMemoryLine]:
    """The System Rules lines of ``current`` that approving ``item`` would relax, in document
    order; none for an ordinary item. Decided with the distiller's own rules, against the rules
    as they are now (nothing is stored for it):

    1. the admin line the item was held for (``detail``, of ``contradicts_admin_line`` /
       ``targets_admin_line``) when it is a System Rule of ``current``;
    2. the rules the statement relaxes by meaning (the distiller's System Rules guard,
       :func:`~agent_memory.hot_memory.guards.relaxed_rules`), when it singles some out;
    3. a statement asking to ignore or relax the admin's rules (held as ``relaxes_system_rules``,
       or matching :func:`~agent_memory.hot_memory.statements.relaxes_system_rules`): the rules on
       its subject (:func:`~agent_memory.hot_memory.analysis.same_topic`), or every rule when it
       names none (it relaxes the whole section);
    4. any other candidate: the rules it contradicts or whose detail it changes (the merge's
       admin guard, :func:`~agent_memory.hot_memory.analysis.contradicts` /
       :func:`~agent_memory.hot_memory.analysis.supersedes`).

    With no System Rules there is nothing to relax.
    """
    rules = [ln for ln in current.lines if ln.section == SYSTEM_RULES]
    named = [ln for ln in rules if item.detail is not None and ln.line_id == item.detail]
    if named or not rules:
        return named
    by_meaning = guard_relaxed_rules(item.text, rules)
    if by_meaning and len(by_meaning) < len(rules):
        return [ln for ln in rules if ln in by_meaning]
    info = analyse(item.text)
    if item.reason == "relaxes_system_rules" or relaxes_system_rules(item.text):
        return [ln for ln in rules if same_topic(info, analyse(ln.text))] or rules
    return [ln for ln in rules if contradicts(info, analyse(ln.text)) or supersedes(info, analyse(ln.text))]


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
    confirm: bool = False,
) -> ChangeResult:
    """Add a held candidate to the hot memory as an ADMIN line (the admin now owns it, so the AI
    never changes it; its evidence is kept), through the same cap check as every write.

    ``if_match`` is optional here (the candidate is added to whatever version is current; the
    save is still conditional on that version). A candidate that would relax System Rules
    (:func:`relaxed_rules`) is added only with ``confirm``; the audit record then lists the
    relaxed rules' ids (``relaxed_rule_ids``). A candidate already present adds nothing and needs
    no confirmation.

    Raises:
        ReviewItemNotFound (404), AlreadyDecided (409), VersionConflict (409), OverTokenCap (422),
        ConfirmationRequired (422): it would relax System Rules and ``confirm`` is false (nothing
        is written, the item stays pending).
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
        return _approve_present(store, project_id, item_id, decided, current, actor=actor, now=now, reason=reason,
                                cap=cap)
    relaxed = relaxed_rules(item, current)
    if relaxed and not confirm:
        raise confirmation_required(item_id, relaxed, current.version)
    extra: dict[str, object] = {"review_reason": item.reason}
    if relaxed:
        extra["relaxed_rule_ids"] = [ln.line_id for ln in relaxed]
    line = admin_line(
        section=item.section, text=normalise_text(item.text), role_tag=item.role_tag, actor=actor, now=now,
        evidence=item.evidence,
    )
    return commit_change(
        store, current, [*current.lines, line],
        action="review.approve", what=f"approved review item {item_id}", target=f"review:{item_id}",
        added=[line.line_id], removed=[], actor=actor, now=now, reason=reason, cap=cap,
        extra=extra, decide=decided,
    )


def _approve_present(store: AdminStore, project_id: str, item_id: str, decided: ReviewEntry, current: HotMemory, *,
                     actor: str, now: datetime, reason: str | None, cap: int) -> ChangeResult:
    """Approve a candidate the hot memory already holds: the item is decided and audited
    (``already_present``), no revision is written."""
    audit = audit_record(
        project_id, action="review.approve", target=f"review:{item_id}", actor=actor, now=now,
        reason=reason, details={"already_present": True, "version": current.version},
    )
    store.decide_review(project_id, decided, audit=audit)
    result = unchanged(current, cap)
    result.audit_id = audit.audit_id
    return result


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


__all__ = ["approve_review", "confirmation_required", "list_review", "reject_review", "relaxed_rules"]
