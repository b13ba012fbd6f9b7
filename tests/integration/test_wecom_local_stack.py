"""WeCom end to end over the local stack (``make run``'s): a CRC's message, signed and encrypted
as WeCom sends it (``infra/wecom_say.py``), goes through the callback route, the inbound queue and
its consumer (the chat turn, offline provider, demo-iit's REDCap data), the outbox and its sender,
to the WeCom API emulator; a reminder the CRC set in WeCom arrives there when the local reminder
clock fires it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from agent_memory.adapters.wecom.crypto import WeComCallbackCrypto
from agent_memory.chat.wecom import NOT_A_MEMBER
from agent_memory.domain.wecom import wecom_session_id
from infra.local.reminder_clock import ReminderClock
from infra.local.stack import LocalStack
from infra.wecom_say import main as wecom_say
from infra.wecom_say import post_callback, received, signed_callback, text_message_xml, wait_for_answer
from tests.support.auth import bearer


def _say(stack: LocalStack, user: str, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    assert stack.wecom is not None
    demo = stack.wecom.describe()
    code = wecom_say(["--api-url", stack.base_url, "--project", demo["project"], "--emulator-url",
                      demo["emulator_url"], "--user", user, "--text", text, "--corp-id", demo["corp_id"],
                      "--agent-id", str(demo["agent_id"]), "--token", demo["token"],
                      "--aes-key", demo["encoding_aes_key"], "--timeout", "30"])
    return code, capsys.readouterr().out


def _sealed(
    stack: LocalStack, user: str, text: str, msg_id: str, *, token: str | None = None
) -> tuple[str, dict[str, str], str]:
    """(callback URL, query, body) of demo-iit's callback for ``user``'s message, as WeCom sends it."""
    assert stack.wecom is not None
    demo = stack.wecom.describe()
    crypto = WeComCallbackCrypto(corp_id=demo["corp_id"], agent_id=demo["agent_id"], token=token or demo["token"],
                                 encoding_aes_key=demo["encoding_aes_key"])
    now = int(time.time())
    xml = text_message_xml(corp_id=demo["corp_id"], agent_id=demo["agent_id"], user=user, text=text, msg_id=msg_id,
                           created=now)
    query, body = signed_callback(crypto, xml, now=now, nonce="1372623149")
    return f"{stack.base_url}/v1/wecom/demo-iit/callback", query, body


def _inbox(stack: LocalStack, user: str) -> list[dict[str, Any]]:
    assert stack.wecom is not None
    return received(stack.wecom.describe()["emulator_url"], user)


def test_a_crcs_wecom_question_is_answered_in_wecom(
    local_stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    code, printed = _say(local_stack, "crc.li", "P001 入组了吗？", capsys)
    assert code == 0
    assert "P001 已入组，入组时间是 2026-02-05" in printed


def test_a_reminder_the_crc_set_in_wecom_arrives_in_wecom(
    local_stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given: the CRC asks for a reminder in WeCom, and is answered there
    code, printed = _say(local_stack, "crc.li", "明天晚上8点提醒我核对P003的随访窗口", capsys)
    assert code == 0 and "已设置提醒「核对P003的随访窗口」" in printed
    # and the reminder is theirs (the member crc-li, not a WeCom identity)
    listed = requests.get(f"{local_stack.base_url}/v1/projects/demo-iit/reminders",
                          headers=bearer("demo-iit:member", "crc-li"), timeout=30)
    mine = [r for r in listed.json()["reminders"] if r["text"] == "核对P003的随访窗口"]
    assert len(mine) == 1 and mine[0]["owner"] == "crc-li"
    assert local_stack.wecom is not None
    emulator_url = local_stack.wecom.describe()["emulator_url"]
    before = len(received(emulator_url, "crc.li"))
    # When: the reminder clock reaches its time
    due_at = datetime.fromisoformat(mine[0]["next_fire_at"]) + timedelta(minutes=1)
    results = ReminderClock(local_stack, now=lambda: due_at, out=lambda _: None).tick(
        reminder_ids=frozenset({mine[0]["reminder_id"]}))  # (other tests' reminders on the shared stack stay)
    # Then: delivered through WeCom, and the CRC's WeCom shows it
    (fired,) = [r for r in results if r.get("reminder_id") == mine[0]["reminder_id"]]
    assert fired["status"] == "delivered" and "wecom" in fired["channels"]
    arrived = wait_for_answer(lambda: received(emulator_url, "crc.li"), before=before, timeout_s=30)
    assert len(arrived) == 1 and "核对P003的随访窗口" in arrived[0]["content"]
    assert arrived[0]["msgtype"] == "text"


def test_wecoms_retried_callback_runs_one_turn_and_sends_one_answer(local_stack: LocalStack) -> None:
    # Given: WeCom sends the same message three times (it retries when no answer came within 5 s)
    url, query, body = _sealed(local_stack, "crc.wang", "P002 入组了吗？", msg_id="7311992846155431001")
    before = len(_inbox(local_stack, "crc.wang"))
    statuses = [post_callback(url, query, body)[0] for _ in range(3)]
    # Then: each acknowledged; one answer in WeCom, one turn in the member's WeCom session
    assert statuses == [200, 200, 200]
    answers = wait_for_answer(lambda: _inbox(local_stack, "crc.wang"), before=before, timeout_s=30, quiet_s=3.0)
    assert len(answers) == 1 and "P002" in answers[0]["content"]
    context = local_stack.repo.load_turn_context("demo-iit", wecom_session_id("crc.wang"), now=datetime.now(UTC))
    session = context.session
    assert [m.content for m in session.window if m.role == "user"].count("P002 入组了吗？") == 1


def test_a_stranger_is_refused_once_and_a_bad_signature_is_401(local_stack: LocalStack) -> None:
    # Given: a WeCom user of the corp who is no member of demo-iit
    url, query, body = _sealed(local_stack, "visitor.zhao", "P001 入组了吗？", msg_id="7311992846155431002")
    assert post_callback(url, query, body)[0] == 200
    refusal = wait_for_answer(lambda: _inbox(local_stack, "visitor.zhao"), before=0, timeout_s=30)
    assert [m["content"] for m in refusal] == [NOT_A_MEMBER]
    # and nothing stored for them
    session = local_stack.repo.load_turn_context("demo-iit", wecom_session_id("visitor.zhao"), now=datetime.now(UTC))
    assert session.session.window == [] and session.session.version == 0
    # When: a message signed with another Token (not the channel's)
    url, query, body = _sealed(local_stack, "crc.li", "P001 入组了吗？", msg_id="7311992846155431003", token="x" * 32)
    before = len(_inbox(local_stack, "crc.li"))
    status, _ = post_callback(url, query, body)
    # Then: 401, and nothing reaches the member
    assert status == 401
    time.sleep(1.0)
    assert len(_inbox(local_stack, "crc.li")) == before
