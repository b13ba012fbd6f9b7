"""The erasure store: the erasure records, what an erased target holds, and the deletes and
rewrites of an erasure (port ``ErasureStore``; docs/architecture.md, "Data governance").

Where a session's content lives (``keys``): the SessionsTable partition ``{project}#{session}``
(session item with window and session memory, messages with their context manifests, diagnoses
with their snapshots, ratings); the FlowLogTable item of each message and rating (keys from its
time and id); the chat function's idempotency record of each message sent with an
Idempotency-Key (it caches the reply); evidence references in the project's MemoryTable
partition; the references to its diagnoses in the facts of the patient's other sessions and in
the patient's diagnosis references item (:mod:`.patient_refs_upkeep`). Deletes go in
``BatchWriteItem`` calls of at most 25 keys (:func:`.access.delete_keys`).
"""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import UTCDateTimeAttribute
from pynamodb.exceptions import DoesNotExist, PutError

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import (
    connection,
    delete_keys,
    put_if_absent,
    query_items,
    sdk_errors_as_domain,
)
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem, SessionItem
from agent_memory.adapters.dynamo.feedback import FEEDBACK_PREFIX, feedback_event_id
from agent_memory.adapters.dynamo.fields import item_fields
from agent_memory.adapters.dynamo.record_tables import ErasureItem, ReportRevisionItem, ReviewQueueItem
from agent_memory.adapters.dynamo.tables import HotMemoryRevisionItem, WeeklyReportItem, YearSummaryItem
from agent_memory.domain.governance import ErasureKind, ErasureRecord, MessageRef, names_id, redact_id
from agent_memory.domain.ids import chat_idempotency_record_id

_UTC = UTCDateTimeAttribute()
#: Versioned saves of another session's facts tried when a turn writes it meanwhile.
_FACTS_ATTEMPTS = 4


def erasure_from_item(item: ErasureItem) -> ErasureRecord:
    """The domain record of a stored erasure item (validated: an unknown kind, status or mode raises)."""
    return ErasureRecord.model_validate({
        "project_id": item.pk, "kind": item.kind, "target_id": item.target_id, "actor": item.actor,
        "requested_at": item.requested_at, "status": item.status, "finished_at": item.finished_at,
        "mode": item.mode, "sessions": list(item.sessions or []), "counts": dict(item.counts or {}),
    })


def erasure_to_item(r: ErasureRecord) -> ErasureItem:
    """The item of an erasure record (sk ``ERASURE#{kind}#{target_id}``)."""
    return ErasureItem(r.project_id, keys.erasure_sk(r.kind, r.target_id), **item_fields(r, ErasureItem,
        sessions=list(r.sessions),
        counts=dict(r.counts),
    ))


def session_size(project_id: str, session_id: str) -> int | None:
    """Items of a session (session + messages + diagnoses, from its counters; one GetItem), None if absent."""
    try:
        item = SessionItem.get(keys.session_pk(project_id, session_id), keys.SESSION_SK, consistent_read=True,
                               attributes_to_get=["pk", "sk", "message_count", "diagnosis_count"])
    except DoesNotExist:
        return None
    return 1 + int(item.message_count or 0) + int(item.diagnosis_count or 0)


class _Scrub:
    """Removes erased message ids from evidence lists and the erased patient's id from texts,
    counting both (``evidence_refs``, ``redactions``)."""

    def __init__(self, message_ids: set[str], patient_id: str | None) -> None:
        self.message_ids = message_ids
        self.patient_id = patient_id
        self.counts = {"evidence_refs": 0, "redactions": 0}

    def evidence(self, evidence: list[str] | None) -> list[str]:
        kept = [e for e in evidence or [] if e not in self.message_ids]
        self.counts["evidence_refs"] += len(evidence or []) - len(kept)
        return kept

    def text(self, text: str) -> str:
        if self.patient_id and names_id(text, self.patient_id):
            self.counts["redactions"] += 1
            return redact_id(text, self.patient_id)
        return text

    def total(self) -> int:
        """Changes made so far (an item changed when this grew while it was scrubbed)."""
        return self.counts["evidence_refs"] + self.counts["redactions"]


