"""The say-script's callback is what WeCom sends: the project's crypto adapter opens it to the
member's text (XML special characters included), and the script waits for a whole answer."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.adapters.wecom.crypto import WeComCallbackCrypto
from agent_memory.domain.errors import WeComSignatureInvalid
from infra.wecom_say import signed_callback, text_message_xml, wait_for_answer

CORP_ID, AGENT_ID, TOKEN = "ww1234567890abcdef", 1000002, "Tk7pQ2mZ9x"
AES_KEY = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456"
NOW = 1_767_225_600


def _crypto(token: str = TOKEN) -> WeComCallbackCrypto:
    return WeComCallbackCrypto(corp_id=CORP_ID, agent_id=AGENT_ID, token=token, encoding_aes_key=AES_KEY,
                               clock=lambda: NOW)


@pytest.mark.parametrize("text", ["P001 入组了吗？", "a < b && c ]]> d", "多行\n第二行"])
def test_the_built_callback_opens_to_the_members_text(text: str) -> None:
    # Given: the script's message from crc.li, sealed with the project's channel
    xml = text_message_xml(corp_id=CORP_ID, agent_id=AGENT_ID, user="crc.li", text=text,
                           msg_id="5120948221046018451", created=NOW)
    query, body = signed_callback(_crypto(), xml, now=NOW, nonce="2718281828")
    # When: the callback adapter opens it
    message = _crypto().open_message(query["msg_signature"], query["timestamp"], query["nonce"], body)
    # Then
    assert (message.content, message.from_userid, message.msg_id, message.agent_id) == (
        text, "crc.li", "5120948221046018451", AGENT_ID)
    assert set(query) == {"msg_signature", "timestamp", "nonce"}


def test_a_callback_built_with_another_token_is_refused() -> None:
    xml = text_message_xml(corp_id=CORP_ID, agent_id=AGENT_ID, user="crc.li", text="hi", msg_id="1", created=NOW)
    query, body = signed_callback(_crypto("OtherToken9"), xml, now=NOW, nonce="1")
    with pytest.raises(WeComSignatureInvalid):
        _crypto().open_message(query["msg_signature"], query["timestamp"], query["nonce"], body)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_waiting_returns_every_part_once_they_stop_arriving() -> None:
    # Given: one earlier message, then an answer whose two parts arrive at 2 s and 3 s
    clock = _Clock()
    arrivals = [(0.0, "earlier"), (2.0, "(1/2) 第一部分"), (3.0, "(2/2) 第二部分")]

    def read() -> list[dict[str, Any]]:
        return [{"content": c} for t, c in arrivals if t <= clock.now]

    # When
    answer = wait_for_answer(read, before=1, timeout_s=30, quiet_s=1.5, poll_s=0.25, clock=clock,
                             sleep=clock.sleep)
    # Then: both parts, after 1.5 s without a new one
    assert [m["content"] for m in answer] == ["(1/2) 第一部分", "(2/2) 第二部分"]
    assert 4.5 <= clock.now < 5.0


def test_waiting_gives_up_at_the_timeout_when_nothing_came() -> None:
    clock = _Clock()
    assert wait_for_answer(lambda: [], before=0, timeout_s=10, clock=clock, sleep=clock.sleep) == []
    assert 10 <= clock.now < 10.5
