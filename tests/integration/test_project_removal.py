"""Removal of a whole project by a platform operator, over HTTP through the local stack.

A project with members, sessions (messages, a cached reply, a transcript, a diagnosis, a feedback
rating), a reminder (an EventBridge Scheduler schedule), a weekly report and hot memory is
removed; then every table is scanned: no item of the project remains but the removal's audit
record in the platform partition, and another project's items are exactly as before. Also:
403 for a project admin, 422 without the confirmation, 409 while an erasure job runs, the
job path, and a second call that answers 204 (never 500).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import requests

from agent_memory.adapters.dynamo.tables import WeeklyReportItem
from agent_memory.domain.models import Project
from infra.local.functions import CONTAINER_HOOK_ENV
from infra.local.stack import LocalStack
from infra.local.token import mint_token
from tests.integration.test_governance import Client, _consult, _scan_all, _uid
from tests.support.auth import bearer, operator_bearer


def _new_project(stack: LocalStack, prefix: str) -> str:
    project_id = _uid(prefix)
    stack.repo.projects.put_project(Project(project_id=project_id, name=project_id, time_zone="Asia/Shanghai",
                                   kind="clinic", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    return project_id


def _remove(stack: LocalStack, project_id: str, headers: dict[str, str] | None = None,
            confirm: str | None = "same") -> requests.Response:
    params = {"confirm": project_id if confirm == "same" else confirm} if confirm else None
    return requests.delete(f"{stack.base_url}/v1/projects/{project_id}", params=params,
                           headers=headers or operator_bearer(), timeout=60)


def _populate(stack: LocalStack, project_id: str) -> Client:
    """Members, two sessions with messages/transcript/diagnosis, feedback, a reminder, a report."""
    admin = Client(stack, project_id)
    member = Client(stack, project_id, role="member", user="crc-1")
    tag = uuid.uuid4().hex[:10]
    sid, _ = _consult(admin, _uid("PT"), tag, key=f"k-{tag}")
    _consult(member, _uid("PT"), tag + "m")
    message_id = admin.call("GET", f"/sessions/{sid}").json()["window"][-1]["message_id"]
    r = admin.call("PUT", f"/sessions/{sid}/messages/{message_id}/feedback", {"rating": "up", "reason": "clear"})
    assert r.status_code in (200, 201), r.text
    ask = "remind me every Monday at 9am to clean up queries"
    r = member.call("POST", f"/sessions/s-rem-{tag}/messages", {"content": ask})
    assert r.status_code == 200 and "Reminder set" in r.json()["reply"], r.text
    WeeklyReportItem(project_id, "REPORT#2026-W10", iso_week="2026-W10", summary="Week: enrolment slow.",
                     created_at=datetime(2026, 3, 10, tzinfo=UTC), evidence=[message_id]).save()
    return admin


def _of_project(tables: dict[str, list[dict[str, Any]]], project_id: str) -> list[str]:
    """Every item (as JSON) whose JSON names the project id."""
    return sorted(json.dumps(item, sort_keys=True) for items in tables.values() for item in items
                  if project_id in json.dumps(item, ensure_ascii=False))


def _cached_replies(stack: LocalStack) -> set[str]:
    """Ids of the chat's cached replies (IdempotencyTable)."""
    return {i["id"]["S"] for i in _scan_all(stack)["IdempotencyTable"] if i["id"]["S"].startswith("chat-turn#")}


def _schedules(stack: LocalStack) -> list[str]:
    client = stack.aws_client("scheduler")
    group = stack.env["REMINDER_SCHEDULE_GROUP"]
    return [s["Name"] for s in client.list_schedules(GroupName=group)["Schedules"]]


