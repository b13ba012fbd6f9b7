"""A patient's diagnosis references: one SessionsTable item per patient and project
(:class:`~agent_memory.adapters.dynamo.tables.PatientRefsItem`, pk ``{project}#PATIENT#{patient}``,
sk ``DIAGREFS``) holding the references of the patient's newest ``MAX_DIAGNOSIS_REFS`` diagnoses
(:class:`~agent_memory.domain.session_models.PatientRefs`).

Why an item of its own (docs/architecture.md, "Request path"): the first turn of a patient's new
session needs the patient's earlier diagnoses; a Query on the PatientIndex is a round trip of its
own, while this item's key is known before the turn reads anything, so it joins the turn's one
BatchGetItem. It lives in the SessionsTable beside the diagnoses it is derived from: the same
retention (TTL), the same functions may write it (the sessions function stores diagnoses), and
the same erasure and removal paths reach it.

- read: :func:`patient_refs_keys` (the BatchGetItem keys) and :func:`patient_refs_among` (the
  item among the read items; an empty one when the project record says every diagnosis of the
  project is referenced, ``ProjectItem.patient_refs_since``; None = unknown, query instead);
- the fallback and the backfill: :func:`refs_from_diagnoses` (the PatientIndex Query, without
  the diagnoses of erased sessions);
- written by :func:`add_patient_refs` inside a caller's transaction: the item under its version
  (two diagnoses of one patient written at once: one transaction is cancelled and retried on
  the item as re-read, so no reference is lost), and for a NEW item one not-erased condition per
  session it references, so a reference found by the Query can never outlive an erasure that
  started meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import islice
from typing import Any

from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import batch_get
from agent_memory.adapters.dynamo.conversation_tables import DiagnosisItem, PatientRefsItem
from agent_memory.adapters.dynamo.fields import item_fields, read_fields
from agent_memory.adapters.dynamo.record_tables import ErasureItem
from agent_memory.adapters.dynamo.session_mappers import diagnosis_from_item
from agent_memory.adapters.dynamo.tables import ProjectItem
from agent_memory.domain.session_models import MAX_DIAGNOSIS_REFS, DiagnosisRef, PatientRefs

#: Attribute of the raw ``PROJECT`` item that marks every diagnosis of the project as referenced.
_MARKER = "patient_refs_since"


def patient_refs_keys(project_id: str, patient_id: str) -> list[dict[str, Any]]:
    """The BatchGetItem key (SessionsTable) of the patient's references item."""
    return [{"pk": {"S": keys.patient_refs_pk(project_id, patient_id)}, "sk": {"S": keys.PATIENT_REFS_SK}}]


def project_refs_complete(project_id: str, raw_items: Iterable[dict[str, Any]]) -> bool:
    """True when the raw ``PROJECT`` item among ``raw_items`` says every diagnosis of the project
    is referenced by its patient's item (``patient_refs_since`` is set)."""
    return any(
        raw["pk"]["S"] == project_id and raw["sk"]["S"] == keys.PROJECT_SK and _MARKER in raw for raw in raw_items
    )


def patient_refs_among(project_id: str, patient_id: str, raw_items: list[dict[str, Any]]) -> PatientRefs | None:
    """The patient's references among the raw items of a BatchGetItem of
    :func:`patient_refs_keys` and the ``PROJECT`` item.

    Returns:
        The stored item; an empty, unsaved one (``version == 0``) when there is none and the
        project's diagnoses are all referenced (the patient has none); None when there is none
        and the project still has diagnoses from before these items (the caller queries them).
    """
    pk = keys.patient_refs_pk(project_id, patient_id)
    raw = next((r for r in raw_items if r["pk"]["S"] == pk and r["sk"]["S"] == keys.PATIENT_REFS_SK), None)
    if raw is not None:
        return patient_refs_from_item(PatientRefsItem.from_raw_data(raw))
    if project_refs_complete(project_id, raw_items):
        return PatientRefs(project_id=project_id, patient_id=patient_id)
    return None


def read_patient_refs(project_id: str, patient_id: str) -> PatientRefs | None:
    """ONE strongly consistent BatchGetItem of the ``PROJECT`` item and the patient's item
    (:func:`patient_refs_among`; None = unknown, query the diagnoses)."""
    raw_items = batch_get({
        ProjectItem.Meta.table_name: {
            "Keys": [{"pk": {"S": project_id}, "sk": {"S": keys.PROJECT_SK}}],
            "ConsistentRead": True, "ProjectionExpression": "pk, sk, #m",
            "ExpressionAttributeNames": {"#m": _MARKER},
        },
        PatientRefsItem.Meta.table_name: {"Keys": patient_refs_keys(project_id, patient_id), "ConsistentRead": True},
    })
    return patient_refs_among(project_id, patient_id, raw_items)


def patient_refs_from_item(item: PatientRefsItem) -> PatientRefs:
    """The domain value of a stored item (entries that no longer validate are skipped)."""
    refs: list[DiagnosisRef] = []
    for raw in item.refs or []:
        try:
            refs.append(DiagnosisRef.model_validate(raw))
        except ValueError:
            continue
    return PatientRefs(**read_fields(item, PatientRefs,
        refs=refs,
        version=int(item.version or 0),
    ))


