"""Data access of the session layer (issue 3): session creation and listings, diagnoses,
message ranges. PynamoDB only; the models are those of :mod:`agent_memory.adapters.dynamo.tables`.

Key layout in SessionsTable (every key starts with the project id; case B08):

| item | pk | sk | PatientIndex (``patient_pk`` / ``patient_sk``) | ProjectSessionsIndex |
|---|---|---|---|---|
| session | ``{project}#{session}`` | ``SESSION`` | ``{project}#{patient}`` / ``{updated_at}#{session}`` | ``{project}`` / ``{updated_at}#{session}`` |
| message | ``{project}#{session}`` | ``MSG#{message_id}`` | - | - |
| diagnosis | ``{project}#{session}`` | ``DIAG#{diagnosis_id}`` | ``{project}#{patient}`` / ``DIAG#{created_at}#{diagnosis_id}`` | - |

A session's ``patient_sk`` starts with a digit (an ISO time), a diagnosis's with ``DIAG#``, so
one index serves both "a patient's sessions" (``patient_sk < "DIAG#"``) and "a patient's
diagnoses" (``begins_with(patient_sk, "DIAG#")``) without mixing them.

Listings always Query DynamoDB (never a container cache; seed 002 section 4.2), newest first,
and page with an opaque token: URL-safe base64 of the LastEvaluatedKey as JSON, checked on the
way back in (exact attributes, this listing's partition, well-formed sort key), so a tampered or
foreign token is rejected (400) instead of reading another partition.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable

from pynamodb.exceptions import DoesNotExist, PutError, TransactWriteError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo.repository import (
    SESSION_ITEM_BUDGET_BYTES,
    DynamoRepository,
    _iso,
    _message,
    _session_item,
    session_pk,
)
from agent_memory.adapters.dynamo.tables import DiagnosisItem, MessageItem, SessionItem
from agent_memory.domain.errors import (
    AlreadyExists,
    DiagnosisNotFound,
    InvalidContinuationToken,
    ItemTooLarge,
    VersionConflict,
)
from agent_memory.domain.models import MessageRecord, SessionState
from agent_memory.domain.session_models import (
    Diagnosis,
    DiagnosisRef,
    SessionListItem,
    SessionPage,
    report_problem,
)
from agent_memory.domain.text import dynamodb_item_size, utf8_len
from agent_memory.observability import logger

#: Largest stored diagnosis item (report + snapshot), far under DynamoDB's 400 KB.
DIAGNOSIS_ITEM_BUDGET_BYTES = 300_000
#: The only key of the report shown for a stored report that cannot be read back (too deep).
UNREADABLE_REPORT_KEY = "_unreadable_report"
#: Sort keys of sessions in both indexes: ``{ISO time}#{session_id}``.
_SESSION_SORT_KEY = re.compile(r"^\d{4}-\d{2}-\d{2}T[0-9:.]+Z#[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_TOKEN_MAX_CHARS = 2048


class SessionsRepository(DynamoRepository):
    """The chat repository plus the session-layer reads and writes."""

    # ------------------------------------------------------------- sessions
    def create_session(self, session: SessionState) -> SessionState:
        """Store a new session item (version 1).

        Raises:
            AlreadyExists: a session with this id exists in the project (409).
        """
        item = _session_item(session)
        try:
            item.save(condition=SessionItem.pk.does_not_exist())
        except PutError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
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
        partition = f"{project_id}#{patient_id}"
        start = _decode_token(next_token, index_pk="patient_pk", index_sk="patient_sk", partition=partition,
                              project_id=project_id)
        results = SessionItem.patient_index.query(
            partition,
            SessionItem.patient_sk < "DIAG#",
            scan_index_forward=False,
            limit=limit + 1,
            page_size=page_size or limit + 1,
            last_evaluated_key=start,
        )
        return _page(results, limit, index_pk="patient_pk", index_sk="patient_sk")

    def list_project_sessions(
        self, project_id: str, *, limit: int, next_token: str | None = None, page_size: int | None = None,
    ) -> SessionPage:
        """A project's sessions, newest ``updated_at`` first (Query on ProjectSessionsIndex).

        Raises:
            InvalidContinuationToken: ``next_token`` was not issued for this listing.
        """
        start = _decode_token(next_token, index_pk="project_pk", index_sk="project_sk", partition=project_id,
                              project_id=project_id)
        results = SessionItem.project_index.query(
            project_id,
            scan_index_forward=False,
            limit=limit + 1,
            page_size=page_size or limit + 1,
            last_evaluated_key=start,
        )
        return _page(results, limit, index_pk="project_pk", index_sk="project_sk")

    # ------------------------------------------------------------ messages
    def messages_between(
        self, project_id: str, session_id: str, *, after_id: str | None, before_id: str, limit: int = 50,
    ) -> list[MessageRecord]:
        """The newest ``limit`` messages with ``after_id < id < before_id`` (ids sort by time),
        oldest first. One Query (descending, paginated to ``limit``)."""
        low = f"MSG#{after_id}" if after_id else "MSG#"
        items = MessageItem.query(
            session_pk(project_id, session_id),
            MessageItem.sk.between(low, f"MSG#{before_id}"),
            scan_index_forward=False,
            limit=limit + 2,
        )
        out = [_message(i) for i in items if i.message_id not in (after_id, before_id)]
        return list(reversed(out[:limit]))

    # ----------------------------------------------------------- diagnoses
    def add_diagnosis(self, diagnosis: Diagnosis, session: SessionState, *, expected_version: int) -> None:
        """Store the diagnosis and the updated session item (``diagnosis_count`` + 1, the new
        reference in its facts) in ONE TransactWriteItems.

        Raises:
            AlreadyExists: this session already has a diagnosis with that id (409).
            VersionConflict: the session changed since it was read (re-read and retry).
            ItemTooLarge: the diagnosis or the session item is over its byte budget.
        """
        pk = session_pk(diagnosis.project_id, diagnosis.session_id)
        item = DiagnosisItem(
            pk,
            f"DIAG#{diagnosis.diagnosis_id}",
            project_id=diagnosis.project_id,
            session_id=diagnosis.session_id,
            diagnosis_id=diagnosis.diagnosis_id,
            patient_id=diagnosis.patient_id,
            created_at=diagnosis.created_at,
            created_by=diagnosis.created_by,
            report=diagnosis.report,
            symptoms_snapshot=diagnosis.symptoms_snapshot,
            patient_pk=f"{diagnosis.project_id}#{diagnosis.patient_id}" if diagnosis.patient_id else None,
            patient_sk=(f"DIAG#{_iso(diagnosis.created_at)}#{diagnosis.diagnosis_id}"
                        if diagnosis.patient_id else None),
        )
        size = dynamodb_item_size(item.serialize())
        if size > DIAGNOSIS_ITEM_BUDGET_BYTES:
            raise ItemTooLarge(f"diagnosis item would be {size} bytes (budget {DIAGNOSIS_ITEM_BUDGET_BYTES})")
        session_item = _session_item(session)
        session_item.version = expected_version
        ssize = dynamodb_item_size(session_item.serialize())
        if ssize > SESSION_ITEM_BUDGET_BYTES:
            raise ItemTooLarge(f"session item would be {ssize} bytes (budget {SESSION_ITEM_BUDGET_BYTES})")
        try:
            with TransactWrite(connection=self._connection()) as tx:
                tx.save(item, condition=DiagnosisItem.sk.does_not_exist())
                tx.save(session_item)
        except TransactWriteError as exc:
            reasons = [r.code if r is not None else None for r in (exc.cancellation_reasons or [])]
            if reasons and reasons[0] == "ConditionalCheckFailed":
                raise AlreadyExists(f"diagnosis {diagnosis.diagnosis_id} already exists") from None
            if "ConditionalCheckFailed" in reasons or "TransactionConflict" in reasons:
                raise VersionConflict("session changed concurrently", current_version=None) from None
            raise

    def list_diagnoses(self, project_id: str, session_id: str) -> list[Diagnosis]:
        """Every diagnosis of a session in time order (Query paginated to the end)."""
        items = DiagnosisItem.query(session_pk(project_id, session_id), DiagnosisItem.sk.startswith("DIAG#"))
        return sorted((_diagnosis(i) for i in items), key=lambda d: (d.created_at, d.diagnosis_id))

    def get_diagnosis(self, project_id: str, session_id: str, diagnosis_id: str) -> Diagnosis:
        """One diagnosis. Raises DiagnosisNotFound."""
        try:
            return _diagnosis(DiagnosisItem.get(session_pk(project_id, session_id), f"DIAG#{diagnosis_id}"))
        except DoesNotExist:
            raise DiagnosisNotFound(f"unknown diagnosis {diagnosis_id}") from None

    def patient_diagnoses(self, project_id: str, patient_id: str, *, diagnosis_id: str | None = None,
                          limit: int | None = None) -> list[Diagnosis]:
        """A patient's diagnoses across sessions, newest first (Query on PatientIndex,
        ``begins_with(patient_sk, "DIAG#")``), optionally only those with ``diagnosis_id``."""
        items = DiagnosisItem.patient_index.query(
            f"{project_id}#{patient_id}",
            DiagnosisItem.patient_sk.startswith("DIAG#"),
            filter_condition=(DiagnosisItem.diagnosis_id == diagnosis_id) if diagnosis_id else None,
            scan_index_forward=False,
            limit=limit,
        )
        return [_diagnosis(i) for i in items]

    def patient_diagnosis_refs(self, project_id: str, patient_id: str, *, limit: int) -> list[DiagnosisRef]:
        """References (ids, times, key symptoms) of the patient's newest ``limit`` diagnoses."""
        return [d.ref() for d in self.patient_diagnoses(project_id, patient_id, limit=limit)]


