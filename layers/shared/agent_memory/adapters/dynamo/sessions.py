"""The session layer's store: session creation, listings, diagnoses and the patients' diagnosis
references, over the chat's store (a :class:`ChatRepository` it holds: the session item, its
messages and the turn write, which the transcript import appends through).

SessionsTable items and indexes (keys in :mod:`agent_memory.adapters.dynamo.keys`):

- session: pk ``{project}#{session}``, sk ``SESSION``; PatientIndex (``patient_pk`` /
  ``patient_sk``) ``{project}#{patient}`` / ``{updated_at}#{session}``; ProjectSessionsIndex
  ``{project}`` / ``{updated_at}#{session}``;
- message: pk ``{project}#{session}``, sk ``MSG#{message_id}``; in no index (listed by
  :mod:`.session_messages`);
- diagnosis: pk ``{project}#{session}``, sk ``DIAG#{diagnosis_id}``; PatientIndex
  ``{project}#{patient}`` / ``DIAG#{created_at}#{diagnosis_id}``; not in ProjectSessionsIndex;
- a patient's diagnosis references (:mod:`.patient_refs`): pk ``{project}#PATIENT#{patient}``,
  sk ``DIAGREFS``; ProjectSessionsIndex ``PATIENTS#{project}`` / ``{patient}`` (so a project's
  removal finds them); not in PatientIndex.

A session's ``patient_sk`` starts with a digit (an ISO time), a diagnosis's with ``DIAG#``, so
one index serves both "a patient's sessions" (``patient_sk < "DIAG#"``) and "a patient's
diagnoses" (``begins_with(patient_sk, "DIAG#")``) without mixing them.

Listings always Query DynamoDB (never a per-container cache, which would differ between
containers), newest first, and page with an opaque token: URL-safe base64 of the
LastEvaluatedKey as JSON, checked on the way back in (exact attributes, this listing's partition,
well-formed sort key), so a tampered or foreign token is rejected (400) instead of reading another
partition.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import cancellation_codes, sdk_errors_as_domain, transaction
from agent_memory.adapters.dynamo.chat import ChatRepository, check_not_erased, raise_session_write_error
from agent_memory.adapters.dynamo.conversation_tables import DiagnosisItem, SessionItem
from agent_memory.adapters.dynamo.delegation import delegate
from agent_memory.adapters.dynamo.item_size import check_size
from agent_memory.adapters.dynamo.message_mappers import SESSION_ITEM_BUDGET_BYTES, session_to_item
from agent_memory.adapters.dynamo.patient_refs import (
    add_patient_refs,
    later_expiry,
    read_patient_refs,
    refs_from_diagnoses,
)
from agent_memory.adapters.dynamo.projects import ProjectRepository
from agent_memory.adapters.dynamo.record_tables import ErasureItem
from agent_memory.adapters.dynamo.session_mappers import (
    DIAGNOSIS_ITEM_BUDGET_BYTES,
    diagnosis_from_item,
    diagnosis_to_item,
    session_list_item_from_item,
)
from agent_memory.adapters.dynamo.session_messages import list_session_messages
from agent_memory.domain.errors import AlreadyExists, DiagnosisNotFound, InvalidContinuationToken, SessionErased
from agent_memory.domain.session_models import Diagnosis, DiagnosisRef, PatientRefs, SessionMessagePage, SessionPage
from agent_memory.domain.text import utf8_len
from agent_memory.domain.turns import SessionState

#: Sort keys of sessions in both indexes: ``{ISO time}#{session_id}``.
_SESSION_SORT_KEY = re.compile(r"^\d{4}-\d{2}-\d{2}T[0-9:.]+Z#[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_TOKEN_MAX_CHARS = 2048


@sdk_errors_as_domain
class SessionsRepository:
    """The session-layer reads and writes (module docstring).

    Args:
        session_retention_days: items written to the sessions table expire this many days after
            the write (``expires_at``, the table's TTL); 0 = kept until erased.
        chat: the chat's store (a new :class:`ChatRepository` with that retention by default); its
            project partition is this store's ``projects``.
    """

    def __init__(self, session_retention_days: int = 0, chat: ChatRepository | None = None) -> None:
        self.chat = chat or ChatRepository(session_retention_days)
        self.projects = self.chat.projects

    get_project = delegate("projects", ProjectRepository.get_project)
    load_turn_context = delegate("chat", ChatRepository.load_turn_context)
    get_session = delegate("chat", ChatRepository.get_session)
    record_turn = delegate("chat", ChatRepository.record_turn)
    messages_between = delegate("chat", ChatRepository.messages_between)

    # ----------------------------------------------------------------------- sessions
    def create_session(self, session: SessionState) -> SessionState:
        """Store a new session item (version 1).

        Raises:
            AlreadyExists: a session with this id exists in the project (409).
            SessionErased: a session with this id was erased (404; docs/architecture.md, "Data governance").
        """
        item = session_to_item(session)
        item.expires_at = self.chat.session_expiry(session.updated_at)
        try:
            with transaction() as tx:
                check_not_erased(tx, session.project_id, session.session_id)
                tx.save(item, condition=SessionItem.sk.does_not_exist())
        except TransactWriteError as exc:
            codes = cancellation_codes(exc)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise SessionErased(f"session {session.session_id} was erased") from None
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                raise AlreadyExists(f"session {session.session_id} already exists") from None
            raise
        return session.model_copy(update={"version": int(item.version or 1)})

    def list_patient_sessions(
        self, project_id: str, patient_id: str, *, limit: int, next_token: str | None = None,
        page_size: int | None = None,
    ) -> SessionPage:
        """A patient's sessions, newest ``updated_at`` first (Query on PatientIndex).

        Raises:
            InvalidContinuationToken: ``next_token`` was not issued for this listing.
        """
        partition = keys.patient_pk(project_id, patient_id)
        return _list_sessions(
            SessionItem.patient_index, project_id, partition, "patient_pk", "patient_sk",
            range_condition=SessionItem.patient_sk < keys.DIAGNOSIS_PREFIX,
            limit=limit, next_token=next_token, page_size=page_size,
        )

    def list_project_sessions(
        self, project_id: str, *, limit: int, next_token: str | None = None, page_size: int | None = None,
    ) -> SessionPage:
        """A project's sessions, newest ``updated_at`` first (Query on ProjectSessionsIndex).

        Raises:
            InvalidContinuationToken: ``next_token`` was not issued for this listing.
        """
        return _list_sessions(
            SessionItem.project_index, project_id, project_id, "project_pk", "project_sk",
            range_condition=None, limit=limit, next_token=next_token, page_size=page_size,
        )

    def list_messages(self, project_id: str, session_id: str, *, limit: int,
                      cursor: str | None = None) -> SessionMessagePage:
        """A page of the session's messages, oldest first (:mod:`.session_messages`: one Query)."""
        return list_session_messages(project_id, session_id, limit=limit, cursor=cursor)

    def patient_erased(self, project_id: str, patient_id: str) -> bool:
        """True if the patient's erasure record exists (docs/architecture.md, "Data governance")."""
        try:
            ErasureItem.get(project_id, keys.erasure_sk("patient", patient_id), attributes_to_get=["pk", "sk"])
        except DoesNotExist:
            return False
        return True

    # ---------------------------------------------------------------------- diagnoses
    def add_diagnosis(self, diagnosis: Diagnosis, session: SessionState, *, expected_version: int,
                      patient_refs: PatientRefs | None = None) -> None:
        """Store the diagnosis, the updated session item (``diagnosis_count`` + 1, the new
        reference in its facts) and, with ``patient_refs`` (the patient's references as read by
        :meth:`patient_refs`), the patient's references item with this diagnosis's reference
        merged in, in ONE TransactWriteItems. The transaction also checks that the session was
        not erased, so no reference to a diagnosis of an erased session is ever written.

        The references item is written under the version read (``patient_refs.version``; 0 =
        must not exist); its ``expires_at`` is no earlier than that of any diagnosis it references
        (:func:`.patient_refs.later_expiry`).

        Raises:
            AlreadyExists: this session already has a diagnosis with that id (409).
            SessionErased: the session was erased (404; nothing written).
            VersionConflict: the session or the patient's references changed since they were
                read, or a session a new references item names was erased since (re-read and retry).
            ItemTooLarge: the diagnosis or the session item is over its byte budget.
        """
        item = diagnosis_to_item(diagnosis)
        expires_at = self.chat.session_expiry(diagnosis.created_at)
        item.expires_at = expires_at
        check_size(item, DIAGNOSIS_ITEM_BUDGET_BYTES, "diagnosis")
        session_item = session_to_item(session)
        session_item.expires_at = expires_at
        session_item.version = expected_version
        check_size(session_item, SESSION_ITEM_BUDGET_BYTES, "session")
        checks = 1  # PynamoDB sends the condition checks first, then the puts, in the order added
        try:
            with transaction() as tx:
                check_not_erased(tx, session.project_id, session.session_id)  # (code 0)
                tx.save(item, condition=DiagnosisItem.sk.does_not_exist())  # (code ``checks``)
                tx.save(session_item)
                if patient_refs is not None:
                    updated = patient_refs.plus(diagnosis.ref()).model_copy(
                        update={"expires_at": later_expiry(patient_refs, expires_at)})
                    checks += add_patient_refs(tx, updated, updated_at=diagnosis.created_at,
                                               checked_sessions=[session.session_id])
        except TransactWriteError as exc:
            raise_session_write_error(exc, session.session_id, exists_at=checks,
                                      exists=AlreadyExists(f"diagnosis {diagnosis.diagnosis_id} already exists"))

    def patient_refs(self, project_id: str, patient_id: str) -> PatientRefs:
        """The patient's references item (strongly consistent, with the project record in ONE
        BatchGetItem). Without an item: an empty one when the project's diagnoses are all
        referenced, else (a project with diagnoses from before these items) one built from the
        diagnoses (a Query on PatientIndex, without erased sessions); both unsaved (``version == 0``)."""
        found = read_patient_refs(project_id, patient_id)
        return found if found is not None else refs_from_diagnoses(project_id, patient_id)

    def list_diagnoses(self, project_id: str, session_id: str) -> list[Diagnosis]:
        """Every diagnosis of a session in time order (Query paginated to the end)."""
        items = DiagnosisItem.query(
            keys.session_pk(project_id, session_id), DiagnosisItem.sk.startswith(keys.DIAGNOSIS_PREFIX)
        )
        return sorted((diagnosis_from_item(i) for i in items), key=lambda d: (d.created_at, d.diagnosis_id))

    def get_diagnosis(self, project_id: str, session_id: str, diagnosis_id: str) -> Diagnosis:
        """One diagnosis. Raises DiagnosisNotFound."""
        try:
            item = DiagnosisItem.get(keys.session_pk(project_id, session_id), keys.diagnosis_sk(diagnosis_id))
        except DoesNotExist:
            raise DiagnosisNotFound(f"unknown diagnosis {diagnosis_id}") from None
        return diagnosis_from_item(item)

    def patient_diagnoses(self, project_id: str, patient_id: str, *, diagnosis_id: str | None = None,
                          limit: int | None = None) -> list[Diagnosis]:
        """A patient's diagnoses across sessions, newest first (Query on PatientIndex,
        ``begins_with(patient_sk, "DIAG#")``), optionally only those with ``diagnosis_id``."""
        items = DiagnosisItem.patient_index.query(
            keys.patient_pk(project_id, patient_id),
            DiagnosisItem.patient_sk.startswith(keys.DIAGNOSIS_PREFIX),
            filter_condition=(DiagnosisItem.diagnosis_id == diagnosis_id) if diagnosis_id else None,
            scan_index_forward=False,
            limit=limit,
        )
        return [diagnosis_from_item(i) for i in items]

    def patient_diagnosis_refs(self, project_id: str, patient_id: str, *, limit: int) -> list[DiagnosisRef]:
        """References (ids, times, key symptoms) of the patient's newest ``limit`` diagnoses,
        newest first: ONE Query on PatientIndex (the fallback of a patient without a references
        item in a project not yet backfilled; :meth:`patient_refs` reads the item)."""
        return [d.ref() for d in self.patient_diagnoses(project_id, patient_id, limit=limit)]


# --------------------------------------------------------------------------------- listings
def _list_sessions(
    index: Any, project_id: str, partition: str, index_pk: str, index_sk: str, *, range_condition: Any,
    limit: int, next_token: str | None, page_size: int | None,
) -> SessionPage:
    """One page of an index listing: one Query of ``limit + 1`` items (the extra one says
    whether a next page exists)."""
    start = _decode_token(next_token, index_pk=index_pk, index_sk=index_sk, partition=partition,
                          project_id=project_id)
    items = list(index.query(
        partition,
        range_condition,
        scan_index_forward=False,
        limit=limit + 1,
        page_size=page_size or limit + 1,
        last_evaluated_key=start,
    ))
    more = len(items) > limit
    items = items[:limit]
    token = None
    if more and items:
        last = items[-1]
        token = _encode_token({
            "pk": last.pk, "sk": last.sk, index_pk: getattr(last, index_pk), index_sk: getattr(last, index_sk),
        })
    return SessionPage(sessions=[session_list_item_from_item(i) for i in items], next_token=token)


def _encode_token(key: dict[str, str]) -> str:
    raw = json.dumps({"v": 1, "k": key}, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_token(token: str | None, *, index_pk: str, index_sk: str, partition: str,
                  project_id: str) -> dict[str, dict[str, str]] | None:
    """The ExclusiveStartKey (wire format) a token stands for; None for the first page."""
    if token is None or token == "":
        return None
    bad = InvalidContinuationToken("next_token is not valid for this listing")
    if len(token) > _TOKEN_MAX_CHARS:
        raise bad
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
    except (ValueError, UnicodeError, binascii.Error):
        raise bad from None
    if not isinstance(data, dict) or data.get("v") != 1 or not isinstance(data.get("k"), dict):
        raise bad
    key = data["k"]
    if set(key) != {"pk", "sk", index_pk, index_sk} or not all(isinstance(v, str) for v in key.values()):
        raise bad
    if (
        key[index_pk] != partition
        or key["sk"] != keys.SESSION_SK
        or not key["pk"].startswith(f"{project_id}#")
        or not _SESSION_SORT_KEY.match(key[index_sk])
        or not key[index_sk].endswith("#" + key["pk"][len(project_id) + 1:])
        or any(utf8_len(v) > 512 for v in key.values())
    ):
        raise bad
    return {name: {"S": value} for name, value in key.items()}


__all__ = ["SessionsRepository"]