@sdk_errors_as_domain
class ErasureRepository:
    """The erasure records and an erasure's reads, deletes and rewrites (module docstring).

    Args:
        idempotency_table: name of the Powertools idempotency table ("" = none to clean).
    """

    def __init__(self, idempotency_table: str = "") -> None:
        self.idempotency_table = idempotency_table

    # ------------------------------------------------------------------ erasure records
    def get_erasure(self, project_id: str, kind: ErasureKind, target_id: str) -> ErasureRecord | None:
        """The erasure record of a target, or None (strongly consistent)."""
        try:
            item = ErasureItem.get(project_id, keys.erasure_sk(kind, target_id), consistent_read=True)
        except DoesNotExist:
            return None
        return erasure_from_item(item)

    def start_erasure(self, record: ErasureRecord) -> ErasureRecord:
        """Store ``record`` unless one exists for its target; return the stored one."""
        if put_if_absent(erasure_to_item(record)):
            return record
        existing = self.get_erasure(record.project_id, record.kind, record.target_id)
        return existing or record

    def save_erasure(self, record: ErasureRecord) -> None:
        """Overwrite the record with its progress (counts, sessions left, status)."""
        erasure_to_item(record).save()

    def running_erasures(self, project_id: str) -> list[ErasureRecord]:
        """The project's erasure records still ``running``."""
        items = ErasureItem.query(project_id, ErasureItem.sk.startswith("ERASURE#"), consistent_read=True)
        return [r for r in map(erasure_from_item, items) if r.status == "running"]

    # ------------------------------------------------------------------ what a target holds
    def patient_sessions(self, project_id: str, patient_id: str) -> dict[str, int]:
        """``{session_id: items}`` of the patient's sessions and of the sessions holding their
        diagnoses (PatientIndex, every page; ``items`` = session + messages + diagnoses)."""
        out: dict[str, int] = {}
        for raw in query_items(SessionItem.Meta.table_name, {
            "IndexName": "PatientIndex",
            "KeyConditionExpression": "patient_pk = :p",
            "ExpressionAttributeValues": {":p": {"S": keys.patient_pk(project_id, patient_id)}},
        }):
            session_id = raw.get("session_id", {}).get("S")
            if not session_id:
                continue
            counters = (int(raw.get(name, {}).get("N", "0")) for name in ("message_count", "diagnosis_count"))
            size = 1 + sum(counters)
            out[session_id] = max(out.get(session_id, 0), size if raw["sk"]["S"] == keys.SESSION_SK else 1)
        return out

    def session_size(self, project_id: str, session_id: str) -> int | None:
        """Items of a session (:func:`session_size`), None if absent."""
        return session_size(project_id, session_id)

    def session_message_refs(self, project_id: str, session_id: str) -> list[MessageRef]:
        """Id, time and idempotency hash of every message item left in the session (Query, keys
        and three attributes only: no content is read)."""
        return [
            MessageRef(message_id=raw["message_id"]["S"], at=_UTC.deserialize(raw["at"]["S"]),
                       idempotency_hash=raw.get("idempotency_hash", {}).get("S"))
            for raw in query_items(SessionItem.Meta.table_name, {
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :m)",
                "ExpressionAttributeValues": {":pk": {"S": keys.session_pk(project_id, session_id)},
                                              ":m": {"S": keys.MESSAGE_PREFIX}},
                "ProjectionExpression": "sk, message_id, #at, idempotency_hash",
                "ExpressionAttributeNames": {"#at": "at"},
            })
        ]

    # ------------------------------------------------------------------ rewrites
    def drop_diagnosis_refs(self, project_id: str, session_id: str) -> int:
        """Remove the references to ``session_id``'s diagnoses (ids, times, key symptoms) from the
        facts of the same patient's other sessions (each saved under its version; a conflict is
        read again). Returns how many references were removed (0 when the session has no
        patient or is already gone)."""
        try:
            erased = SessionItem.get(keys.session_pk(project_id, session_id), keys.SESSION_SK, consistent_read=True,
                                     attributes_to_get=["pk", "sk", "patient_id"])
        except DoesNotExist:
            return 0
        if not erased.patient_id:
            return 0
        others = [s for s in self.patient_sessions(project_id, erased.patient_id) if s != session_id]
        return sum(_drop_refs_from_facts(project_id, other, session_id) for other in others)

    def scrub_memory_references(
        self, project_id: str, message_ids: set[str], *, patient_id: str | None,
    ) -> dict[str, int]:
        """Remove ``message_ids`` from the evidence of every hot-memory revision, weekly report
        (and its kept revisions) and review item; replace ``patient_id`` in their text, in yearly
        summaries and in review items by ``[erased]``. The current hot memory is changed by the
        erasure use case through ``commit_hot_memory`` (a new revision); this rewrites what is
        stored. Returns ``evidence_refs`` removed and ``redactions`` made."""
        scrub = _Scrub(message_ids, patient_id)
        revisions = HotMemoryRevisionItem.query(
            project_id, HotMemoryRevisionItem.sk.startswith(keys.HOT_REVISION_PREFIX))
        for item in revisions:
            before = scrub.total()
            item.lines = [{**line, "evidence": scrub.evidence(line.get("evidence")),
                           "text": scrub.text(str(line.get("text", "")))} for line in item.lines or []]
            _save_if_changed(item, before, scrub)
        report_models: tuple[Any, ...] = (WeeklyReportItem, ReportRevisionItem)
        for model, prefix in zip(report_models, (keys.REPORT_PREFIX, "REPORTREV#"), strict=True):
            for item in model.query(project_id, model.sk.startswith(prefix)):
                before = scrub.total()
                item.evidence, item.summary = scrub.evidence(item.evidence), scrub.text(item.summary)
                _save_if_changed(item, before, scrub)
        for year in YearSummaryItem.query(project_id, YearSummaryItem.sk.startswith(keys.YEAR_PREFIX)):
            before = scrub.total()
            year.summary = scrub.text(year.summary)
            _save_if_changed(year, before, scrub)
        for review in ReviewQueueItem.query(project_id, ReviewQueueItem.sk.startswith(keys.REVIEW_PREFIX)):
            before = scrub.total()
            evidence = scrub.evidence([str(e) for e in review.evidence or []])
            review.evidence = evidence  # type: ignore[assignment]  # PynamoDB types the list's values as attributes
            review.text = scrub.text(review.text)
            review.detail = scrub.text(review.detail) if review.detail else review.detail
            _save_if_changed(review, before, scrub)
        return scrub.counts

    # ------------------------------------------------------------------ deletes
    def delete_session_item(self, project_id: str, session_id: str) -> int:
        """Delete the session item first (a concurrent turn's versioned write then fails); 1 if
        it existed."""
        old = connection().dispatch("DeleteItem", {
            "TableName": SessionItem.Meta.table_name,
            "Key": {"pk": {"S": keys.session_pk(project_id, session_id)}, "sk": {"S": keys.SESSION_SK}},
            "ReturnValues": "ALL_OLD",
        })
        return 1 if old.get("Attributes") else 0

    def delete_session_batch(self, project_id: str, session_id: str, *, limit: int) -> dict[str, int]:
        """Delete up to ``limit`` items of the session's partition, each message's and rating's
        flow-log item and each message's idempotency record with it. Returns counts per kind
        (empty: nothing was left)."""
        page = connection().dispatch("Query", {
            "TableName": SessionItem.Meta.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.session_pk(project_id, session_id)}},
            "ProjectionExpression": "pk, sk, message_id, #at, idempotency_hash, user_id",
            "ExpressionAttributeNames": {"#at": "at"},
            "Limit": limit,
            "ConsistentRead": True,
        })
        batch = _SessionBatch(project_id, with_idempotency=bool(self.idempotency_table))
        for raw in page.get("Items", []):
            batch.add(raw)
        # Flow log and cached replies first: a crash between the calls leaves the message item,
        # which the retry finds again (never a flow-log item without its message).
        batch.counts["flow_log"] = delete_keys(FlowLogItem.Meta.table_name, batch.flow_keys)
        if batch.idempotency_keys:
            batch.counts["idempotency"] = delete_keys(self.idempotency_table, batch.idempotency_keys)
        delete_keys(SessionItem.Meta.table_name, batch.session_keys)
        return {k: v for k, v in batch.counts.items() if v} if batch.session_keys else {}


