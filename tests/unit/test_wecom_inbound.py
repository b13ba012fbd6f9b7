"""A member's WeCom message as their chat turn (agent_memory.chat.wecom): answered in their WeCom
session and queued for WeCom; anyone else refused once with nothing stored; a redelivery of the same
MsgId replays the recorded answer without a second LLM call; member mapping rules (one member per
WeCom id, case ignored)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.chat.wecom import (
    IDENTIFIERS_REFUSED,
    NOT_A_MEMBER,
    ONLY_TEXT,
    UNREADABLE,
    WeComTurnDeps,
    answer_wecom_message,
)
from agent_memory.domain.errors import AlreadyExists, LLMUnavailable
from agent_memory.domain.wecom import WeComChannel, WeComInbound, WeComInboundMessage, wecom_session_id
from agent_memory.projects import members
from tests.fakes import InMemoryStore, InMemoryWeComChannels, RecordingOutbox
from tests.unit.chat_support import T0, USER, chat_llm, deps_with, llm_requests, seed_project

CHANNEL = WeComChannel(project_id="p1", corp_id="ww1", agent_id=1000002, robot_webhook=False,
                       updated_at=T0, updated_by="u1")


def _deps(store: InMemoryStore, llm: object = None) -> tuple[WeComTurnDeps, RecordingOutbox]:
    seed_project(store)
    member = store.get_member("p1", USER)
    assert member is not None
    store.put_member(member.model_copy(update={"wecom_userid": "CRC.Li"}))
    outbox = RecordingOutbox()
    channels = InMemoryWeComChannels({"p1": CHANNEL})
    deps = WeComTurnDeps(chat=deps_with(store, llm or chat_llm()), channels=channels, directory=store, outbox=outbox)
    return deps, outbox


def _inbound(user: str = "crc.li", text: str | None = "P001 入组了吗？", msg_id: str = "7001",
             msg_type: str = "text") -> WeComInbound:
    return WeComInbound(project_id="p1", message=WeComInboundMessage(
        msg_id=msg_id, from_userid=user, corp_id="ww1", agent_id=1000002, msg_type=msg_type, content=text,
        created_at=datetime(2026, 3, 10, 2, 0, tzinfo=UTC)))


def test_a_members_message_is_their_turn_in_their_wecom_session_and_the_answer_goes_to_wecom(
    store: InMemoryStore,
) -> None:
    # Given: u1 has the WeCom id CRC.Li (WeCom sends it lower-cased)
    deps, outbox = _deps(store)
    # When: their question arrives
    outcome = answer_wecom_message(deps, _inbound(), deadline=None)
    # Then: answered from the clinical data, to the sender, in the member's WeCom session
    assert outcome == {"outcome": "answered", "parts": 1}
    (sent,) = outbox.sent
    assert sent.to_userid == "crc.li" and "P001" in sent.text and "2026-02-05" in sent.text
    assert sent.dedupe_key == "answer#p1#msg#7001"
    session = store.get_session("p1", wecom_session_id("crc.li"))
    assert session is not None
    assert [(m.role, m.user_id) for m in session.window] == [("user", USER), ("assistant", None)]


def test_a_replayed_msgid_is_answered_again_without_a_second_llm_call(store: InMemoryStore) -> None:
    # Given: a message answered once
    deps, outbox = _deps(store)
    answer_wecom_message(deps, _inbound(), deadline=None)
    calls = len(llm_requests(deps.chat))
    # When: the same MsgId is delivered again (the idempotency record expired or never completed)
    again = answer_wecom_message(deps, _inbound(), deadline=None)
    # Then: the recorded answer is sent again under the same dedupe key; no LLM call, nothing new stored
    assert again["outcome"] == "answered" and len(llm_requests(deps.chat)) == calls
    assert [m.dedupe_key for m in outbox.sent] == ["answer#p1#msg#7001"] * 2 and outbox.sent[0] == outbox.sent[1]
    session = store.get_session("p1", wecom_session_id("crc.li"))
    assert session is not None and len(session.window) == 2


def test_a_failed_turn_raises_and_its_retry_reuses_the_recorded_message(store: InMemoryStore) -> None:
    # Given: the LLM is overloaded once
    deps, outbox = _deps(store, chat_llm(LLMUnavailable("overloaded (test)", retry_after_s=1.0)))
    with pytest.raises(LLMUnavailable):
        answer_wecom_message(deps, _inbound(), deadline=None)
    assert outbox.sent == []
    # When: the queue delivers the message again
    assert answer_wecom_message(deps, _inbound(), deadline=None)["outcome"] == "answered"
    # Then: one user message (the failed one, now answered) and one answer
    session = store.get_session("p1", wecom_session_id("crc.li"))
    assert session is not None and [(m.role, m.status) for m in session.window] == [("user", "ok"), ("assistant", "ok")]


def test_an_unmapped_wecom_user_gets_one_polite_refusal_and_nothing_is_stored(store: InMemoryStore) -> None:
    # Given: the project as it is
    deps, outbox = _deps(store)
    before = store.snapshot()
    # When: a WeCom user no member has writes
    outcome = answer_wecom_message(deps, _inbound(user="stranger"), deadline=None)
    # Then: one refusal to them, no LLM call, no table changed
    assert outcome == {"outcome": "not_a_member", "parts": 1}
    assert [(m.to_userid, m.text) for m in outbox.sent] == [("stranger", NOT_A_MEMBER)]
    assert llm_requests(deps.chat) == [] and store.snapshot() == before


def test_a_removed_member_is_refused_like_a_stranger(store: InMemoryStore) -> None:
    deps, outbox = _deps(store)
    members.put_member(store, "p1", "u2", project_role="admin", study_role="PI", display_name="二号", actor="t",
                       now=T0)
    store.remove_member("p1", USER)
    before = store.snapshot()
    assert answer_wecom_message(deps, _inbound(), deadline=None)["outcome"] == "not_a_member"
    assert store.snapshot() == before and outbox.sent[0].text == NOT_A_MEMBER


@pytest.mark.parametrize(("msg_type", "text", "note", "outcome"), [
    ("image", None, ONLY_TEXT, "not_text"),
    ("text", "bad\x00text", UNREADABLE, "unreadable"),
])
def test_what_the_turn_cannot_read_gets_one_sentence(
    store: InMemoryStore, msg_type: str, text: str | None, note: str, outcome: str
) -> None:
    deps, outbox = _deps(store)
    assert answer_wecom_message(deps, _inbound(msg_type=msg_type, text=text), deadline=None)["outcome"] == outcome
    assert [m.text for m in outbox.sent] == [note] and llm_requests(deps.chat) == []


def test_a_message_queued_before_the_channel_was_removed_is_dropped(store: InMemoryStore) -> None:
    deps, outbox = _deps(store)
    deps.channels.delete_channel("p1")
    assert answer_wecom_message(deps, _inbound(), deadline=None) == {"outcome": "no_channel", "parts": 0}
    assert outbox.sent == []


def test_a_wecom_id_belongs_to_one_member_of_a_project_ignoring_case(store: InMemoryStore) -> None:
    seed_project(store)
    members.put_member(store, "p1", "u2", project_role="member", study_role="CRC", display_name="李", actor="t",
                       now=T0, wecom_userid="crc.li")
    with pytest.raises(AlreadyExists):
        members.put_member(store, "p1", "u3", project_role="member", study_role="CRC", display_name="王", actor="t",
                           now=T0, wecom_userid="CRC.LI")
    assert store.wecom_member("p1", "Crc.Li") == "u2"
    # the same member keeps it when their membership is replaced
    members.put_member(store, "p1", "u2", project_role="member", study_role="DM", display_name="李", actor="t",
                       now=T0, wecom_userid="crc.li")
    assert store.wecom_member("p1", "crc.li") == "u2"


def test_under_reject_a_message_with_identifiers_gets_the_kinds_and_nothing_is_stored(store: InMemoryStore) -> None:
    # Given a project whose identifier policy is reject
    deps, outbox = _deps(store)
    members.update_project(store, "p1", identifiers="reject", now=T0)
    before = store.snapshot()
    # When a member sends a phone number from WeCom
    outcome = answer_wecom_message(deps, _inbound(text="P001 家属电话 13912345678 记一下"), deadline=None)
    # Then one sentence names the kind (never the value), nothing is stored and the model is not asked
    assert outcome["outcome"] == "identifiers_rejected"
    assert [m.text for m in outbox.sent] == [IDENTIFIERS_REFUSED.format(kinds="phone")]
    assert "13912345678" not in outbox.sent[0].text
    assert store.snapshot() == before and llm_requests(deps.chat) == []
