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

from agent_memory.domain.errors import (
    AlreadyDecided,
    ConfirmationRequired,
    InvalidInput,
    PayloadTooLarge,
    ReviewItemNotFound,
)
from agent_memory.domain.jobs import SYSTEM_RULES
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.domain.records import ReviewEntry, RuleRef, split_review_item_id
from agent_memory.domain.text import utf8_len
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

#: Longest reworded candidate an admin may approve, in UTF-8 bytes (413 above it; never clipped).
APPROVED_TEXT_MAX_BYTES = 2_000


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
    """The review queue (held distillation candidates), oldest first; ``status`` filters. Each
    pending item names the System Rules approving it as it stands would relax (``relaxes``,
    :func:`relaxed_rules` against the current hot memory, read once)."""
    if status is not None and status not in ("pending", "approved", "rejected"):
        raise InvalidInput("status must be pending, approved or rejected")
    store.get_project(project_id)
    items = store.list_review(project_id, status=status)
    if not any(item.status == "pending" for item in items):
        return items
    current = store.load_hot_memory(project_id)
    return [
        item.model_copy(update={"relaxes": [rule_ref(ln) for ln in relaxed_rules(item, current)]})
        if item.status == "pending" else item
        for item in items
    ]


def rule_ref(line: HotMemoryLine) -> RuleRef:
    """The reference to a System Rule a review answer names (id, text, role tag)."""
    return RuleRef(line_id=line.line_id, text=line.text, role_tag=line.role_tag)


def reworded_text(item: ReviewEntry, text: str | None) -> str | None:
    """The admin's rewording of a candidate, normalised (:func:`normalise_text`); None when no
    text is given or it says the same as the candidate.

    Raises:
        InvalidInput (422): blank text, or text on more than one line's worth of Markdown syntax
            (a heading or a list marker of its own).
        PayloadTooLarge (413): over :data:`APPROVED_TEXT_MAX_BYTES` (never clipped).
    """
    if text is None:
        return None
    normalised = normalise_text(text)
    if not normalised:
        raise InvalidInput("text must not be blank")
    size = utf8_len(normalised)
    if size > APPROVED_TEXT_MAX_BYTES:
        raise PayloadTooLarge(f"text is {size} bytes (limit {APPROVED_TEXT_MAX_BYTES})", APPROVED_TEXT_MAX_BYTES,
                              size)
    if normalised.startswith(("#", "- ", "* ")):
        raise InvalidInput("text is one line of the document: no heading or list marker of its own")
    return None if normalised == normalise_text(item.text) else normalised


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
    text: str | None = None,
) -> ChangeResult:
    """Add a held candidate to the hot memory as an ADMIN line (the admin now owns it, so the AI
    never changes it; its evidence is kept), through the same cap check as every write.

    ``text``: the admin's rewording (:func:`reworded_text`), approved instead of the proposed text
    (edit before approve): the rules it would relax are decided on it, the line carries it, the
    item keeps it as ``approved_text`` and the audit record says ``reworded``. ``if_match`` is
    optional (the save is still conditional on the version read). A candidate that would relax
    System Rules (:func:`relaxed_rules`) is added only with ``confirm``; the audit record then
    lists their ids (``relaxed_rule_ids``). One already present adds nothing, unconfirmed.

    Raises:
        ReviewItemNotFound (404), AlreadyDecided (409), VersionConflict (409), OverTokenCap (422),
        ConfirmationRequired (422): it would relax System Rules and ``confirm`` is false (nothing
        is written, the item stays pending); InvalidInput (422) / PayloadTooLarge (413): a
        ``text`` :func:`reworded_text` refuses.
    """
    reason = check_reason(reason)
    store.get_project(project_id)
    item = _pending(store, project_id, item_id)
    reworded = reworded_text(item, text)
    current = store.load_hot_memory(project_id)
    if if_match is not None:
        check_base_version(current, if_match)
    decided = item.model_copy(update={
        "status": "approved", "decided_by": actor, "decided_at": now, "decision_reason": reason,
        "approved_text": reworded,
    })
    # a rewording is judged on its own text: neither the admin line the proposal was held for nor
    # why it was held (that described the proposed text) decides
    candidate = (
        item.model_copy(update={"text": reworded, "detail": None, "reason": "reworded"}) if reworded is not None
        else item
    )
    key = (candidate.section, normalise_text(tagged_text(candidate.text, candidate.role_tag)))
    if any(line_key(ln) == key for ln in current.lines):
        return _approve_present(store, project_id, item_id, decided, current, actor=actor, now=now, reason=reason,
                                cap=cap)
    relaxed = relaxed_rules(candidate, current)
    if relaxed and not confirm:
        raise confirmation_required(item_id, relaxed, current.version)
    line = admin_line(
        section=candidate.section, text=normalise_text(candidate.text), role_tag=candidate.role_tag, actor=actor,
        now=now, evidence=candidate.evidence,
    )
    return commit_change(
        store, current, [*current.lines, line],
        action="review.approve", what=f"approved review item {item_id}", target=f"review:{item_id}",
        added=[line.line_id], removed=[], actor=actor, now=now, reason=reason, cap=cap,
        extra=_approval_details(item, reworded=reworded is not None, relaxed=relaxed), decide=decided,
    )


def _approval_details(item: ReviewEntry, *, reworded: bool, relaxed: Sequence[HotMemoryLine]) -> dict[str, object]:
    """The audit details of an approval: why the item was held, whether the admin reworded it,
    and the ids of the System Rules it relaxes."""
    details: dict[str, object] = {"review_reason": item.reason}
    if reworded:
        details["reworded"] = True
    if relaxed:
        details["relaxed_rule_ids"] = [ln.line_id for ln in relaxed]
    return details


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


__all__ = [
    "APPROVED_TEXT_MAX_BYTES",
    "approve_review",
    "confirmation_required",
    "list_review",
    "reject_review",
    "relaxed_rules",
    "reworded_text",
    "rule_ref",
]