class _SessionBatch:
    """The keys one batch of a session's items deletes, by table, and its counts per kind."""

    def __init__(self, project_id: str, *, with_idempotency: bool) -> None:
        self.project_id = project_id
        self.with_idempotency = with_idempotency
        self.counts: dict[str, int] = {}
        self.session_keys: list[dict[str, Any]] = []
        self.flow_keys: list[dict[str, Any]] = []
        self.idempotency_keys: list[dict[str, Any]] = []

    def add(self, raw: dict[str, Any]) -> None:
        """One raw item of the session's partition (keys, ``message_id``, ``at``, ``idempotency_hash``,
        ``user_id``)."""
        sk = raw["sk"]["S"]
        self.session_keys.append({"pk": raw["pk"], "sk": raw["sk"]})
        kind = ("message" if sk.startswith(keys.MESSAGE_PREFIX)
                else "diagnosis" if sk.startswith(keys.DIAGNOSIS_PREFIX)
                else "feedback" if sk.startswith(FEEDBACK_PREFIX)
                else "session" if sk == keys.SESSION_SK else "other")
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == "feedback" and "at" in raw and "user_id" in raw:
            # the rating's flow-log event (its reason is the rater's words about this session)
            self._flow_log(raw, feedback_event_id(raw["message_id"]["S"], raw["user_id"]["S"]))
        if kind == "message" and "at" in raw:
            self._flow_log(raw, raw["message_id"]["S"])
            key_hash = raw.get("idempotency_hash", {}).get("S")
            if key_hash and self.with_idempotency:
                self.idempotency_keys.append({"id": {"S": chat_idempotency_record_id(key_hash)}})

    def _flow_log(self, raw: dict[str, Any], event_id: str) -> None:
        fpk, fsk = keys.flow_log_keys(self.project_id, _UTC.deserialize(raw["at"]["S"]), event_id)
        self.flow_keys.append({"pk": {"S": fpk}, "sk": {"S": fsk}})


def _save_if_changed(item: Any, before: int, scrub: _Scrub) -> None:
    if scrub.total() != before:
        item.save()


def _drop_refs_from_facts(project_id: str, other_id: str, erased_session_id: str) -> int:
    """Remove the references to ``erased_session_id``'s diagnoses from the facts of session
    ``other_id``, saved under the version read (a turn that saved it meanwhile: read again, up to
    :data:`_FACTS_ATTEMPTS` times). Returns how many references were removed."""
    for _attempt in range(_FACTS_ATTEMPTS):
        try:
            item = SessionItem.get(keys.session_pk(project_id, other_id), keys.SESSION_SK, consistent_read=True)
        except DoesNotExist:
            return 0
        facts = dict(item.facts or {})
        refs = list(facts.get("diagnoses") or [])
        kept = [r for r in refs if not (isinstance(r, dict) and r.get("session_id") == erased_session_id)]
        if len(kept) == len(refs):
            return 0
        facts["diagnoses"] = kept
        item.facts = facts
        try:
            item.save()  # the VersionAttribute makes it conditional on the version read
        except PutError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                continue
            raise
        return len(refs) - len(kept)
    return 0


__all__ = ["ErasureRepository", "erasure_from_item", "erasure_to_item", "session_size"]
