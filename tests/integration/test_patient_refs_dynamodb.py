"""A patient's diagnosis references item on the tables of template.yaml (moto in-process): the
first turn of a patient's new session reads it with its one BatchGetItem (docs/architecture.md,
"Request path"), the item equals the newest diagnoses after concurrent writes, erasures and
removal, expires no earlier than its diagnoses, and a project stored before these items falls back
to the PatientIndex Query until it is backfilled."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from agent_memory.adapters.dynamo.admin import AdminRepository
from agent_memory.adapters.dynamo.erasure import ErasureRepository
from agent_memory.adapters.dynamo.export import ExportRepository
from agent_memory.adapters.dynamo.patient_refs_upkeep import PatientRefsRepository
from agent_memory.adapters.dynamo.removal import RemovalRepository
from agent_memory.adapters.dynamo.sessions import SessionsRepository
from agent_memory.chat.turn import ChatDeps
from agent_memory.consultation import sessions
from agent_memory.consultation.sessions import SessionsDeps
from agent_memory.domain.session_models import MAX_DIAGNOSIS_REFS, Diagnosis
from agent_memory.governance.erasure import GovernanceDeps, request_erasure
from agent_memory.governance.export import export_lines
from agent_memory.governance.removal import request_removal
from tests.fakes import ScriptedLLM
from tests.unit.chat_support import chat_llm, session_memory
from tests.unit.sessions_support import CLINIC, chat_deps, say, seed_clinic, sessions_deps

REFS_SK = "DIAGREFS"


@pytest.fixture
def srepo(aws: dict[str, str]) -> SessionsRepository:
    """The sessions repository on moto with the clinic project (created now: marked complete)."""
    repo = SessionsRepository()
    seed_clinic(repo)
    return repo


def _client() -> Any:
    import os

    return boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])


def _refs_item(aws: dict[str, str], patient_id: str, project_id: str = CLINIC) -> dict[str, Any] | None:
    return _client().get_item(TableName=aws["SessionsTable"], ConsistentRead=True, Key={
        "pk": {"S": f"{project_id}#PATIENT#{patient_id}"}, "sk": {"S": REFS_SK}}).get("Item")


def _stored_refs_item(aws: dict[str, str], patient_id: str) -> dict[str, Any]:
    item = _refs_item(aws, patient_id)
    assert item is not None, f"no references item of {patient_id}"
    return item


def _diagnoses_sent(deps: ChatDeps, call: int) -> list[str]:
    """The diagnosis ids the session memory of the ``call``-th chat request listed (the deps' LLM is
    the recorder of ``chat_llm``)."""
    llm = deps.llm
    assert isinstance(llm, ScriptedLLM)
    return _diagnosis_ids_in(session_memory(llm.requests[call]))


def _ref_ids(srepo: SessionsRepository, patient_id: str) -> list[str]:
    return [r.diagnosis_id for r in srepo.patient_refs(CLINIC, patient_id).refs]


def _visit(srepo: SessionsRepository, sdeps: SessionsDeps, patient_id: str, session_id: str,
           diagnosis_ids: list[str]) -> None:
    """A chat turn of the patient in ``session_id`` and its diagnoses."""
    say(chat_deps(srepo), "头痛、怕冷", session_id=session_id, patient_id=patient_id)
    for did in diagnosis_ids:
        sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id=session_id, user_id="doc",
                               report={"证型": "风寒"}, diagnosis_id=did)


def _diagnosis_ids_in(block: str) -> list[str]:
    return re.findall(r"^- (\S+) at ", block, flags=re.M)


class DynamoCalls:
    """The DynamoDB operations botocore sends (one per round trip) and their parameters."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @property
    def names(self) -> list[str]:
        return sorted(name for name, _ in self.calls)


