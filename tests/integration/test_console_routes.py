"""The routes the team console reads, over HTTP through the local stack, on the console's seeded
project (tests/support/console_data.py: a PI, a CRC and a data manager; a patient with three visits;
chats with reminders; weekly reports): who the caller is, the patients and a patient's symptom
trend, a session's messages page by page, the evidence of a line, the yearly summaries, the
reminders' scope, and the console's own files.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import requests

from agent_memory.domain.models import YearlySummary
from tests.support.console_data import ADMIN, ERASED_PATIENT, MEMBER, PATIENT, ConsoleProject, seed_console_project


@pytest.fixture(scope="module")
def seeded(local_stack: Any) -> ConsoleProject:
    return seed_console_project(local_stack, prefix="routes")


def _get(seeded: ConsoleProject, user: str, path: str, **params: Any) -> requests.Response:
    return requests.get(f"{seeded.base_url}{path}", params=params, timeout=30,
                        headers={"Authorization": f"Bearer {seeded.token(user)}"})


def test_me_lists_the_caller_s_own_memberships_with_their_roles(seeded: ConsoleProject) -> None:
    me = _get(seeded, MEMBER, "/v1/me").json()
    assert (me["user_id"], me["operator"]) == (MEMBER, False)
    mine = [p for p in me["projects"] if p["project_id"] == seeded.project_id]
    assert [(p["project_role"], p["study_role"], p["display_name"], p["time_zone"]) for p in mine] == [
        ("member", "CRC", "李协调员", "Asia/Shanghai")]


def test_patients_are_listed_with_their_visits_and_diagnoses(seeded: ConsoleProject) -> None:
    listing = seeded.call(MEMBER, "GET", "/patients").json()
    by_id = {p["patient_id"]: p for p in listing["patients"]}
    assert sorted(by_id) == sorted([PATIENT, ERASED_PATIENT]) and listing["complete"] is True
    assert (by_id[PATIENT]["visits"], by_id[PATIENT]["diagnoses"]) == (3, 3)
    assert (by_id[ERASED_PATIENT]["visits"], by_id[ERASED_PATIENT]["diagnoses"]) == (1, 1)


def test_the_symptom_trend_gives_each_symptom_s_state_at_each_visit(seeded: ConsoleProject) -> None:
    trend = seeded.call(MEMBER, "GET", f"/patients/{PATIENT}/trend").json()
    assert [v["session_id"] for v in trend["visits"]] == ["visit-ui-1", "visit-ui-2", "visit-ui-3"]
    assert [v["session_name"] for v in trend["visits"]] == ["初诊", "复诊", "二次复诊"]
    rows = {s["name"]: s["statuses"] for s in trend["symptoms"]}
    assert rows["发烧"] == ["present", "resolved", "not_mentioned"]
    assert rows["呕吐"][0] == "denied" and rows["咳嗽"][2] == "resolved"


def test_a_session_s_messages_come_page_by_page_with_their_speakers(seeded: ConsoleProject) -> None:
    path = f"/v1/projects/{seeded.project_id}/sessions/chat-{MEMBER}/messages"
    first = _get(seeded, ADMIN, path, limit=1).json()
    assert [m["speaker"] for m in first["messages"]] == ["member"]
    assert (first["messages"][0]["user_id"], first["messages"][0]["study_role"]) == (MEMBER, "CRC")
    assert first["messages"][0]["has_context"] is False and first["next_cursor"]
    second = _get(seeded, ADMIN, path, limit=1, cursor=first["next_cursor"]).json()
    (answer,) = second["messages"]
    assert (answer["message_id"], answer["speaker"], answer["has_context"]) == (
        seeded.message_ids[MEMBER], "assistant", True)
    assert second["next_cursor"] is None
    # a cursor the listing did not issue is refused
    refused = _get(seeded, ADMIN, path, limit=1, cursor="bm90LWEtY3Vyc29y")
    assert refused.status_code == 400, refused.text


def test_a_line_s_evidence_is_the_cited_message_s_text_for_admins_only(seeded: ConsoleProject) -> None:
    evidence = seeded.call(ADMIN, "GET", "/memory/lines/hm-crc/evidence").json()
    (message,) = evidence["messages"]
    assert (message["message_id"], message["kept"], message["user_id"], message["study_role"]) == (
        seeded.message_ids["preference"], True, MEMBER, "CRC")
    assert message["content"] == "下午2点后我比较忙，任务尽量上午发。"
    refused = _get(seeded, MEMBER, f"/v1/projects/{seeded.project_id}/memory/lines/hm-crc/evidence")
    assert refused.status_code == 403


def test_yearly_summaries_come_newest_year_first(local_stack: Any, seeded: ConsoleProject) -> None:
    for year in (2024, 2025):
        local_stack.repo.projects.put_yearly_summary(YearlySummary(
            project_id=seeded.project_id, year=year, summary=f"{year} 年：入组 {year - 2000} 例。",
            weeks=[f"{year}-W01"], created_at=datetime(year + 1, 1, 5, tzinfo=UTC)))
    items = seeded.call(MEMBER, "GET", "/yearly-summaries").json()["items"]
    assert [(y["year"], y["summary"]) for y in items] == [
        (2025, "2025 年：入组 25 例。"), (2024, "2024 年：入组 24 例。")]


def test_reminders_scope_own_or_all_and_all_is_for_admins(seeded: ConsoleProject) -> None:
    def owners(user: str, **params: Any) -> list[str]:
        answer = _get(seeded, user, f"/v1/projects/{seeded.project_id}/reminders", **params)
        assert answer.status_code == 200, answer.text
        return sorted(r["owner"] for r in answer.json()["reminders"])

    assert owners(ADMIN) == owners(ADMIN, scope="all") == sorted([ADMIN, MEMBER])
    assert owners(ADMIN, scope="own") == [ADMIN]
    assert owners(MEMBER) == owners(MEMBER, scope="own") == [MEMBER]
    refused = _get(seeded, MEMBER, f"/v1/projects/{seeded.project_id}/reminders", scope="all")
    assert refused.status_code == 403, refused.text


def test_the_console_s_files_are_served_with_their_types_and_policy(seeded: ConsoleProject) -> None:
    # /admin, the editor's old address, and /console lead to the page
    for start in ("/admin", "/console"):
        page = requests.get(f"{seeded.base_url}{start}", timeout=30)
        assert (page.status_code, page.url) == (200, f"{seeded.base_url}/console/index.html")
    assert "require-trusted-types-for 'script'" in page.headers["Content-Security-Policy"]
    script = requests.get(f"{seeded.base_url}/console/js/views/memory.js", timeout=30)
    assert script.headers["Content-Type"].startswith("text/javascript")
    assert script.headers["X-Content-Type-Options"] == "nosniff"
    again = requests.get(f"{seeded.base_url}/console/js/views/memory.js", timeout=30,
                         headers={"If-None-Match": script.headers["ETag"]})
    assert (again.status_code, again.content) == (304, b"")
    assert requests.get(f"{seeded.base_url}/console/config.json", timeout=30).json() == {"cognito": None}
    assert requests.get(f"{seeded.base_url}/console/README.md", timeout=30).status_code == 404
