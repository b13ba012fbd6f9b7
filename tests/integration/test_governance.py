"""Erasure and export over HTTP through the local stack (moto, the real handlers).

The acceptance: a patient with two sessions (chat turns, one with an Idempotency-Key, a
transcript import, diagnoses) is erased; then EVERY table of the stack is scanned: nothing but
the erasure's audit record holds the patient's id or any of their message text, and the other
patient's items are exactly as before. Also: roles, unknown targets, idempotence, reads after
erasure, references in hot memory and reports, a turn racing an erasure, the job path, and the
export's round trip into an empty stack.
"""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest
import requests

from agent_memory.adapters.dynamo.tables import HotMemoryItem, WeeklyReportItem
from agent_memory.domain.models import Project
from infra.local.functions import CONTAINER_HOOK_ENV
from infra.local.stack import LocalStack
from tests.support.auth import bearer

ERASE_INLINE_UP_TO_TWO = "tests.support.container_hooks:erase_inline_up_to_two_items"


def _uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def project(local_stack: LocalStack) -> str:
    """A fresh project (Asia/Shanghai) per test."""
    project_id = _uid("gov")
    local_stack.repo.projects.put_project(Project(project_id=project_id, name=project_id, time_zone="Asia/Shanghai",
                                         kind="clinic", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    return project_id


class Client:
    def __init__(self, stack: LocalStack, project_id: str, role: str = "admin", user: str = "gov-admin") -> None:
        self.base = f"{stack.base_url}/v1/projects/{project_id}"
        self.headers = bearer(f"{project_id}:{role}", user)

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
             **params: Any) -> requests.Response:
        return requests.request(method, self.base + path, json=body, params=params or None,
                                headers={**self.headers, **(headers or {})}, timeout=60)


def _scan_all(stack: LocalStack) -> dict[str, list[dict[str, Any]]]:
    """Every item of every table of the stack (raw DynamoDB JSON)."""
    client = stack.aws_client("dynamodb")
    out: dict[str, list[dict[str, Any]]] = {}
    for logical_id, table in stack.table_names.items():
        items: list[dict[str, Any]] = []
        for page in client.get_paginator("scan").paginate(TableName=table):
            items.extend(page["Items"])
        out[logical_id] = items
    return out


def _holding(tables: dict[str, list[dict[str, Any]]], needles: list[str]) -> list[tuple[str, str]]:
    """(table, item keys) of every item whose JSON contains one of the needles."""
    found = []
    for table, items in tables.items():
        for item in items:
            text = json.dumps(item, ensure_ascii=False)
            if any(n in text for n in needles):
                found.append((table, json.dumps({k: item[k] for k in item if k in ("pk", "sk", "id")})))
    return found


def _items_with(tables: dict[str, list[dict[str, Any]]], needle: str) -> list[str]:
    """Every item (as sorted JSON) whose JSON contains ``needle``, sorted."""
    every = (item for items in tables.values() for item in items)
    return sorted(json.dumps(i, sort_keys=True) for i in every if needle in json.dumps(i, ensure_ascii=False))


def _consult(client: Client, patient: str, tag: str, *, key: str | None = None) -> tuple[str, list[str]]:
    """A session of ``patient``: two chat turns (one with an Idempotency-Key), a transcript
    import and a diagnosis. Returns the session id and the texts written."""
    sid = _uid("s")
    texts = [f"{tag} 头痛三天了 first", f"{tag} 还有点发烧 second", f"{tag} transcript patient line",
             f"{tag} transcript doctor line"]
    r = client.call("POST", f"/sessions/{sid}/messages", {"content": texts[0], "patient_id": patient},
                    headers={"Idempotency-Key": key} if key else None)
    assert r.status_code == 200, r.text
    assert client.call("POST", f"/sessions/{sid}/messages", {"content": texts[1]}).status_code == 200
    r = client.call("POST", f"/sessions/{sid}/transcript", {"turns": [
        {"role": "patient", "content": texts[2]}, {"role": "doctor", "content": texts[3]}]})
    assert r.status_code == 200, r.text
    r = client.call("POST", f"/sessions/{sid}/diagnoses", {"report": {"finding": f"{tag} diagnosis text"}})
    assert r.status_code == 201, r.text
    return sid, [*texts, f"{tag} diagnosis text"]


def test_erasing_a_patient_leaves_no_item_with_their_id_or_text_and_touches_no_one_else(
    local_stack: LocalStack, project: str,
) -> None:
    admin = Client(local_stack, project)
    patient, other = _uid("PTA"), _uid("PTB")
    tag_a, tag_b = uuid.uuid4().hex[:10], uuid.uuid4().hex[:10]
    # Given a patient with two sessions (messages, a cached reply, a transcript, diagnoses) ...
    s1, texts1 = _consult(admin, patient, tag_a, key=f"k-{tag_a}")
    s2, texts2 = _consult(admin, patient, tag_a + "x")
    # ... and another patient
    _, _ = _consult(admin, other, tag_b, key=f"k-{tag_b}")
    before = _scan_all(local_stack)
    assert _holding(before, [tag_a]), "the patient's text is stored before the erasure"
    cached_before = {i["id"]["S"] for i in before["IdempotencyTable"] if i["id"]["S"].startswith("chat-turn#")}
    assert len(cached_before) >= 2  # one cached reply of each patient
    other_items = _items_with(before, tag_b)

    # When an admin erases the patient
    r = admin.call("DELETE", f"/patients/{patient}")

    # Then it is done inline, and no item of any table holds their id or text but the audit record
    assert r.status_code == 204, r.text
    after = _scan_all(local_stack)
    leftovers = _holding(after, [tag_a, patient])
    assert leftovers == [("MemoryTable", json.dumps({"pk": {"S": project}, "sk": {"S": f"ERASURE#patient#{patient}"}}))]
    assert {table for table, _ in _holding(after, [f"{project}#{s1}", f"{project}#{s2}"])} == set()
    assert not any(texts1[0] in json.dumps(i, ensure_ascii=False) for i in after["FlowLogTable"])
    # and exactly one cached reply went: the patient's (the other patient's stays)
    cached_after = {i["id"]["S"] for i in after["IdempotencyTable"] if i["id"]["S"].startswith("chat-turn#")}
    assert len(cached_before - cached_after) == 1 and cached_after < cached_before
    # and the other patient's items are exactly as they were
    assert _items_with(after, tag_b) == other_items
    # and the audit record says who, what and how many, without content
    record = admin.call("GET", f"/patients/{patient}/erasure").json()
    assert record["actor"] == "gov-admin" and record["kind"] == "patient" and record["status"] == "done"
    assert record["counts"]["session"] == 2 and record["counts"]["diagnosis"] == 2
    assert record["counts"]["message"] == 12 and record["counts"]["flow_log"] == 12
    assert record["counts"]["idempotency"] == 1
    assert not any(t in json.dumps(record, ensure_ascii=False) for t in texts1 + texts2)


def test_erasure_is_idempotent_and_erased_targets_read_as_not_found(local_stack: LocalStack, project: str) -> None:
    admin = Client(local_stack, project)
    patient = _uid("PT")
    sid, _ = _consult(admin, patient, uuid.uuid4().hex[:10])
    assert admin.call("DELETE", f"/patients/{patient}").status_code == 204
    # A second call changes nothing and answers 204 again (never 500)
    assert admin.call("DELETE", f"/patients/{patient}").status_code == 204
    assert admin.call("DELETE", f"/sessions/{sid}").status_code == 204
    # Reads of the erased patient and session answer 404
    assert admin.call("GET", f"/sessions/{sid}").status_code == 404
    assert admin.call("GET", f"/patients/{patient}/sessions").status_code == 404
    # and creating a session with the erased id is refused too
    assert admin.call("POST", "/sessions", {"session_id": sid}).status_code == 404
    # and a write to the erased session is refused, with nothing written
    r = admin.call("POST", f"/sessions/{sid}/messages", {"content": "after the erasure"})
    assert r.status_code == 404, r.text
    assert not _holding(_scan_all(local_stack), ["after the erasure"])


def test_erasure_answers_404_for_unknown_targets_and_403_to_members_and_other_projects(
    local_stack: LocalStack, project: str,
) -> None:
    admin = Client(local_stack, project)
    patient = _uid("PT")
    sid, _ = _consult(admin, patient, uuid.uuid4().hex[:10])
    assert admin.call("DELETE", f"/patients/{_uid('nobody')}").status_code == 404
    assert admin.call("DELETE", f"/sessions/{_uid('nosession')}").status_code == 404
    member = Client(local_stack, project, role="member", user="gov-member")
    assert member.call("DELETE", f"/patients/{patient}").status_code == 403
    assert member.call("DELETE", f"/sessions/{sid}").status_code == 403
    assert member.call("GET", "/export").status_code == 403
    # An admin of another project gets 403 for this project's patient, whether it exists or not
    stranger = Client(local_stack, _uid("elsewhere"), user="gov-stranger")
    stranger.base = admin.base
    assert stranger.call("DELETE", f"/patients/{patient}").status_code == 403
    assert stranger.call("DELETE", f"/patients/{_uid('nobody')}").status_code == 403
    # and nothing was erased
    assert admin.call("GET", f"/sessions/{sid}").status_code == 200


def test_erasure_removes_evidence_references_and_sends_lines_naming_the_patient_to_review(
    local_stack: LocalStack, project: str,
) -> None:
    admin = Client(local_stack, project)
    patient = _uid("PT")
    sid, _ = _consult(admin, patient, uuid.uuid4().hex[:10])
    message_ids = [m["message_id"] for m in admin.call("GET", f"/sessions/{sid}").json()["window"]]
    local_stack.repo  # noqa: B018 - binds the models to the stack's tables
    now = datetime(2026, 3, 10, tzinfo=UTC)
    line = {"section": "Active Context", "source": "distilled", "created_at": now.isoformat(),
            "created_by": "distiller"}
    HotMemoryItem(project, "HOT", lines=[
        {**line, "line_id": "l-keep", "text": "enrolment is slow", "evidence": [message_ids[0], "m-other"]},
        {**line, "line_id": "l-names", "text": f"{patient} needs a follow-up call", "evidence": [message_ids[0]]},
    ], dismissed_evidence=[message_ids[-1], "m-dismissed"]).save()
    WeeklyReportItem(project, "REPORT#2026-W10", iso_week="2026-W10", summary=f"Week: {patient} reported fever.",
                     created_at=now, evidence=[message_ids[0], "m-other"]).save()

    assert admin.call("DELETE", f"/patients/{patient}").status_code == 204

    memory = admin.call("GET", "/memory").json()
    lines = {ln["line_id"]: ln for ln in memory["lines"]}
    assert set(lines) == {"l-keep"} and lines["l-keep"]["evidence"] == ["m-other"]
    # the ids of the erased messages leave the record of dismissed statements too
    assert local_stack.repo.projects.load_hot_memory(project).dismissed_evidence == ["m-dismissed"]
    review = admin.call("GET", "/memory/review").json()
    items = review["items"] if isinstance(review, dict) else review
    queued = [i for i in items if i["reason"] == "names_erased_patient"]
    assert len(queued) == 1 and patient not in queued[0]["text"] and "[erased]" in queued[0]["text"]
    report = admin.call("GET", "/reports").json()
    reports = report["reports"] if isinstance(report, dict) and "reports" in report else report
    text = json.dumps(reports, ensure_ascii=False)
    assert patient not in text and message_ids[0] not in text and "[erased] reported fever" in text
    assert _holding(_scan_all(local_stack), [patient]) == [
        ("MemoryTable", json.dumps({"pk": {"S": project}, "sk": {"S": f"ERASURE#patient#{patient}"}}))]


def test_a_turn_racing_an_erasure_leaves_no_orphan_items(local_stack: LocalStack, project: str) -> None:
    admin = Client(local_stack, project)
    sid = _uid("s")
    tag = uuid.uuid4().hex[:10]
    assert admin.call("POST", f"/sessions/{sid}/messages", {"content": f"{tag} start"}).status_code == 200

    # When turns on the session run while it is erased
    def turn(i: int) -> int:
        return admin.call("POST", f"/sessions/{sid}/messages", {"content": f"{tag} turn {i}"}).status_code

    with ThreadPoolExecutor(max_workers=6) as pool:
        turns = [pool.submit(turn, i) for i in range(6)]
        erased = pool.submit(admin.call, "DELETE", f"/sessions/{sid}")
        codes = [f.result() for f in turns]
    # Then each turn either landed before the erasure (and was erased) or failed with 404 ...
    assert erased.result().status_code == 204
    assert set(codes) <= {200, 404}, codes
    # ... and not one item of the session is left anywhere, but the erasure record
    leftovers = _holding(_scan_all(local_stack), [tag, f"{project}#{sid}"])
    assert leftovers == [], leftovers
    assert admin.call("GET", f"/sessions/{sid}").status_code == 404


def test_a_turn_that_read_the_session_before_the_erasure_fails_with_404_and_writes_nothing(
    local_stack: LocalStack, project: str,
) -> None:
    from agent_memory.conversation.append import Append, append_messages
    from agent_memory.domain.errors import SessionErased
    from agent_memory.domain.turns import MessageRecord

    admin = Client(local_stack, project)
    sid = _uid("s")
    assert admin.call("POST", f"/sessions/{sid}/messages", {"content": "before"}).status_code == 200
    repo = local_stack.repo
    # Given a turn that has read the session ...
    read = repo.load_turn_context(project, sid, now=datetime.now(UTC)).session
    assert read.version >= 1
    # ... when the session is erased before the turn writes,
    assert admin.call("DELETE", f"/sessions/{sid}").status_code == 204
    now = datetime.now(UTC)
    message = MessageRecord(message_id=f"m{int(now.timestamp() * 1000):013d}race0001", role="user",
                            content="late turn text", at=now, user_id="u")
    # then its write fails as 404 (on the first try and after re-reading) and nothing is written
    with pytest.raises(SessionErased):
        append_messages(repo, read, Append(new=[message], flow=[message]), time_zone="UTC",
                        now=lambda: now, keep_user_turns=12, flow_log_retention_days=0)
    assert not _holding(_scan_all(local_stack), ["late turn text", f"{project}#{sid}"])


def test_a_large_erasure_runs_as_a_job_and_its_status_url_reports_it(local_stack: LocalStack, project: str) -> None:
    admin = Client(local_stack, project)
    patient = _uid("PT")
    sid, _ = _consult(admin, patient, uuid.uuid4().hex[:10])
    # Given an inline limit below this patient's item count (in the governance function's containers)
    with local_stack.configured("GovernanceFunction", {CONTAINER_HOOK_ENV: ERASE_INLINE_UP_TO_TWO}):
        # When the patient is erased
        r = admin.call("DELETE", f"/patients/{patient}")
        # Then the answer is 202 with a status URL, the session is already closed to reads and writes
        assert r.status_code == 202, r.text
        body = r.json()
        assert body["status"] == "running" and body["status_url"].endswith(f"/patients/{patient}/erasure")
        assert admin.call("POST", f"/sessions/{sid}/messages", {"content": "during the job"}).status_code == 404
        again = admin.call("DELETE", f"/patients/{patient}")
        assert again.status_code == 202
        # and once the worker has run the queued job, the status says done
        from infra.jobs import LocalJobs

        LocalJobs.for_stack(local_stack).deliver()
        status = admin.call("GET", f"/patients/{patient}/erasure").json()
        assert status["status"] == "done" and status["mode"] == "job" and status["counts"]["session"] == 1
        assert admin.call("DELETE", f"/patients/{patient}").status_code == 204
        assert _holding(_scan_all(local_stack), [patient]) == [
            ("MemoryTable", json.dumps({"pk": {"S": project}, "sk": {"S": f"ERASURE#patient#{patient}"}}))]


def test_erasing_a_session_removes_its_diagnosis_references_from_the_patients_other_sessions(
    local_stack: LocalStack, project: str,
) -> None:
    admin = Client(local_stack, project)
    patient = _uid("PT")
    first, _ = _consult(admin, patient, uuid.uuid4().hex[:10])
    # Given a later session of the patient that carries the first session's diagnosis reference
    later = admin.call("POST", "/sessions", {"patient_id": patient, "type": "consultation"})
    assert later.status_code == 201, later.text
    later_id = later.json()["session_id"]
    refs = admin.call("GET", f"/sessions/{later_id}").json()["diagnoses"]
    assert [r["session_id"] for r in refs] == [first]
    # When the first session is erased
    assert admin.call("DELETE", f"/sessions/{first}").status_code == 204
    # Then the later session keeps no reference to it, and the record counts the one removed
    assert admin.call("GET", f"/sessions/{later_id}").json()["diagnoses"] == []
    record = admin.call("GET", f"/sessions/{first}/erasure").json()
    assert record["counts"]["diagnosis_refs"] == 1 and record["counts"]["diagnosis"] == 1
    assert admin.call("GET", f"/patients/{patient}/sessions").status_code == 200  # the patient remains


def test_erasing_a_session_removes_its_ratings_and_their_flow_log_events_also_replaced_ones(
    local_stack: LocalStack, project: str,
) -> None:
    # Given an answer in a session rated down twice by one member (the second rating replaces the
    # first), each reason in the rater's own words
    admin = Client(local_stack, project)
    rater = Client(local_stack, project, role="member", user="gov-rater")
    tag = uuid.uuid4().hex[:10]
    sid = _uid("s")
    turn = admin.call("POST", f"/sessions/{sid}/messages", {"content": f"{tag} 今天入组几个？"})
    assert turn.status_code == 200, turn.text
    rated = f"/sessions/{sid}/messages/{turn.json()['message_id']}/feedback"
    reasons = [f"{tag} 第一次理由 太长了", f"{tag} 第二次理由 只要结论"]
    for reason in reasons:
        r = rater.call("PUT", rated, {"rating": "down", "reason": reason})
        assert r.status_code == 200, r.text
    # (a replaced rating leaves no event behind: one rating, one event)
    assert len(_holding(_scan_all(local_stack), [reasons[0]])) == 0
    assert len(_holding(_scan_all(local_stack), [reasons[1]])) == 2  # the rating item and its event

    # When the session is erased
    assert admin.call("DELETE", f"/sessions/{sid}").status_code == 204

    # Then no item holds the reasons or the question: rating items and flow-log events are gone
    assert _holding(_scan_all(local_stack), [tag]) == []