@contextmanager
def counted() -> Iterator[DynamoCalls]:
    from botocore.client import BaseClient

    counter = DynamoCalls()
    original = BaseClient._make_api_call

    def counting(client: Any, operation: str, params: Any) -> Any:
        if client.meta.service_model.service_name == "dynamodb":
            counter.calls.append((operation, params))
        return original(client, operation, params)

    BaseClient._make_api_call = counting
    try:
        yield counter
    finally:
        BaseClient._make_api_call = original


def _new_visit(srepo: SessionsRepository, patient_id: str, session_id: str) -> tuple[ChatDeps, DynamoCalls]:
    """The first turn of ``patient_id``'s new session in a fresh container, counted."""
    deps = chat_deps(srepo, llm=chat_llm())
    with counted() as calls:
        say(deps, "还是头痛", session_id=session_id, patient_id=patient_id)
    return deps, calls


# ----------------------------------------------------------------- the first patient turn
def test_a_patients_first_turn_is_one_batch_read_and_one_transaction_with_the_newest_diagnoses(
    srepo: SessionsRepository,
) -> None:
    # Given pt-1 with 22 diagnoses over two earlier sessions (more than the 20 kept)
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-1", "v1", [f"dx-{i:02d}" for i in range(12)])
    _visit(srepo, sdeps, "pt-1", "v2", [f"dx-{i:02d}" for i in range(12, 22)])

    # When pt-1's new session takes its first turn
    deps, calls = _new_visit(srepo, "pt-1", "v3")

    # Then it cost one BatchGetItem and one TransactWriteItems, no Query
    assert calls.names == ["BatchGetItem", "TransactWriteItems"]
    # and the prompt's session block names exactly the 20 newest diagnoses, oldest first
    newest = [f"dx-{i:02d}" for i in range(2, 22)]
    assert _diagnoses_sent(deps, 0) == newest
    assert [d.ref().diagnosis_id for d in reversed(srepo.patient_diagnoses(CLINIC, "pt-1", limit=20))] == newest

    # and a second turn of that session in the same container does not read the item again
    with counted() as later:
        say(deps, "好些了", session_id="v3", patient_id="pt-1")
    assert later.names == ["BatchGetItem", "TransactWriteItems"]
    read_keys = [k["sk"]["S"] for _, p in later.calls if _ == "BatchGetItem"
                 for table in p["RequestItems"].values() for k in table["Keys"]]
    assert REFS_SK not in read_keys
    assert _diagnoses_sent(deps, 1) == newest


def test_a_new_patients_first_turn_costs_two_round_trips_and_lists_no_diagnosis(srepo: SessionsRepository) -> None:
    deps, calls = _new_visit(srepo, "pt-new", "first")
    assert calls.names == ["BatchGetItem", "TransactWriteItems"]
    assert _diagnoses_sent(deps, 0) == []


def test_a_session_created_for_a_patient_carries_the_references_item(srepo: SessionsRepository) -> None:
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-2", "v1", ["dx-a", "dx-b"])
    with counted() as calls:
        view = sessions.create_session(sdeps, project_id=CLINIC, user_id="doc", session_id="v2", patient_id="pt-2",
                                       session_type="consultation", name=None)
    assert [d["diagnosis_id"] for d in view.diagnoses] == ["dx-a", "dx-b"]
    assert "Query" not in calls.names


# ------------------------------------------------------------------------- concurrency
def test_two_diagnoses_of_one_patient_written_at_once_from_two_sessions_are_both_referenced(
    srepo: SessionsRepository, aws: dict[str, str],
) -> None:
    # Given pt-3 with two open sessions and an earlier diagnosis
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-3", "a", ["dx-0"])
    _visit(srepo, sdeps, "pt-3", "b", [])

    # When session b's diagnosis is written between session a's read of the references and a's write
    class Racing(SessionsRepository):
        raced = 0
        conflicts = 0

        def add_diagnosis(self, diagnosis: Diagnosis, session: Any, **kwargs: Any) -> None:
            if not Racing.raced:
                Racing.raced += 1
                sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="b", user_id="doc", report={},
                                       diagnosis_id="dx-b")
            try:
                super().add_diagnosis(diagnosis, session, **kwargs)
            except Exception:
                Racing.conflicts += 1
                raise

    racing = SessionsDeps(store=Racing(), memory=sdeps.memory, config=sdeps.config, now=sdeps.now)
    sessions.add_diagnosis(racing, project_id=CLINIC, session_id="a", user_id="doc", report={}, diagnosis_id="dx-a")

    # Then a's first write was refused (the item changed), retried, and both references are kept
    assert Racing.conflicts == 1
    assert sorted(_ref_ids(srepo, "pt-3")) == ["dx-0", "dx-a", "dx-b"]
    assert int(_stored_refs_item(aws, "pt-3")["version"]["N"]) == 3


