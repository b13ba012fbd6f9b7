"""The governance store: erasure of a patient's or a session's items, and the project export reads.

Where a session's content lives (``keys``): the SessionsTable partition ``{project}#{session}``
(session item with window and session memory, messages with their context manifests,
diagnoses with their snapshots); the FlowLogTable item of each message (keys from the message's
time and id); the chat function's idempotency record of each message sent with an
Idempotency-Key (it caches the reply); evidence references in the project's MemoryTable
partition; the references to its diagnoses in the patient's diagnosis references item
(:mod:`.patient_refs`; for a project, all of them, listed under ``PATIENTS#{project}``).
Deletes go in ``BatchWriteItem`` calls of at most 25 keys (unprocessed keys sent again).
docs/architecture.md, "Data governance".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer
from pynamodb.attributes import UTCDateTimeAttribute
from pynamodb.exceptions import DeleteError, DoesNotExist, PutError, TransactWriteError, UpdateError

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import (
    cancellation_codes,
    connection,
    is_conflict,
    put_if_absent,
    sdk_errors_as_domain,
    transaction,
)
from agent_memory.adapters.dynamo.admin import AdminRepository
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem, PatientRefsItem, SessionItem
from agent_memory.adapters.dynamo.feedback import FEEDBACK_PREFIX, feedback_event_id
from agent_memory.adapters.dynamo.job_mappers import review_to_item
from agent_memory.adapters.dynamo.patient_refs import (
    add_patient_refs,
    later_expiry,
    patient_refs_from_item,
    patient_refs_to_item,
    read_patient_refs,
    refs_from_diagnoses,
)
from agent_memory.adapters.dynamo.record_tables import ErasureItem, ReportRevisionItem, ReviewQueueItem
from agent_memory.adapters.dynamo.reminders import ReminderRepository
from agent_memory.adapters.dynamo.tables import HotMemoryRevisionItem, ProjectItem, WeeklyReportItem, YearSummaryItem
from agent_memory.domain.errors import VersionConflict
from agent_memory.domain.governance import (
    PLATFORM_PK,
    ErasureKind,
    ErasureRecord,
    MessageRef,
    RemovalRecord,
    names_id,
    redact_id,
)
from agent_memory.domain.ids import chat_idempotency_record_id
from agent_memory.domain.jobs import ReviewItem
from agent_memory.domain.reminders import Reminder
from agent_memory.domain.session_models import MAX_DIAGNOSIS_REFS

_BATCH_WRITE_MAX = 25
#: Sort-key prefix of a removal record in the platform partition: ``REMOVED#{project}#{time}``.
_REMOVED_PREFIX = "REMOVED#"
_UTC = UTCDateTimeAttribute()
_DESERIALIZER = TypeDeserializer()


def _erasure_from_item(item: ErasureItem) -> ErasureRecord:
    return ErasureRecord(
        project_id=item.pk, kind=item.kind,
        target_id=item.target_id, actor=item.actor, requested_at=item.requested_at,
        status=item.status,
        finished_at=item.finished_at, mode=item.mode,
        sessions=list(item.sessions or []), counts=dict(item.counts or {}),
    )


def _erasure_to_item(r: ErasureRecord) -> ErasureItem:
    return ErasureItem(
        r.project_id, keys.erasure_sk(r.kind, r.target_id), kind=r.kind, target_id=r.target_id, actor=r.actor,
        requested_at=r.requested_at, status=r.status, finished_at=r.finished_at, mode=r.mode,
        sessions=list(r.sessions), counts=dict(r.counts),
    )


@sdk_errors_as_domain
class GovernanceRepository(AdminRepository):
    """:class:`AdminRepository` plus the erasure and export reads and deletes (module docstring).

    Args:
        idempotency_table: name of the Powertools idempotency table ("" = none to clean).
    """

    def __init__(self, idempotency_table: str = "") -> None:
        super().__init__()
        self.idempotency_table = idempotency_table

    # ------------------------------------------------------------------ erasure records
    def get_erasure(self, project_id: str, kind: ErasureKind, target_id: str) -> ErasureRecord | None:
        """The erasure record of a target, or None (strongly consistent)."""
        try:
            item = ErasureItem.get(project_id, keys.erasure_sk(kind, target_id), consistent_read=True)
        except DoesNotExist:
            return None
        return _erasure_from_item(item)

    def start_erasure(self, record: ErasureRecord) -> ErasureRecord:
        """Store ``record`` unless one exists for its target; return the stored one."""
        if put_if_absent(_erasure_to_item(record)):
            return record
        existing = self.get_erasure(record.project_id, record.kind, record.target_id)
        return existing or record

    def save_erasure(self, record: ErasureRecord) -> None:
        """Overwrite the record with its progress (counts, sessions left, status)."""
        _erasure_to_item(record).save()

    # ------------------------------------------------------------------ what a target holds
    def patient_sessions(self, project_id: str, patient_id: str) -> dict[str, int]:
        """``{session_id: items}`` of the patient's sessions and of the sessions holding their
        diagnoses (PatientIndex, every page; ``items`` = session + messages + diagnoses)."""
        out: dict[str, int] = {}
        for raw in _query_all(SessionItem.Meta.table_name, {
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
        """Items of a session (session + messages + diagnoses, from its counters), None if absent."""
        try:
            item = SessionItem.get(keys.session_pk(project_id, session_id), keys.SESSION_SK, consistent_read=True,
                                   attributes_to_get=["pk", "sk", "message_count", "diagnosis_count"])
        except DoesNotExist:
            return None
        return 1 + int(item.message_count or 0) + int(item.diagnosis_count or 0)

    def session_message_refs(self, project_id: str, session_id: str) -> list[MessageRef]:
        """Id, time and idempotency hash of every message item left in the session (Query, keys
        and three attributes only: no content is read)."""
        refs: list[MessageRef] = []
        for raw in _query_all(SessionItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :m)",
            "ExpressionAttributeValues": {":pk": {"S": keys.session_pk(project_id, session_id)},
                                          ":m": {"S": keys.MESSAGE_PREFIX}},
            "ProjectionExpression": "sk, message_id, #at, idempotency_hash",
            "ExpressionAttributeNames": {"#at": "at"},
        }):
            refs.append(MessageRef(
                message_id=raw["message_id"]["S"], at=_UTC.deserialize(raw["at"]["S"]),
                idempotency_hash=raw.get("idempotency_hash", {}).get("S"),
            ))
        return refs

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
        removed = 0
        for other_id in self.patient_sessions(project_id, erased.patient_id):
            if other_id == session_id:
                continue
            for _attempt in range(4):
                try:
                    item = SessionItem.get(keys.session_pk(project_id, other_id), keys.SESSION_SK, consistent_read=True)
                except DoesNotExist:
                    break
                facts = dict(item.facts or {})
                refs = list(facts.get("diagnoses") or [])
                kept = [r for r in refs if not (isinstance(r, dict) and r.get("session_id") == session_id)]
                if len(kept) == len(refs):
                    break
                facts["diagnoses"] = kept
                item.facts = facts
                try:
                    item.save()  # the VersionAttribute makes it conditional on the version read
                except PutError as exc:
                    if exc.cause_response_code == "ConditionalCheckFailedException":
                        continue
                    raise
                removed += len(refs) - len(kept)
                break
        return removed

    def drop_patient_refs(self, project_id: str, session_ids: list[str], *, now: datetime,
                          patient_id: str | None = None) -> int:
        """Remove the references to the diagnoses of ``session_ids`` from the patient's references
        item (:mod:`.patient_refs`), under the version read. ``patient_id`` None: the patient of
        the first session (from its session item; 0 when it has none or is gone).

        An item that held the newest ``MAX_DIAGNOSIS_REFS`` is refilled from the patient's other
        diagnoses (PatientIndex, without erased sessions), so it still holds the newest ones left.
        An item left without references is deleted (its key names the patient). Returns how many
        references were removed.

        Raises:
            VersionConflict: the item changed since it was read (a diagnosis written meanwhile):
                run it again.
        """
        if not session_ids:
            return 0
        if patient_id is None:
            try:
                session = SessionItem.get(keys.session_pk(project_id, session_ids[0]), keys.SESSION_SK,
                                          consistent_read=True, attributes_to_get=["pk", "sk", "patient_id"])
            except DoesNotExist:
                return 0
            if not session.patient_id:
                return 0
            patient_id = session.patient_id
        try:
            stored = patient_refs_from_item(PatientRefsItem.get(
                keys.patient_refs_pk(project_id, patient_id), keys.PATIENT_REFS_SK, consistent_read=True))
        except DoesNotExist:
            return 0
        erased = set(session_ids)
        kept = [r for r in stored.refs if r.session_id not in erased]
        removed = len(stored.refs) - len(kept)
        if not removed:
            return 0
        updated = stored.model_copy(update={"refs": kept})
        if len(stored.refs) >= MAX_DIAGNOSIS_REFS:  # older diagnoses may now be among the newest
            older = refs_from_diagnoses(project_id, patient_id, exclude_sessions=erased)
            for ref in older.refs:
                updated = updated.plus(ref)
            if older.refs:
                updated = updated.model_copy(update={"expires_at": later_expiry(stored, older.expires_at)})
        item = patient_refs_to_item(updated, updated_at=now)
        try:  # the VersionAttribute makes either conditional on the version read
            if updated.refs:
                item.save()
            else:
                item.delete()
        except (PutError, DeleteError) as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                raise VersionConflict("the patient's references changed", current_version=None) from None
            raise
        return removed

    def delete_patient_refs_items(self, project_id: str, *, limit: int) -> int:
        """Delete up to ``limit`` of the project's patient references items (ProjectSessionsIndex
        partition ``PATIENTS#{project}``); how many (0: none left). A project removal's step."""
        page = connection().dispatch("Query", {
            "TableName": SessionItem.Meta.table_name, "IndexName": "ProjectSessionsIndex",
            "KeyConditionExpression": "project_pk = :p",
            "ExpressionAttributeValues": {":p": {"S": keys.patient_refs_listing(project_id)}},
            "ProjectionExpression": "pk, sk", "Limit": limit,
        })
        item_keys = [{"pk": raw["pk"], "sk": raw["sk"]} for raw in page.get("Items", [])]
        return _delete_keys(SessionItem.Meta.table_name, item_keys) if item_keys else 0

    def backfill_patient_refs(self, project_id: str, *, now: datetime) -> int:
        """Give every patient of the project who has diagnoses but no references item one (built
        from their diagnoses, :func:`.patient_refs.refs_from_diagnoses`), then mark the project
        record (``patient_refs_since = now``): from then on a patient without the item has no
        diagnoses, and a first patient turn reads no Query. Idempotent; a project already marked
        is left as it is. Returns how many items were written.

        A patient whose item is created meanwhile by a diagnosis write keeps that item (written
        only if absent). Raises VersionConflict (nothing marked) when a session the new item
        would name is being erased: run it again.
        """
        try:
            marked = ProjectItem.get(project_id, keys.PROJECT_SK, consistent_read=True,
                                     attributes_to_get=["pk", "sk", "patient_refs_since"])
        except DoesNotExist:
            return 0
        if marked.patient_refs_since is not None:
            return 0
        patients = sorted({raw["patient_id"]["S"] for raw in _query_all(SessionItem.Meta.table_name, {
            "IndexName": "ProjectSessionsIndex", "KeyConditionExpression": "project_pk = :p",
            "ExpressionAttributeValues": {":p": {"S": project_id}}, "ProjectionExpression": "patient_id",
        }) if raw.get("patient_id", {}).get("S")})
        written = 0
        for patient_id in patients:
            if read_patient_refs(project_id, patient_id) is not None:
                continue
            refs = refs_from_diagnoses(project_id, patient_id)
            if not refs.refs:
                continue
            try:
                with transaction() as tx:
                    add_patient_refs(tx, refs, updated_at=now)
            except TransactWriteError as exc:
                codes = cancellation_codes(exc)
                if codes and codes[-1] == "ConditionalCheckFailed":  # the item (the one put, sent last)
                    continue  # a diagnosis write created it meanwhile (complete by construction)
                if is_conflict(exc):
                    raise VersionConflict("a session of the patient is being erased", current_version=None) from None
                raise
            written += 1
        try:
            ProjectItem(project_id, keys.PROJECT_SK).update(
                actions=[ProjectItem.patient_refs_since.set(now)], condition=ProjectItem.sk.exists())
        except UpdateError as exc:
            if exc.cause_response_code != "ConditionalCheckFailedException":
                raise
        return written

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
        """Delete up to ``limit`` items of the session's partition, each message's flow-log item
        and idempotency record with it. Returns counts per kind (empty: nothing was left)."""
        pk = keys.session_pk(project_id, session_id)
        response = connection().dispatch("Query", {
            "TableName": SessionItem.Meta.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ProjectionExpression": "pk, sk, message_id, #at, idempotency_hash, user_id",
            "ExpressionAttributeNames": {"#at": "at"},
            "Limit": limit,
            "ConsistentRead": True,
        })
        counts: dict[str, int] = {}
        session_keys: list[dict[str, Any]] = []
        flow_keys: list[dict[str, Any]] = []
        idempotency_keys: list[dict[str, Any]] = []
        for raw in response.get("Items", []):
            sk = raw["sk"]["S"]
            session_keys.append({"pk": raw["pk"], "sk": raw["sk"]})
            kind = ("message" if sk.startswith(keys.MESSAGE_PREFIX)
                    else "diagnosis" if sk.startswith(keys.DIAGNOSIS_PREFIX)
                    else "feedback" if sk.startswith(FEEDBACK_PREFIX)
                    else "session" if sk == keys.SESSION_SK else "other")
            counts[kind] = counts.get(kind, 0) + 1
            if kind == "feedback" and "at" in raw and "user_id" in raw:
                # the rating's flow-log event (its reason is the rater's words about this session)
                fpk, fsk = keys.flow_log_keys(project_id, _UTC.deserialize(raw["at"]["S"]),
                                              feedback_event_id(raw["message_id"]["S"], raw["user_id"]["S"]))
                flow_keys.append({"pk": {"S": fpk}, "sk": {"S": fsk}})
            if kind == "message" and "at" in raw:
                fpk, fsk = keys.flow_log_keys(project_id, _UTC.deserialize(raw["at"]["S"]), raw["message_id"]["S"])
                flow_keys.append({"pk": {"S": fpk}, "sk": {"S": fsk}})
                key_hash = raw.get("idempotency_hash", {}).get("S")
                if key_hash and self.idempotency_table:
                    idempotency_keys.append({"id": {"S": chat_idempotency_record_id(key_hash)}})
        # Flow log and cached replies first: a crash between the calls leaves the message item,
        # which the retry finds again (never a flow-log item without its message).
        counts["flow_log"] = _delete_keys(FlowLogItem.Meta.table_name, flow_keys)
        if idempotency_keys:
            counts["idempotency"] = _delete_keys(self.idempotency_table, idempotency_keys)
        _delete_keys(SessionItem.Meta.table_name, session_keys)
        return {k: v for k, v in counts.items() if v} if session_keys else {}

    # ------------------------------------------------------------------ memory references
    def scrub_memory_references(
        self, project_id: str, message_ids: set[str], *, patient_id: str | None, now: datetime, actor: str,
    ) -> dict[str, int]:
        """Remove ``message_ids`` from the evidence of every hot-memory revision, weekly report
        (and its kept revisions) and review item; replace ``patient_id`` in their text, in yearly
        summaries and in review items by ``[erased]``. The current hot memory is changed by the
        erasure use case through ``commit_hot_memory`` (a new revision); this rewrites what is
        stored. Returns ``evidence_refs`` removed and ``redactions`` made."""
        counts = {"evidence_refs": 0, "redactions": 0}

        def scrub_list(evidence: list[str] | None) -> list[str]:
            kept = [e for e in evidence or [] if e not in message_ids]
            counts["evidence_refs"] += len(evidence or []) - len(kept)
            return kept

        def scrub_text(text: str) -> str:
            if patient_id and names_id(text, patient_id):
                counts["redactions"] += 1
                return redact_id(text, patient_id)
            return text

        for model, prefix in ((HotMemoryRevisionItem, keys.HOT_REVISION_PREFIX),):
            for item in model.query(project_id, model.sk.startswith(prefix)):
                before = (counts["evidence_refs"], counts["redactions"])
                item.lines = [{**line, "evidence": scrub_list(line.get("evidence")),
                               "text": scrub_text(str(line.get("text", "")))} for line in item.lines or []]
                if before != (counts["evidence_refs"], counts["redactions"]):
                    item.save()
        report_models: tuple[Any, ...] = (WeeklyReportItem, ReportRevisionItem)
        for model, prefix in zip(report_models, (keys.REPORT_PREFIX, "REPORTREV#"), strict=True):
            for item in model.query(project_id, model.sk.startswith(prefix)):
                before = (counts["evidence_refs"], counts["redactions"])
                item.evidence = scrub_list(item.evidence)
                item.summary = scrub_text(item.summary)
                if before != (counts["evidence_refs"], counts["redactions"]):
                    item.save()
        for year in YearSummaryItem.query(project_id, YearSummaryItem.sk.startswith(keys.YEAR_PREFIX)):
            before_r = counts["redactions"]
            year.summary = scrub_text(year.summary)
            if before_r != counts["redactions"]:
                year.save()
        for review in ReviewQueueItem.query(project_id, ReviewQueueItem.sk.startswith(keys.REVIEW_PREFIX)):
            before = (counts["evidence_refs"], counts["redactions"])
            review.evidence = scrub_list(list(review.evidence or []))  # type: ignore[assignment,arg-type]
            review.text = scrub_text(review.text)
            if review.detail:
                review.detail = scrub_text(review.detail)
            if before != (counts["evidence_refs"], counts["redactions"]):
                review.save()
        return counts

    def put_review_items(self, items: list[ReviewItem]) -> int:
        """Queue review items (a key that exists is left as it is); how many were new."""
        return sum(1 for r in items if put_if_absent(review_to_item(r)))

    # ------------------------------------------------------------------ export reads
    def memory_items(self, project_id: str) -> Iterator[dict[str, Any]]:
        """Every item of the project's MemoryTable partition as plain JSON values (Query, every page)."""
        yield from _plain_all(ProjectItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": project_id}},
        })

    def project_session_ids(self, project_id: str) -> list[str]:
        """Every session id of the project (ProjectSessionsIndex, every page)."""
        return [raw["session_id"]["S"] for raw in _query_all(SessionItem.Meta.table_name, {
            "IndexName": "ProjectSessionsIndex", "KeyConditionExpression": "project_pk = :p",
            "ExpressionAttributeValues": {":p": {"S": project_id}}, "ProjectionExpression": "session_id",
        })]

    def session_items(self, project_id: str, session_id: str) -> Iterator[dict[str, Any]]:
        """Every item of a session's partition as plain JSON values (session, messages, diagnoses)."""
        yield from _plain_all(SessionItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.session_pk(project_id, session_id)}},
        })

    def flow_log_items(self, project_id: str, utc_days: Iterable[str]) -> Iterator[dict[str, Any]]:
        """Every flow-log item of the project on the given UTC days as plain JSON values (one
        Query per day)."""
        for day in sorted(set(utc_days)):
            yield from _plain_all(FlowLogItem.Meta.table_name, {
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": f"{project_id}#{day}"}},
            })

    # ------------------------------------------------------------------ project removal
    def get_removal(self, project_id: str) -> RemovalRecord | None:
        """The latest removal record of the project (platform partition, strongly consistent) or None."""
        page = connection().dispatch("Query", {
            "TableName": ProjectItem.Meta.table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :s)",
            "ExpressionAttributeValues": {":pk": {"S": PLATFORM_PK}, ":s": {"S": f"{_REMOVED_PREFIX}{project_id}#"}},
            "ScanIndexForward": False, "Limit": 1, "ConsistentRead": True,
        })
        items = page.get("Items") or []
        return RemovalRecord.model_validate_json(items[0]["record"]["S"]) if items else None

    def save_removal(self, record: RemovalRecord) -> None:
        """Write (or overwrite with its progress) the removal record ``REMOVED#{project}#{requested time}``."""
        connection().dispatch("PutItem", {"TableName": ProjectItem.Meta.table_name, "Item": {
            "pk": {"S": PLATFORM_PK},
            "sk": {"S": f"{_REMOVED_PREFIX}{record.project_id}#{keys.sort_time(record.requested_at)}"},
            "record": {"S": record.model_dump_json()},
        }})

    def running_erasures(self, project_id: str) -> list[ErasureRecord]:
        """The project's erasure records still ``running``."""
        items = ErasureItem.query(project_id, ErasureItem.sk.startswith("ERASURE#"), consistent_read=True)
        return [r for r in map(_erasure_from_item, items) if r.status == "running"]

    def project_size(self, project_id: str, *, stop_after: int) -> int:
        """Items of the project: its MemoryTable partition (Query COUNT) plus each session's
        counters; stops counting once above ``stop_after``."""
        total = 0
        for page in _pages(ProjectItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": project_id}},
            "Select": "COUNT",
        }):
            total += int(page.get("Count", 0))
        for page in _pages(SessionItem.Meta.table_name, {
            "IndexName": "ProjectSessionsIndex", "KeyConditionExpression": "project_pk = :p",
            "ExpressionAttributeValues": {":p": {"S": keys.patient_refs_listing(project_id)}}, "Select": "COUNT",
        }):
            total += int(page.get("Count", 0))  # the patients' diagnosis references items
        for session_id in self.project_session_ids(project_id):
            if total > stop_after:
                break
            total += self.session_size(project_id, session_id) or 1
        return total

    def delete_project_item(self, project_id: str) -> int:
        """Delete the ``PROJECT`` item (the project becomes unknown); 1 if it existed."""
        old = connection().dispatch("DeleteItem", {
            "TableName": ProjectItem.Meta.table_name,
            "Key": {"pk": {"S": project_id}, "sk": {"S": keys.PROJECT_SK}}, "ReturnValues": "ALL_OLD",
        })
        return 1 if old.get("Attributes") else 0

    def project_reminders(self, project_id: str) -> list[Reminder]:
        """Every reminder of the project (any status), for deleting their schedules."""
        return ReminderRepository().list_reminders(project_id)

    def delete_flow_log_day(self, project_id: str, day: date) -> int:
        """Delete every flow-log item of the project on UTC ``day``; how many."""
        item_keys = [{"pk": raw["pk"], "sk": raw["sk"]} for raw in _query_all(FlowLogItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.flow_log_pk(project_id, day)}},
            "ProjectionExpression": "pk, sk",
        })]
        return _delete_keys(FlowLogItem.Meta.table_name, item_keys) if item_keys else 0

    def delete_memory_batch(self, project_id: str, *, limit: int) -> int:
        """Delete up to ``limit`` items of the project's MemoryTable partition; how many (0: none left)."""
        page = connection().dispatch("Query", {
            "TableName": ProjectItem.Meta.table_name, "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": project_id}}, "ProjectionExpression": "pk, sk",
            "Limit": limit, "ConsistentRead": True,
        })
        item_keys = [{"pk": raw["pk"], "sk": raw["sk"]} for raw in page.get("Items", [])]
        return _delete_keys(ProjectItem.Meta.table_name, item_keys) if item_keys else 0



