"""The upkeep of the patients' diagnosis references items (:mod:`.patient_refs`) outside the writes
of a diagnosis (port ``PatientRefsStore``): an erasure's references leave them, a project's removal
deletes them, and a project stored before they existed gets them (the backfill; docs/architecture.md,
"Request path" and "Data governance").
"""

from __future__ import annotations

from datetime import datetime

from pynamodb.exceptions import DeleteError, DoesNotExist, PutError, TransactWriteError, UpdateError

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import (
    cancellation_codes,
    connection,
    delete_keys,
    is_conflict,
    query_items,
    sdk_errors_as_domain,
    transaction,
)
from agent_memory.adapters.dynamo.conversation_tables import PatientRefsItem, SessionItem
from agent_memory.adapters.dynamo.patient_refs import (
    add_patient_refs,
    later_expiry,
    patient_refs_from_item,
    patient_refs_to_item,
    read_patient_refs,
    refs_from_diagnoses,
)
from agent_memory.adapters.dynamo.tables import ProjectItem
from agent_memory.domain.errors import VersionConflict
from agent_memory.domain.session_models import MAX_DIAGNOSIS_REFS, PatientRefs


@sdk_errors_as_domain
class PatientRefsRepository:
    """The references items' upkeep (module docstring)."""

    def drop_patient_refs(self, project_id: str, session_ids: list[str], *, now: datetime,
                          patient_id: str | None = None) -> int:
        """Remove the references to the diagnoses of ``session_ids`` from the patient's references
        item, under the version read. ``patient_id`` None: the patient of the first session (from
        its session item; 0 when it has none or is gone).

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
            patient_id = _patient_of(project_id, session_ids[0])
            if patient_id is None:
                return 0
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
            updated = _refilled(updated, stored, erased)
        _write_or_delete(updated, now=now)
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
        return delete_keys(SessionItem.Meta.table_name, item_keys) if item_keys else 0

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
        written = sum(_backfill_patient(project_id, patient_id, now=now) for patient_id in _patients(project_id))
        try:
            ProjectItem(project_id, keys.PROJECT_SK).update(
                actions=[ProjectItem.patient_refs_since.set(now)], condition=ProjectItem.sk.exists())
        except UpdateError as exc:
            if exc.cause_response_code != "ConditionalCheckFailedException":
                raise
        return written


def _patient_of(project_id: str, session_id: str) -> str | None:
    """The patient of a session (its session item), None when it has none or is gone."""
    try:
        session = SessionItem.get(keys.session_pk(project_id, session_id), keys.SESSION_SK,
                                  consistent_read=True, attributes_to_get=["pk", "sk", "patient_id"])
    except DoesNotExist:
        return None
    return session.patient_id or None


def _refilled(updated: PatientRefs, stored: PatientRefs, erased: set[str]) -> PatientRefs:
    """``updated`` with the patient's newest diagnoses outside ``erased`` merged in (the item was
    full, so older ones may now be among the newest), expiring no earlier than any of them."""
    older = refs_from_diagnoses(updated.project_id, updated.patient_id, exclude_sessions=erased)
    for ref in older.refs:
        updated = updated.plus(ref)
    if older.refs:
        updated = updated.model_copy(update={"expires_at": later_expiry(stored, older.expires_at)})
    return updated


def _write_or_delete(refs: PatientRefs, *, now: datetime) -> None:
    """Save the item (or delete it when no reference is left) under the version read.

    Raises:
        VersionConflict: the item changed since it was read.
    """
    item = patient_refs_to_item(refs, updated_at=now)
    try:  # the VersionAttribute makes either conditional on the version read
        if refs.refs:
            item.save()
        else:
            item.delete()
    except (PutError, DeleteError) as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            raise VersionConflict("the patient's references changed", current_version=None) from None
        raise


def _patients(project_id: str) -> list[str]:
    """The patients of the project's sessions (ProjectSessionsIndex, every page), sorted."""
    return sorted({raw["patient_id"]["S"] for raw in query_items(SessionItem.Meta.table_name, {
        "IndexName": "ProjectSessionsIndex", "KeyConditionExpression": "project_pk = :p",
        "ExpressionAttributeValues": {":p": {"S": project_id}}, "ProjectionExpression": "patient_id",
    }) if raw.get("patient_id", {}).get("S")})


def _backfill_patient(project_id: str, patient_id: str, *, now: datetime) -> int:
    """Write the patient's references item unless one exists or the patient has no diagnoses;
    1 when written.

    Raises:
        VersionConflict: a session the item would name is being erased.
    """
    if read_patient_refs(project_id, patient_id) is not None:
        return 0
    refs = refs_from_diagnoses(project_id, patient_id)
    if not refs.refs:
        return 0
    try:
        with transaction() as tx:
            add_patient_refs(tx, refs, updated_at=now)
    except TransactWriteError as exc:
        codes = cancellation_codes(exc)
        if codes and codes[-1] == "ConditionalCheckFailed":  # the item (the one put, sent last)
            return 0  # a diagnosis write created it meanwhile (complete by construction)
        if is_conflict(exc):
            raise VersionConflict("a session of the patient is being erased", current_version=None) from None
        raise
    return 1


__all__ = ["PatientRefsRepository"]