def test_removing_a_project_leaves_only_its_audit_record_and_touches_no_other_project(
    local_stack: LocalStack,
) -> None:
    # Given a project with members, sessions, feedback, a reminder and a report, and another project
    project, other = _new_project(local_stack, "rm"), _new_project(local_stack, "keep")
    cached_before = _cached_replies(local_stack)
    _populate(local_stack, project)
    cached = _cached_replies(local_stack) - cached_before  # the project's (their ids are hashes)
    assert len(cached) == 1
    _populate(local_stack, other)
    before = _scan_all(local_stack)
    assert {t for t, items in before.items() if any(project in json.dumps(i) for i in items)} >= {
        "MemoryTable", "SessionsTable", "FlowLogTable"}
    schedules_before = _schedules(local_stack)
    other_items = _of_project(before, other)

    # When a platform operator removes it (confirming by its id)
    r = _remove(local_stack, project)

    # Then it is done inline, and only the audit record names the project in any table
    assert r.status_code == 204, r.text
    after = _scan_all(local_stack)
    left = _of_project(after, project)
    assert len(left) == 1, left
    audit = json.loads(left[0])
    assert audit["pk"]["S"] == "_platform" and audit["sk"]["S"].startswith(f"REMOVED#{project}#")
    record = json.loads(audit["record"]["S"])
    assert record["status"] == "done" and record["actor"] == "ops" and record["mode"] == "inline"
    counts = record["counts"]
    assert counts["session"] == 3 and counts["message"] >= 8 and counts["diagnosis"] == 2
    assert counts["flow_log"] >= 8 and counts["idempotency"] == 1 and counts["schedules"] == 1
    assert counts["memory"] >= 5  # project, hot memory, members, reminder, report, activity...
    assert "clean up queries" not in json.dumps(record)  # counts only, no content
    # its schedule is gone, the other project's is not; the other project is exactly as before
    assert len(_schedules(local_stack)) == len(schedules_before) - 1
    assert _of_project(after, other) == other_items
    assert not cached & _cached_replies(local_stack)
    # and the project is unknown to its former admin, while the operator reads the record
    # (a token alone: ``bearer`` would write the membership again)
    former = {"Authorization": f"Bearer {mint_token('gov-admin')}"}
    assert requests.get(f"{local_stack.base_url}/v1/projects/{project}/memory", headers=former,
                        timeout=30).status_code in (403, 404)
    status = requests.get(f"{local_stack.base_url}/v1/projects/{project}/removal", headers=operator_bearer(),
                          timeout=30)
    assert status.status_code == 200 and status.json()["counts"] == counts

    # When it is removed again, the answer is 204 and nothing changes; an unknown project is 404
    assert _remove(local_stack, project).status_code == 204
    assert _of_project(_scan_all(local_stack), project) == left
    assert _remove(local_stack, _uid("never")).status_code == 404
    # and an item a late chat turn wrote after the sweep is swept by the next call
    local_stack.aws_client("dynamodb").put_item(TableName=local_stack.table_names["SessionsTable"], Item={
        "pk": {"S": f"{project}#late"}, "sk": {"S": "SESSION"}, "session_id": {"S": "late"},
        "project_pk": {"S": project}, "project_sk": {"S": "2026-12-01T00:00:00.000000Z#late"}})
    assert _remove(local_stack, project).status_code == 204
    assert _of_project(_scan_all(local_stack), project)[0].count("REMOVED#") == 1
    assert len(_of_project(_scan_all(local_stack), project)) == 1


def test_a_project_admin_gets_403_and_a_missing_confirmation_422(local_stack: LocalStack) -> None:
    project = _new_project(local_stack, "rm")
    admin_headers = bearer(f"{project}:admin", "gov-admin")
    assert _remove(local_stack, project, headers=admin_headers).status_code == 403
    assert _remove(local_stack, project, confirm=None).status_code == 422
    assert _remove(local_stack, project, confirm="another-project").status_code == 422
    # nothing was removed
    assert Client(local_stack, project).call("GET", "/memory").status_code == 200


def test_removal_answers_409_while_an_erasure_job_runs_then_runs_as_a_job(local_stack: LocalStack) -> None:
    from infra.jobs import LocalJobs

    project = _new_project(local_stack, "rm")
    admin = _populate(local_stack, project)
    # (the governance function's containers erase inline only targets of at most 2 items)
    hook = {CONTAINER_HOOK_ENV: "tests.support.container_hooks:erase_inline_up_to_two_items"}
    with local_stack.configured("GovernanceFunction", hook):
        # Given an erasure of one of its sessions running as a job
        sid = admin.call("GET", "/sessions").json()["sessions"][0]["session_id"]
        assert admin.call("DELETE", f"/sessions/{sid}").status_code == 202
        # When the operator asks for the removal, then the answer is 409 and nothing is removed
        refused = _remove(local_stack, project)
        assert refused.status_code == 409 and refused.json()["error"] == "jobs_running", refused.text
        assert admin.call("GET", "/memory").status_code == 200
        # Once the job is done, the removal runs as a job itself: 202 with a status URL
        LocalJobs.for_stack(local_stack).deliver()
        r = _remove(local_stack, project)
        assert r.status_code == 202, r.text
        assert r.json()["status_url"] == f"/v1/projects/{project}/removal"
        assert _remove(local_stack, project).status_code == 202  # again while running: the same job
        LocalJobs.for_stack(local_stack).deliver()
        status = requests.get(f"{local_stack.base_url}/v1/projects/{project}/removal", headers=operator_bearer(),
                              timeout=30).json()
        assert status["status"] == "done" and status["mode"] == "job"
        assert status["counts"]["session"] == 2  # the third was erased before
        assert len(_of_project(_scan_all(local_stack), project)) == 1
        assert _remove(local_stack, project).status_code == 204
