"""Erasure of a patient (every session of theirs) or of one session, on withdrawal of consent.

Order of the work (docs/architecture.md, "Data governance"), so that a crash, a retry or a racing chat turn never
leaves an item behind:

1. the erasure record (``ERASURE#{kind}#{id}``, the audit record) and, for a patient, one record
   per session of theirs: from now on every write to those sessions fails (the turn's
   transaction checks the record) and a racing turn either committed before (its items are found
   below) or fails with 404;
2. the erased messages' ids are collected (keys and times only) and removed from the evidence of
   the hot memory (a new revision; lines naming the patient move to the review queue with the
   id replaced), of stored revisions, weekly reports and review items;
3. the erased sessions' diagnosis references leave the patient's references item (the item the
   first turn of a patient's new session reads; deleted when none is left, as after a patient's
   erasure); no diagnosis can be added to those sessions any more (its transaction checks the
   erasure record), so none comes back;
4. each session (for a session alone: first its diagnosis references leave the facts of the
   patient's other sessions): the session item first, then its other items in bounded batches, each
   message's flow-log item and cached reply (idempotency record) with it; the record keeps the
   counts and the sessions left after each session;
5. the record is marked done.

A target with at most ``inline_items`` items is erased inside the request (204); a larger one
by the job worker (``JobRequest(job="erase")``, 202 with the status URL). Running it again
continues where it stopped and changes nothing once done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from agent_memory.conversation.append import version_conflict_retrying
from agent_memory.domain.errors import PatientNotFound, SessionNotFound, VersionConflict
from agent_memory.domain.governance import (
    ERASURE_BATCH_ITEMS,
    ERASURE_INLINE_ITEMS,
    ErasureKind,
    ErasureRecord,
    add_counts,
    names_id,
    redact_id,
)
from agent_memory.domain.jobs import JobRequest, ReviewItem
from agent_memory.domain.secrets import SecretNaming
from agent_memory.hot_memory.document import document_tokens
from agent_memory.hot_memory.editor import audit_record
from agent_memory.ports import (
    AdminStore,
    ErasureStore,
    ExportReader,
    JobSender,
    PatientRefsStore,
    ProjectSecretWriter,
    ReminderScheduler,
    RemovalStore,
)

#: Hot-memory commits tried when an admin or a job saves at the same moment.
_HOT_ATTEMPTS = 4


@dataclass(frozen=True)
class GovernanceDeps:
    """Collaborators of the erasure, the export and the project removal.

    - ``admin``: the project record, hot memory (a new revision with its audit record) and the
      review queue;
    - ``erasures``: the erasure records and an erasure's reads, deletes and rewrites;
    - ``patient_refs``: the patients' diagnosis references items;
    - ``exports``: the export's reads; ``removals``: the removal record, reads and deletes;
    - ``jobs`` sends large erasures and removals to the job queue (None: everything runs inline).
    """

    admin: AdminStore
    erasures: ErasureStore
    patient_refs: PatientRefsStore
    exports: ExportReader
    removals: RemovalStore
    jobs: JobSender | None
    clock: Callable[[], datetime]
    inline_items: int = ERASURE_INLINE_ITEMS
    batch_items: int = ERASURE_BATCH_ITEMS
    #: Deletes the reminder schedules of a removed project (None: no schedule group configured).
    schedules: ReminderScheduler | None = None
    #: Deletes the secrets of a removed project (``naming.all_for``), with the recovery window
    #: (docs/architecture.md, "Project secrets"); None: no secret store configured.
    secrets: ProjectSecretWriter | None = None
    naming: SecretNaming | None = None


def request_erasure(
    deps: GovernanceDeps, *, project_id: str, kind: ErasureKind, target_id: str, actor: str,
) -> ErasureRecord:
    """Erase a patient or a session (project admins), inline or as a job.

    Returns:
        The record: ``status == "done"`` when erased (also for a repeated call: idempotent);
        ``"running"`` with ``mode == "job"`` when the job queue does it (poll the status URL).

    Raises:
        ProjectNotFound: unknown project (404).
        PatientNotFound / SessionNotFound: nothing of that target exists, and it was never erased (404).
    """
    store = deps.erasures
    deps.admin.get_project(project_id)
    existing = store.get_erasure(project_id, kind, target_id)
    sizes = _target_sizes(store, project_id, kind, target_id)
    if existing is not None and existing.status == "done" and not sizes:
        return existing
    if existing is not None and existing.status == "running" and existing.mode == "job":
        return existing
    if existing is None and not sizes:
        if kind == "patient":
            raise PatientNotFound(f"unknown patient {target_id}")
        raise SessionNotFound(f"unknown session {target_id}")
    items = sum(sizes.values())
    mode = "job" if deps.jobs is not None and items > deps.inline_items else "inline"
    now = deps.clock()
    record = ErasureRecord(
        project_id=project_id, kind=kind, target_id=target_id, actor=actor, requested_at=now, mode=mode,
        sessions=sorted(sizes),
    )
    if existing is not None:  # an earlier run stopped, or new sessions appeared since: go on
        record = existing.model_copy(update={
            "status": "running", "finished_at": None, "mode": mode,
            "sessions": sorted(set(existing.sessions) | set(sizes)),
        })
        store.save_erasure(record)
    else:
        record = store.start_erasure(record)
    if kind == "patient":
        for session_id in record.sessions:
            store.start_erasure(ErasureRecord(
                project_id=project_id, kind="session", target_id=session_id, actor=actor, requested_at=now,
                mode=mode, sessions=[session_id],
            ))
    if mode == "job" and deps.jobs is not None:
        deps.jobs.send([JobRequest(
            job="erase", project_id=project_id, date=now.date(), target_kind=kind, target_id=target_id,
        )])
        return record
    return run_erasure(deps, project_id=project_id, kind=kind, target_id=target_id)


def run_erasure(deps: GovernanceDeps, *, project_id: str, kind: ErasureKind, target_id: str) -> ErasureRecord:
    """Do (or continue) a requested erasure; the job worker's entry point as well.

    Raises:
        PatientNotFound / SessionNotFound: no erasure was requested for that target.
    """
    store = deps.erasures
    record = store.get_erasure(project_id, kind, target_id)
    if record is None:
        raise (PatientNotFound if kind == "patient" else SessionNotFound)(f"no erasure of {kind} {target_id}")
    if record.status == "done":
        return record
    message_ids = {
        ref.message_id for session_id in record.sessions for ref in store.session_message_refs(project_id, session_id)
    }
    patient_id = target_id if kind == "patient" else None
    counts = add_counts(record.counts, _scrub_hot_memory(deps, project_id, message_ids, patient_id, record.actor))
    counts = add_counts(counts, store.scrub_memory_references(project_id, message_ids, patient_id=patient_id))
    # (a session alone: its patient is read from its session item, which is still there)
    counts = add_counts(counts, {"patient_refs": drop_patient_refs(deps, project_id, record.sessions,
                                                                   patient_id=patient_id)})
    for session_id in list(record.sessions):
        session_counts: dict[str, int] = {}
        if kind == "session":  # (a patient's erasure takes all their sessions: no reference stays)
            session_counts["diagnosis_refs"] = store.drop_diagnosis_refs(project_id, session_id)
        session_counts = add_counts(session_counts, erase_session_items(deps, project_id, session_id))
        counts = add_counts(counts, session_counts)
        if kind == "patient":
            marker = store.get_erasure(project_id, "session", session_id)
            if marker is not None:
                store.save_erasure(marker.model_copy(update={
                    "status": "done", "finished_at": deps.clock(), "sessions": [],
                    "counts": add_counts(marker.counts, session_counts),
                }))
        record = record.model_copy(update={
            "sessions": [s for s in record.sessions if s != session_id], "counts": counts,
        })
        store.save_erasure(record)
    record = record.model_copy(update={"status": "done", "finished_at": deps.clock(), "counts": counts})
    store.save_erasure(record)
    return record


def get_erasure(deps: GovernanceDeps, *, project_id: str, kind: ErasureKind, target_id: str) -> ErasureRecord:
    """The erasure record of a target (project admins).

    Raises:
        PatientNotFound / SessionNotFound: that target was never erased (404).
    """
    deps.admin.get_project(project_id)
    record = deps.erasures.get_erasure(project_id, kind, target_id)
    if record is None:
        raise (PatientNotFound if kind == "patient" else SessionNotFound)(f"no erasure of {kind} {target_id}")
    return record


def _target_sizes(store: ErasureStore, project_id: str, kind: ErasureKind, target_id: str) -> dict[str, int]:
    if kind == "patient":
        return store.patient_sessions(project_id, target_id)
    size = store.session_size(project_id, target_id)
    if size is None:
        # A session whose item went first (an erasure stopped midway) may still hold items.
        size = 1 if store.session_message_refs(project_id, target_id) else 0
    return {target_id: size} if size else {}


def drop_patient_refs(deps: GovernanceDeps, project_id: str, session_ids: list[str], *,
                      patient_id: str | None) -> int:
    """The references to the diagnoses of ``session_ids`` leave the patient's references item
    (``PatientRefsStore.drop_patient_refs``; ``patient_id`` None: the first session's patient),
    re-read and retried when a diagnosis is written meanwhile (``version_conflict_retrying``).
    Returns how many references were removed."""
    for attempt in version_conflict_retrying():
        with attempt:
            return deps.patient_refs.drop_patient_refs(project_id, list(session_ids), now=deps.clock(),
                                                patient_id=patient_id)
    return 0  # pragma: no cover - the policy returns or re-raises


def erase_session_items(deps: GovernanceDeps, project_id: str, session_id: str) -> dict[str, int]:
    """Delete the session item, then the rest of its partition in batches of ``deps.batch_items``
    (each message's flow-log item and cached reply with it). Returns counts per kind (no zeros)."""
    store = deps.erasures
    counts = {"session": store.delete_session_item(project_id, session_id)}
    while True:
        batch = store.delete_session_batch(project_id, session_id, limit=deps.batch_items)
        if not batch:
            return {k: v for k, v in counts.items() if v}
        counts = add_counts(counts, batch)


def _scrub_hot_memory(
    deps: GovernanceDeps, project_id: str, message_ids: set[str], patient_id: str | None, actor: str,
) -> dict[str, int]:
    """A new hot-memory version without references to ``message_ids``; lines naming
    ``patient_id`` leave it for the review queue (their text with the id replaced)."""
    store = deps.admin
    for attempt in range(_HOT_ATTEMPTS):
        current = store.load_hot_memory(project_id)
        refs = 0
        kept = []
        to_review = []
        for line in current.lines:
            evidence = [e for e in line.evidence if e not in message_ids]
            refs += len(line.evidence) - len(evidence)
            if patient_id and names_id(line.text, patient_id):
                redacted = redact_id(line.text, patient_id)
                to_review.append(line.model_copy(update={"text": redacted, "evidence": evidence}))
            else:
                kept.append(line.model_copy(update={"evidence": evidence}))
        if not refs and not to_review:
            return {}
        now = deps.clock()
        audit = audit_record(
            project_id, action="memory.erase_references", target="hot_memory", actor=actor, now=now,
            reason="erasure", details={
                "from_version": current.version, "to_version": current.version + 1,
                "evidence_refs_removed": refs, "removed_line_ids": [ln.line_id for ln in to_review],
            },
        )
        try:
            store.commit_hot_memory(
                current.model_copy(update={"lines": kept, "dismissed_evidence": [
                    e for e in current.dismissed_evidence if e not in message_ids], "dismissed_lines": [
                    d for d in current.dismissed_lines if not (patient_id and names_id(d.text, patient_id))]}),
                expected_version=current.version, actor=actor,
                reason="erasure", now=now, tokens=document_tokens(kept), audit=audit,
            )
        except VersionConflict:
            if attempt + 1 == _HOT_ATTEMPTS:
                raise
            continue
        store.put_review_items([
            ReviewItem(
                project_id=project_id, review_id=f"erasure-{line.line_id}", day=now.date().isoformat(),
                text=line.text, section=line.section, role_tag=line.role_tag, evidence=line.evidence,
                reason="names_erased_patient", detail="reword without the erased patient's id, then approve",
                created_at=now, created_by=actor,
            )
            for line in to_review
        ])
        return {"evidence_refs": refs, "lines_to_review": len(to_review)}
    return {}  # pragma: no cover - the loop returns or raises


__all__ = [
    "GovernanceDeps", "drop_patient_refs", "erase_session_items", "get_erasure", "request_erasure", "run_erasure",
]
