"""End to end over the local stack: demo-iit reads its clinical data from the local REDCap server
through the REDCap adapter (token in moto Secrets Manager), the offline provider calls the same
tools a model would, and no identifier value of any subject reaches anything the product stored
or sent."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redcap
import requests

from infra.local.functions import CONTAINER_HOOK_ENV
from infra.local.stack import LocalStack
from tests.support.auth import bearer
from tests.support.container_hooks import LLM_REQUEST_LOG_ENV

PROJECT = "demo-iit"
IDENTIFIER_FIELDS = ["subj_name", "resident_id", "phone", "email"]


def _ask(stack: LocalStack, session: str, content: str) -> dict[str, Any]:
    response = requests.post(
        f"{stack.base_url}/v1/projects/{PROJECT}/sessions/{session}/messages",
        json={"content": content}, headers=bearer(), timeout=30,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _get(stack: LocalStack, path: str) -> Any:
    response = requests.get(f"{stack.base_url}/v1/projects/{PROJECT}/{path}", headers=bearer(), timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _session() -> str:
    return f"redcap-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize(("question", "expected"), [
    ("P001 入组了吗？", "P001 已入组，入组时间是 2026-02-05"),
    ("Is P001 enrolled?", "P001 is enrolled; enrolment date 2026-02-05"),
    ("现在一共入组多少人了", "目前共入组 17 人"),
    ("How many subjects are enrolled so far?", "17 subjects enrolled so far"),
    ("P099 入组了吗？", "未找到受试者 P099。"),
    ("Is P099 enrolled?", "Subject P099 was not found."),
])
def test_data_questions_are_answered_from_redcap(local_stack: LocalStack, question: str, expected: str) -> None:
    session = _session()
    body = _ask(local_stack, session, question)
    window = local_stack.repo.load_turn_context(PROJECT, session, now=datetime.now(UTC)).session.window
    assert expected in body["reply"], [tc.result for tc in window[-1].tool_calls]  # the tool's own words
    assert body["provider"] == "offline"


@pytest.mark.parametrize(("question", "lines"), [
    ("对 P007 做一下质控",
     ["ECOG 评分 ECOG 必填缺失", "CrCl (mL/min) 超出范围 = 450", "访视日期 Visit date 日期顺序错误"]),
    ("Run a QC check on P007", ["ECOG required missing", "out of range = 450", "Visit date date order = 2026-02-27"]),
])
def test_qc_of_p007_returns_the_seeded_errors_without_history(
    local_stack: LocalStack, question: str, lines: list[str]
) -> None:
    session = _session()
    body = _ask(local_stack, session, question)
    assert body["intents"] == ["QC_TASK"]
    for line in lines:
        assert line in body["reply"]
    context = _get(local_stack, f"sessions/{session}/messages/{body['message_id']}/context")
    (call,) = context["calls"]
    assert call["load_history"] is False and "history" not in [b["name"] for b in call["blocks"]]


def test_the_window_keeps_the_compact_result_and_the_call_reports_what_was_withheld(local_stack: LocalStack) -> None:
    session = _session()
    body = _ask(local_stack, session, "P001 入组了吗？")
    assert body["calls"][0]["redactions"] == {"identifier_fields": 4, "phone": 1}
    window = local_stack.repo.load_turn_context(PROJECT, session, now=datetime.now(UTC)).session.window
    (call,) = window[-1].tool_calls
    compact = json.loads(call.result)
    assert compact["subject_id"] == "P001" and compact["values"]["enrolment_date"] == "2026-02-05"
    assert "events" not in compact  # not the raw record by event and form


def test_the_turn_still_answers_when_redcap_is_down(local_stack: LocalStack) -> None:
    assert local_stack.redcap is not None
    with local_stack.redcap.failing(503):
        body = _ask(local_stack, _session(), "P002 入组了吗？")
    assert "临床数据源（REDCap）暂时无法访问" in body["reply"]


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.getMessage()} {json.dumps(record.__dict__, default=str, ensure_ascii=False)}")


@pytest.fixture
def collected_logs() -> Iterator[_Collect]:
    handler = _Collect()
    loggers = [logging.getLogger(), logging.getLogger("agent-memory"), logging.getLogger("infra.local")]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        yield handler
    finally:
        for lg in loggers:
            lg.removeHandler(handler)


def _scan_all(stack: LocalStack) -> str:
    client = stack.aws_client("dynamodb")
    out: list[str] = []
    for table in stack.table_names.values():
        kwargs: dict[str, Any] = {"TableName": table}
        while True:
            page = client.scan(**kwargs)
            out += [json.dumps(item, ensure_ascii=False) for item in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return "\n".join(out)


@pytest.fixture
def prompts(local_stack: LocalStack, tmp_path: Path) -> Iterator[Callable[[], list[str]]]:
    """Reads every request the offline provider received while the test ran, as JSON: recorded
    inside the chat function's containers (``tests.support.container_hooks.record_llm_requests``)."""
    log = tmp_path / "llm-requests.jsonl"
    log.touch()
    hook = {CONTAINER_HOOK_ENV: "tests.support.container_hooks:record_llm_requests", LLM_REQUEST_LOG_ENV: str(log)}
    with local_stack.configured("ChatFunction", hook):
        yield lambda: log.read_text(encoding="utf-8").splitlines()