# ---------------------------------------------------------------- helpers
def _page(results: Iterable[SessionItem], limit: int, *, index_pk: str, index_sk: str) -> SessionPage:
    items = list(results)
    more = len(items) > limit
    items = items[:limit]
    token = None
    if more and items:
        last = items[-1]
        token = _encode_token({
            "pk": last.pk, "sk": last.sk, index_pk: getattr(last, index_pk), index_sk: getattr(last, index_sk),
        })
    return SessionPage(sessions=[_list_item(i) for i in items], next_token=token)


def _list_item(item: SessionItem) -> SessionListItem:
    return SessionListItem(
        session_id=item.session_id,
        patient_id=item.patient_id,
        type=item.type,  # type: ignore[arg-type]
        name=item.name,
        created_at=item.created_at,
        updated_at=item.updated_at,
        message_count=int(item.message_count or 0),
        diagnosis_count=int(item.diagnosis_count or 0),
    )


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
        or key["sk"] != "SESSION"
        or not key["pk"].startswith(f"{project_id}#")
        or not _SESSION_SORT_KEY.match(key[index_sk])
        or not key[index_sk].endswith("#" + key["pk"][len(project_id) + 1:])
        or any(utf8_len(v) > 512 for v in key.values())
    ):
        raise bad
    return {name: {"S": value} for name, value in key.items()}


def _diagnosis(item: DiagnosisItem) -> Diagnosis:
    report = item.report or {}
    problem = report_problem(report)
    if problem is not None:
        # Stored before reports were checked: show a placeholder rather than fail every
        # read of the session's diagnoses (the API could not serialise it).
        logger.warning("stored diagnosis report unreadable",
                       extra={"project_id": item.project_id, "diagnosis_id": item.diagnosis_id})
        report = {UNREADABLE_REPORT_KEY: problem}
    return Diagnosis(
        project_id=item.project_id,
        session_id=item.session_id,
        diagnosis_id=item.diagnosis_id,
        patient_id=item.patient_id,
        created_at=item.created_at,
        created_by=item.created_by,
        report=report,
        symptoms_snapshot=list(item.symptoms_snapshot or []),
    )


__all__ = ["DIAGNOSIS_ITEM_BUDGET_BYTES", "UNREADABLE_REPORT_KEY", "SessionsRepository"]