def patient_refs_to_item(refs: PatientRefs, *, updated_at: datetime) -> PatientRefsItem:
    """The item to write; its ``version`` is the one read (None for a new item), so PynamoDB's
    VersionAttribute makes the write conditional on it."""
    item = PatientRefsItem(
        keys.patient_refs_pk(refs.project_id, refs.patient_id), keys.PATIENT_REFS_SK,
        **item_fields(refs, PatientRefsItem, exclude=("version",),  # set below, when one was read
        refs=[r.model_dump(mode="json") for r in refs.refs],
        updated_at=updated_at,
        project_pk=keys.patient_refs_listing(refs.project_id),
        project_sk=refs.patient_id,
    ))
    if refs.version:
        item.version = refs.version
    return item


def later_expiry(current: PatientRefs, added: datetime | None) -> datetime | None:
    """The item's expiry once a diagnosis expiring at ``added`` (None: kept) is referenced too:
    no earlier than any diagnosis it references (None, kept, wins)."""
    if not current.refs:
        return added
    if current.expires_at is None or added is None:
        return None
    return max(current.expires_at, added)


def add_patient_refs(tx: TransactWrite, refs: PatientRefs, *, updated_at: datetime,
                     checked_sessions: Iterable[str] = ()) -> int:
    """Add the item's write to ``tx``: condition on the version read (0: must not exist); for a
    new item, also one not-erased condition per session its references name (except
    ``checked_sessions``, which the caller's transaction checks itself).

    Returns:
        How many condition checks were added (PynamoDB sends a transaction's condition checks
        before its puts, so they shift the puts' cancellation codes by that many).
    """
    checks = 0
    if refs.version == 0:
        skip = set(checked_sessions)
        for session_id in sorted({r.session_id for r in refs.refs} - skip):
            tx.condition_check(ErasureItem, refs.project_id, keys.erasure_sk("session", session_id),
                               condition=ErasureItem.sk.does_not_exist())
            checks += 1
    tx.save(patient_refs_to_item(refs, updated_at=updated_at))
    return checks


def erased_sessions(project_id: str, session_ids: Iterable[str]) -> set[str]:
    """Which of ``session_ids`` have an erasure record (strongly consistent BatchGetItem)."""
    wanted = sorted(set(session_ids))
    found: set[str] = set()
    for start in range(0, len(wanted), 100):  # BatchGetItem reads at most 100 keys per request
        chunk = wanted[start:start + 100]
        raw_items = batch_get({ErasureItem.Meta.table_name: {
            "Keys": [{"pk": {"S": project_id}, "sk": {"S": keys.erasure_sk("session", s)}} for s in chunk],
            "ConsistentRead": True, "ProjectionExpression": "pk, sk",
        }})
        prefix = keys.erasure_sk("session", "")
        found |= {raw["sk"]["S"][len(prefix):] for raw in raw_items}
    return found


def refs_from_diagnoses(project_id: str, patient_id: str, *, exclude_sessions: Iterable[str] = (),
                        limit: int = MAX_DIAGNOSIS_REFS) -> PatientRefs:
    """The patient's newest ``limit`` diagnoses as an unsaved item (``version == 0``), read from
    the PatientIndex (a Query, newest first, page by page) leaving out ``exclude_sessions`` and
    every session with an erasure record (an erasure under way may not have deleted its
    diagnoses yet). ``expires_at``: the latest expiry among them (None when one is kept)."""
    excluded = set(exclude_sessions)
    items: Iterator[DiagnosisItem] = iter(DiagnosisItem.patient_index.query(
        keys.patient_pk(project_id, patient_id), DiagnosisItem.patient_sk.startswith(keys.DIAGNOSIS_PREFIX),
        scan_index_forward=False, page_size=limit,
    ))
    kept: list[DiagnosisItem] = []
    while len(kept) < limit:
        page = list(islice(items, limit))
        if not page:
            break
        chunk = [i for i in page if i.session_id not in excluded]
        erased = erased_sessions(project_id, {i.session_id for i in chunk}) if chunk else set()
        excluded |= erased
        kept.extend(i for i in chunk if i.session_id not in erased)
    kept = kept[:limit]
    expiries = [i.expires_at for i in kept]
    expires_at = None if not expiries or any(e is None for e in expiries) else max(e for e in expiries if e)
    refs = sorted((diagnosis_from_item(i).ref() for i in kept), key=lambda r: (r.at, r.diagnosis_id))
    return PatientRefs(project_id=project_id, patient_id=patient_id, refs=refs, expires_at=expires_at)


__all__ = [
    "add_patient_refs",
    "erased_sessions",
    "later_expiry",
    "patient_refs_among",
    "patient_refs_from_item",
    "patient_refs_keys",
    "patient_refs_to_item",
    "project_refs_complete",
    "read_patient_refs",
    "refs_from_diagnoses",
]