def test_no_identifier_of_any_subject_is_stored_sent_or_logged(
    local_stack: LocalStack, collected_logs: _Collect, capsys: pytest.CaptureFixture[str],
    prompts: Callable[[], list[str]],
) -> None:
    # Given every subject's identifier values, exported through the REDCap API as REDCap holds them
    info = local_stack.describe()["redcap"]
    rows = redcap.Project(info["api_url"], info["token"]).export_records(
        fields=IDENTIFIER_FIELDS, events=["screening_arm_1"])
    identifiers = {r["subject_id"]: [r[f] for f in IDENTIFIER_FIELDS] for r in rows}
    assert len(identifiers) == 20 and all(all(v) for v in identifiers.values())

    # When every subject is asked about (data and QC, Chinese and English) in two sessions
    sessions = [_session(), _session()]
    seen: list[str] = []
    for i, sid in enumerate(sorted(identifiers)):
        session = sessions[i % 2]
        questions = [f"{sid} 入组了吗？", f"对 {sid} 做一下质控"] if i % 4 else [f"Show me {sid}'s data"]
        for question in questions:
            body = _ask(local_stack, session, question)
            seen.append(json.dumps(body, ensure_ascii=False))
            context = _get(local_stack, f"sessions/{session}/messages/{body['message_id']}/context")
            seen.append(json.dumps(context, ensure_ascii=False))
    seen.append(json.dumps(_ask(local_stack, sessions[0], "现在一共入组多少人了"), ensure_ascii=False))
    seen.append(json.dumps(_ask(local_stack, sessions[1], "对所有受试者做一下质控"), ensure_ascii=False))
    for session in sessions:
        seen.append(json.dumps(_get(local_stack, f"sessions/{session}"), ensure_ascii=False))

    # Then no identifier value is in any prompt (tool results included), reply, context view, session
    # window, stored item (messages, flow log, session items) or log line
    sent = prompts()
    assert any("tool_result" in p and "[phone number withheld]" in p for p in sent)  # results were sent
    captured = capsys.readouterr()  # the containers' stdout and stderr come out in this process's
    everything = "\n".join([*sent, *seen, _scan_all(local_stack), *collected_logs.lines,
                            captured.out, captured.err])
    assert "P010" in everything and "2026-02-05" in everything  # the data itself did flow
    for sid, (name, resident_id, phone, email) in identifiers.items():
        for value in (name, resident_id, phone, f"{phone[:3]} {phone[3:7]} {phone[7:]}", email):
            assert value not in everything, f"an identifier of {sid} leaked"