def test_two_first_diagnoses_of_a_new_patient_create_one_item_holding_both(srepo: SessionsRepository) -> None:
    # Given pt-4 (no diagnosis yet, so no item) with two sessions
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-4", "a", [])
    _visit(srepo, sdeps, "pt-4", "b", [])
    calls: list[int] = []

    class Racing(SessionsRepository):
        def add_diagnosis(self, diagnosis: Diagnosis, session: Any, **kwargs: Any) -> None:
            calls.append(kwargs["patient_refs"].version)
            if len(calls) == 1:  # both read "no item": b creates it first
                sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="b", user_id="doc", report={},
                                       diagnosis_id="dx-b")
            super().add_diagnosis(diagnosis, session, **kwargs)

    racing = SessionsDeps(store=Racing(), memory=sdeps.memory, config=sdeps.config, now=sdeps.now)
    sessions.add_diagnosis(racing, project_id=CLINIC, session_id="a", user_id="doc", report={}, diagnosis_id="dx-a")

    # Then a's creation was refused (the item exists now) and its retry updated b's item
    assert calls == [0, 1]
    assert sorted(_ref_ids(srepo, "pt-4")) == ["dx-a", "dx-b"]


# ----------------------------------------------------------------------------- erasure
def _governance() -> GovernanceDeps:
    return GovernanceDeps(admin=AdminRepository(), erasures=ErasureRepository(), patient_refs=PatientRefsRepository(),
                          exports=ExportRepository(), removals=RemovalRepository(), jobs=None,
                          clock=lambda: datetime.now(UTC))


def test_erasing_a_session_removes_its_references_and_refills_older_ones(srepo: SessionsRepository) -> None:
    # Given pt-5's old session (3 diagnoses) and a later one with 20 (the item holds those 20)
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-5", "old", ["dx-old-0", "dx-old-1", "dx-old-2"])
    later = [f"dx-new-{i:02d}" for i in range(MAX_DIAGNOSIS_REFS)]
    _visit(srepo, sdeps, "pt-5", "new", later)
    assert _ref_ids(srepo, "pt-5") == later

    # When the later session is erased
    record = request_erasure(_governance(), project_id=CLINIC, kind="session", target_id="new", actor="admin")

    # Then the item holds the old session's diagnoses (the newest left), and the record counts it
    assert record.status == "done" and record.counts["patient_refs"] == MAX_DIAGNOSIS_REFS
    assert _ref_ids(srepo, "pt-5") == ["dx-old-0", "dx-old-1", "dx-old-2"]
    # and the next first turn of pt-5 names no erased diagnosis
    deps, calls = _new_visit(srepo, "pt-5", "next")
    assert _diagnoses_sent(deps, 0) == ["dx-old-0", "dx-old-1", "dx-old-2"]
    assert calls.names == ["BatchGetItem", "TransactWriteItems"]


def test_erasing_a_patient_deletes_their_references_item(srepo: SessionsRepository, aws: dict[str, str]) -> None:
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-6", "a", ["dx-a"])
    _visit(srepo, sdeps, "pt-6", "b", ["dx-b"])
    _visit(srepo, sdeps, "pt-7", "c", ["dx-c"])
    assert _refs_item(aws, "pt-6") is not None

    record = request_erasure(_governance(), project_id=CLINIC, kind="patient", target_id="pt-6", actor="admin")

    assert record.status == "done" and record.counts["patient_refs"] == 2
    assert _refs_item(aws, "pt-6") is None
    assert _ref_ids(srepo, "pt-7") == ["dx-c"]  # another patient's item is untouched
    deps, _ = _new_visit(srepo, "pt-6", "after")
    assert _diagnoses_sent(deps, 0) == []


