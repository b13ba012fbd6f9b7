"""Acceptance of the identifier firewall (docs/architecture.md, "Identifiers"), end to end.

On the local stack (the real handlers over HTTP, moto, the local REDCap server) with the chat
function on the real ``anthropic`` SDK against the local Messages-API test server, a CRC types every
kind of identifier in Chinese and English messages, including two subjects' names (in Chinese and
in pinyin) and a phone and resident ID exactly as the project's REDCap holds them; imports a
transcript, rates an answer with a reason, and gets a reminder set whose text the model wrote with a
phone. Then none of those values is in any request the model server received, any item of any
table, any log line, any reply, context view, session view or export, nor in what the distillation
made of the day; the clinical values (study ids, visit codes, dates, lab values with units, NCT,
protocol, lot and kit numbers, enrolment codes) reached the model verbatim. Under the ``reject``
policy a message holding a phone is refused with 422 and its kinds, and nothing is stored.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redcap
import requests

from infra.jobs import LocalJobs
from infra.local import provision
from infra.local.stack import LocalStack
from tests.support.auth import bearer
from tests.support.leaks import LogCollector, scan_all
from tests.support.messages_api import MessagesAPIServer, text_reply, tool_use_reply

PROJECT = "demo-iit"
API_KEY = "sk-ant-identifiers-0123456789"
PATTERN_VALUES = {
    "mobile": "139-1234-5678", "mobile_digits": "13912345678", "landline": "0571-87654321",
    "resident_id_spaced": "110105 19491231 002X", "resident_id_old": "110105491231002", "mrn": "88123456",
    "case_no": "BA2024001", "outpatient_no": "MZ77889900", "insurance": "1234567890123",
    "email": "wang.jg@example.com", "mrn_en": "00123456", "passport": "E12345678", "phone_en": "138 0013 8000",
    "office": "6512 3456", "resident_id": "11010519491231002X", "passport_zh": "G87654321",
    "insurance_en": "330100123456789",
}
CLINICAL = ["P001", "P003", "C3D1", "2026-03-09", "132 μmol/L", "132/86 mmHg", "eGFR 45 mL/min/1.73m2",
            "NCT01234567", "IIT-2025-017 v2.1", "LOT-2025-0017", "IIT-2025-017-0032"]


@pytest.fixture
def subjects(local_stack: LocalStack) -> dict[str, dict[str, str]]:
    """P001's and P003's identifier values, exported through the REDCap API as REDCap holds them."""
    info = local_stack.describe()["redcap"]
    rows = redcap.Project(info["api_url"], info["token"]).export_records(
        records=["P001", "P003"], fields=["subj_name", "resident_id", "phone", "email"], events=["screening_arm_1"])
    return {r["subject_id"]: r for r in rows}


@pytest.fixture
def claude(local_stack: LocalStack, messages_api: MessagesAPIServer) -> Iterator[MessagesAPIServer]:
    """The chat function on the anthropic provider, its API key in moto Secrets Manager, calling
    the local Messages-API test server (the other functions as they were)."""
    provision.put_secret(local_stack.aws_client("secretsmanager"), local_stack.env["ANTHROPIC_SECRET_NAME"], API_KEY)
    messages_api.script(text_reply("已记录。"))
    with local_stack.configured("ChatFunction", {"LLM_PROVIDER": "anthropic",
                                                 "ANTHROPIC_BASE_URL": messages_api.base_url}):
        yield messages_api


def _call(stack: LocalStack, method: str, path: str, body: Any = None, status: int = 200, **params: str) -> Any:
    response = requests.request(method, f"{stack.base_url}/v1/projects/{PROJECT}/{path}".rstrip("/"), json=body,
                                params=params or None, headers=bearer(), timeout=60)
    assert response.status_code == status, response.text
    json_body = response.headers.get("content-type", "").startswith("application/json")
    return response.json() if response.content and json_body else response.text


def _messages(name1: str, name3: str, p3: dict[str, str]) -> list[str]:
    v = PATTERN_VALUES
    phone3 = f"{p3['phone'][:3]} {p3['phone'][3:7]} {p3['phone'][7:]}"
    return [
        f"{name1}（P001）和{name3}下周复查，{name3}家属手机 +86 {v['mobile']}，座机 {v['landline']}，身份证 "
        f"{v['resident_id_spaced']}，老身份证 {v['resident_id_old']}，住院号 {v['mrn']}，病案号 {v['case_no']}，门诊号 "
        f"{v['outpatient_no']}，医保卡号 {v['insurance']}，护照号 {v['passport_zh']}，邮箱 {v['email']}。"
        "P003 C3D1 2026-03-09 肌酐 132 μmol/L，血压 132/86 mmHg，eGFR 45 mL/min/1.73m2",
        f"Jianguo Wang (P001) called from {phone3}; ZHANG Zhiqiang's ID is {p3['resident_id']}. MRN {v['mrn_en']}, "
        f"passport {v['passport']}, insurance card {v['insurance_en']}, phone {v['phone_en']}, "
        f"office (010) {v['office']}, ID {v['resident_id']}, "
        f"mail {p3['email']}. Study NCT01234567, protocol IIT-2025-017 v2.1, kit lot LOT-2025-0017, "
        "enrolment code IIT-2025-017-0032, visit C3D1 on 2026-03-09.",
    ]


def test_no_typed_identifier_reaches_the_model_the_tables_the_logs_or_any_answer(
    local_stack: LocalStack, claude: MessagesAPIServer, subjects: dict[str, dict[str, str]],
    collected_logs: LogCollector, capsys: pytest.CaptureFixture[str],
) -> None:
    p1, p3 = subjects["P001"], subjects["P003"]
    values = [*PATTERN_VALUES.values(), p1["subj_name"], p3["subj_name"], p3["phone"], p3["resident_id"],
              p3["email"], "Jianguo Wang", "ZHANG Zhiqiang"]
    session = f"ident-{uuid.uuid4().hex[:10]}"
    seen: list[str] = []

    # When a CRC sends the two messages, asks for a reminder (the model writes a phone into its text),
    answers = [_call(local_stack, "POST", f"sessions/{session}/messages", {"content": text})
               for text in _messages(p1["subj_name"], p3["subj_name"], p3)]
    when = (datetime.now(UTC) + timedelta(days=2)).strftime("%Y-%m-%dT10:00")
    reminder_text = f"给{p3['subj_name']}家属回电 {PATTERN_VALUES['mobile']}"
    claude.script(tool_use_reply("schedule_reminder", {"text": reminder_text, "when": when}),
                  text_reply("提醒已设置。"))
    answers.append(_call(local_stack, "POST", f"sessions/{session}/messages", {"content": "后天上午十点提醒我回电"}))
    # imports a transcript and rates an answer with a reason
    _call(local_stack, "POST", f"sessions/{session}/transcript", {"turns": [
        {"role": "patient", "content": f"我是{p1['subj_name']}，电话 {PATTERN_VALUES['mobile_digits']}"},
        {"role": "doctor", "content": f"好的，病案号 {PATTERN_VALUES['case_no']} 已核对，C3D1 照常"}]})
    _call(local_stack, "PUT", f"sessions/{session}/messages/{answers[0]['message_id']}/feedback",
          {"rating": "down", "reason": f"{p3['subj_name']}的邮箱 {PATTERN_VALUES['email']} 不该出现", "tags": ["隐私"]})
    # and the day is distilled (make job's path: the worker handler with the SQS event)
    LocalJobs.for_stack(local_stack).run("distill", PROJECT, datetime.now(UTC).date())

    # Then every answer, context view, session view and the export are read back
    for answer in answers:
        seen.append(json.dumps(answer, ensure_ascii=False))
        seen.append(json.dumps(_call(local_stack, "GET", f"sessions/{session}/messages/{answer['message_id']}/context"),
                               ensure_ascii=False))
    seen.append(json.dumps(_call(local_stack, "GET", f"sessions/{session}"), ensure_ascii=False))
    seen.append(json.dumps(_call(local_stack, "GET", "reminders"), ensure_ascii=False))
    seen.append(_call(local_stack, "GET", "export", include="flow_log"))
    sent = [json.dumps(r.body, ensure_ascii=False) for r in claude.requests]
    captured = capsys.readouterr()
    everything = "\n".join([*sent, *seen, scan_all(local_stack), *collected_logs.lines, captured.out, captured.err])

    # none of the identifiers is anywhere
    for value in values:
        where = [i for i, part in enumerate([*sent, *seen]) if value in part]
        assert value not in everything, f"{value!r} leaked: sent/seen parts {where}; " + everything[
            max(0, everything.find(value) - 300):everything.find(value) + 100]
    # the clinical values reached the model verbatim, in the user's message
    questions = [json.dumps(r.body["messages"][-1], ensure_ascii=False) for r in claude.requests[:2]]
    for value in CLINICAL:
        assert any(value in q for q in questions), value
    # what was withheld is counted per kind, and the placeholders keep the meaning
    assert answers[0]["calls"][0]["redactions"] == {
        "email": 1, "insurance_number": 1, "name": 3, "passport": 1, "phone": 2, "record_number": 3, "resident_id": 2}
    assert "[P003 的姓名已隐去]家属手机 [电话已隐去]" in questions[0]
    assert "[P001's name withheld] (P001) called from [P003's phone number withheld]" in questions[1]
    reminders = _call(local_stack, "GET", "reminders")["reminders"]
    assert [r["text"] for r in reminders if "回电" in r["text"]] == ["给[P003 的姓名已隐去]家属回电 [电话已隐去]"]


def test_under_the_reject_policy_a_message_with_identifiers_is_refused_and_nothing_is_stored(
    local_stack: LocalStack, claude: MessagesAPIServer,
) -> None:
    session = f"ident-reject-{uuid.uuid4().hex[:8]}"
    _call(local_stack, "PATCH", "", {"identifiers": "reject"})
    try:
        response = requests.post(f"{local_stack.base_url}/v1/projects/{PROJECT}/sessions/{session}/messages",
                                 json={"content": f"家属电话 {PATTERN_VALUES['mobile_digits']}"}, headers=bearer(),
                                 timeout=60)
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "identifiers_rejected" and response.json()["kinds"] == ["phone"]
        assert PATTERN_VALUES["mobile_digits"] not in response.text
        assert session not in scan_all(local_stack) and claude.requests == []
    finally:
        _call(local_stack, "PATCH", "", {"identifiers": "redact"})
    assert _call(local_stack, "GET", "")["identifiers"] == "redact"