def _plain(value: Any) -> Any:
    """A deserialised DynamoDB value as JSON: integral numbers as int, others as float, sets as
    sorted lists."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, Binary):
        return bytes(value.value).hex()
    return value


def _plain_all(table: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for raw in _query_all(table, request):
        yield {name: _plain(_DESERIALIZER.deserialize(value)) for name, value in raw.items()}


def _query_all(table: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Raw items of a Query, every page."""
    for page in _pages(table, request):
        yield from page.get("Items", [])


def _pages(table: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The pages of a Query."""
    conn = connection()
    start: dict[str, Any] | None = None
    while True:
        paging = {"ExclusiveStartKey": start} if start else {}
        page = conn.dispatch("Query", {"TableName": table, **request, **paging})
        yield page
        start = page.get("LastEvaluatedKey")
        if not start:
            return


def _delete_keys(table: str, item_keys: list[dict[str, Any]]) -> int:
    """Delete the keys in BatchWriteItem calls of 25 (unprocessed keys sent again); returns how
    many keys were sent (a missing key deletes nothing and is no error)."""
    conn = connection()
    for start in range(0, len(item_keys), _BATCH_WRITE_MAX):
        chunk = item_keys[start:start + _BATCH_WRITE_MAX]
        pending: dict[str, Any] = {table: [{"DeleteRequest": {"Key": k}} for k in chunk]}
        while pending:
            response = conn.dispatch("BatchWriteItem", {"RequestItems": pending})
            pending = response.get("UnprocessedItems") or {}
    return len(item_keys)


__all__ = ["GovernanceRepository"]