def test_no_diagnosis_can_be_added_to_a_session_once_its_erasure_started(srepo: SessionsRepository) -> None:
    from agent_memory.domain.errors import SessionNotFound
    from agent_memory.domain.governance import ErasureRecord

    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-8", "a", ["dx-a"])
    # Given the erasure record of session a is written (its items are not deleted yet)
    ErasureRepository().start_erasure(ErasureRecord(project_id=CLINIC, kind="session", target_id="a",
                                                       actor="admin", requested_at=datetime.now(UTC)))
    # When a diagnosis is added to it, Then it is refused and the references are unchanged
    with pytest.raises(SessionNotFound):
        sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="a", user_id="doc", report={},
                               diagnosis_id="dx-late")
    assert _ref_ids(srepo, "pt-8") == ["dx-a"]


# ---------------------------------------------------------------------- removal, export
def test_removing_the_project_deletes_the_references_items_and_the_export_leaves_them_out(
    srepo: SessionsRepository, aws: dict[str, str],
) -> None:
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-9", "a", ["dx-a"])
    exported = list(export_lines(_governance(), project_id=CLINIC, include_flow_log=False))
    assert not any(line["item"].get("sk") == REFS_SK for line in exported)
    project_line = next(line for line in exported if line["kind"] == "project")
    assert "patient_refs_since" not in project_line["item"]

    record = request_removal(_governance(), project_id=CLINIC, confirm=CLINIC, actor="ops")

    assert record.status == "done" and record.counts["patient_refs"] == 1
    assert _refs_item(aws, "pt-9") is None


# ------------------------------------------------------------------------------ retention
def test_the_item_expires_no_earlier_than_any_diagnosis_it_references(aws: dict[str, str]) -> None:
    # Given sessions kept 30 days, then 10 days (the retention was shortened)
    repo = SessionsRepository(session_retention_days=30)
    seed_clinic(repo)
    _visit(repo, sessions_deps(repo), "pt-10", "a", ["dx-a"])
    first = int(_stored_refs_item(aws, "pt-10")["expires_at"]["N"])
    diagnosis = _client().get_item(TableName=aws["SessionsTable"], Key={
        "pk": {"S": f"{CLINIC}#a"}, "sk": {"S": "DIAG#dx-a"}})["Item"]
    assert first == int(diagnosis["expires_at"]["N"])

    shorter = SessionsRepository(session_retention_days=10)
    sessions.add_diagnosis(sessions_deps(shorter), project_id=CLINIC, session_id="a", user_id="doc", report={},
                           diagnosis_id="dx-b")

    # Then the item still expires with the 30-day diagnosis, not 10 days after the later one
    assert int(_stored_refs_item(aws, "pt-10")["expires_at"]["N"]) == first
    assert _ref_ids(repo, "pt-10") == ["dx-a", "dx-b"]


# ---------------------------------------------------- a project from before the items: fallback
def _as_before_the_items(aws: dict[str, str], patient_id: str) -> None:
    """The project record without its mark and the patient without the item: as stored before."""
    client = _client()
    client.update_item(TableName=aws["MemoryTable"], Key={"pk": {"S": CLINIC}, "sk": {"S": "PROJECT"}},
                       UpdateExpression="REMOVE patient_refs_since")
    client.delete_item(TableName=aws["SessionsTable"], Key={
        "pk": {"S": f"{CLINIC}#PATIENT#{patient_id}"}, "sk": {"S": REFS_SK}})


def test_a_patient_from_before_the_items_is_queried_until_the_project_is_backfilled(
    srepo: SessionsRepository, aws: dict[str, str],
) -> None:
    # Given pt-11's diagnoses stored before the references items existed
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-11", "a", ["dx-a", "dx-b"])
    _as_before_the_items(aws, "pt-11")

    # When pt-11's new session takes its first turn, Then one Query found the diagnoses (3 round trips)
    deps, calls = _new_visit(srepo, "pt-11", "b")
    assert calls.names == ["BatchGetItem", "Query", "TransactWriteItems"]
    assert _diagnoses_sent(deps, 0) == ["dx-a", "dx-b"]
    # and a new patient of that project is queried too (nothing says the item's absence means none)
    _, calls = _new_visit(srepo, "pt-12", "c")
    assert calls.names == ["BatchGetItem", "Query", "TransactWriteItems"]

    # When the project is backfilled
    written = PatientRefsRepository().backfill_patient_refs(CLINIC, now=datetime.now(UTC))

    # Then pt-11 has the item, the project is marked, and first turns cost two round trips again
    assert written == 1 and _ref_ids(srepo, "pt-11") == ["dx-a", "dx-b"]
    deps, calls = _new_visit(srepo, "pt-11", "d")
    assert calls.names == ["BatchGetItem", "TransactWriteItems"]
    assert _diagnoses_sent(deps, 0) == ["dx-a", "dx-b"]
    _, calls = _new_visit(srepo, "pt-13", "e")
    assert calls.names == ["BatchGetItem", "TransactWriteItems"]
    # and a second backfill finds the project marked and writes nothing
    assert PatientRefsRepository().backfill_patient_refs(CLINIC, now=datetime.now(UTC)) == 0


def test_a_diagnosis_of_a_patient_from_before_the_items_builds_the_item_from_all_their_diagnoses(
    srepo: SessionsRepository, aws: dict[str, str],
) -> None:
    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-14", "a", ["dx-a"])
    _as_before_the_items(aws, "pt-14")
    sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="a", user_id="doc", report={}, diagnosis_id="dx-b")
    assert _ref_ids(srepo, "pt-14") == ["dx-a", "dx-b"]


def test_updating_the_project_record_keeps_its_mark(srepo: SessionsRepository, aws: dict[str, str]) -> None:
    from agent_memory.adapters.dynamo.members import MemberRepository

    # Given the clinic project (marked at its creation)
    project = srepo.get_project(CLINIC)
    # When an admin renames it and the seed replaces its record
    MemberRepository().update_project(project.model_copy(update={"name": "改名"}))
    srepo.projects.put_project(project.model_copy(update={"name": "改名", "time_zone": "Europe/Berlin"}))
    # Then the record holds both changes and still its mark
    item = _client().get_item(TableName=aws["MemoryTable"], Key={"pk": {"S": CLINIC}, "sk": {"S": "PROJECT"}})["Item"]
    assert "patient_refs_since" in item
    assert (srepo.get_project(CLINIC).name, item["time_zone"]["S"]) == ("改名", "Europe/Berlin")


def test_the_backfill_leaves_out_sessions_being_erased(srepo: SessionsRepository, aws: dict[str, str]) -> None:
    from agent_memory.domain.governance import ErasureRecord

    sdeps = sessions_deps(srepo)
    _visit(srepo, sdeps, "pt-15", "a", ["dx-a"])
    _visit(srepo, sdeps, "pt-15", "b", ["dx-b"])
    _as_before_the_items(aws, "pt-15")
    # Given pt-15's diagnoses from before the items, and an erasure of session b just started
    ErasureRepository().start_erasure(ErasureRecord(project_id=CLINIC, kind="session", target_id="b",
                                                       actor="admin", requested_at=datetime.now(UTC)))
    # When the project is backfilled, Then the item leaves out the diagnosis of the session being erased
    PatientRefsRepository().backfill_patient_refs(CLINIC, now=datetime.now(UTC))
    assert _ref_ids(srepo, "pt-15") == ["dx-a"]
