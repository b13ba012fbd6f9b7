"""The recent-turns window is cut on turn boundaries (it starts on a user turn, keeps tool pairs whole,
never replays a failed message) and stays within its budgets; once full, its first message moves
only once every ``turn_block`` turns, so the next turn can read this turn's cache.

Part 1 builds a 57-message window directly and checks what ``assemble_prompt`` sends. Part 2
drives 29 real turns through ``handle_message`` (the in-memory store, the offline LLM) and checks
the messages actually sent, the container cache and what the store keeps. Part 3 checks the block
rule and the cached prefix over a long conversation (docs/architecture.md, "Prompt caching").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.chat.prompt import PromptBudget, assemble_prompt
from agent_memory.chat.turn import ChatDeps, handle_message
from agent_memory.conversation.window import WINDOW_BUDGET_BYTES, trim_window
from agent_memory.domain.errors import LLMUnavailable
from agent_memory.domain.llm import LLMRequest
from agent_memory.domain.models import HotMemory, Intent
from agent_memory.domain.text import utf8_len
from agent_memory.domain.turns import MessageRecord, SessionState, ToolCall
from tests.fakes import InMemoryStore, ScriptedLLM, stored_messages
from tests.unit.chat_support import (
    chat_llm,
    hot_line,
    make_deps,
    message_breakpoint,
    overloaded,
    prefix_json,
    question_text,
    seed_project,
)

T0 = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)
TOOL_TURN = 18  # turn whose reply used a tool: its assistant message is the 20th-newest
FAILED_TURN = 22  # turn whose LLM call failed: its user message has no reply
TURNS = 29  # 28 answered turns + 1 failed = 57 messages
NEW_MESSAGE = "好的，继续。"


def turn_text(t: int) -> str:
    return "P001 入组了吗？" if t == TOOL_TURN else f"第{t}轮：好的，收到。"


# ----------------------------------------------------------------- checks on what is sent
def user_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """User messages that carry text (not only tool results)."""
    return [m for m in messages if m["role"] == "user" and any(b["type"] == "text" for b in m["content"])]


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    """The user's words of each user turn (the last text block: the new message follows its session block)."""
    return [[b["text"] for b in m["content"] if b["type"] == "text"][-1] for m in user_turns(messages)]


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """Messages-API shape rules: the first message is a user text, roles alternate, every tool_result
    follows the assistant message holding its tool_use."""
    assert messages[0]["role"] == "user"
    assert messages[0]["content"][0]["type"] == "text"
    for prev, cur in zip(messages, messages[1:], strict=False):
        assert prev["role"] != cur["role"], (prev, cur)
    for i, m in enumerate(messages):
        results = [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"]
        if results:
            assert i > 0 and messages[i - 1]["role"] == "assistant"
            uses = {b["id"] for b in messages[i - 1]["content"] if b["type"] == "tool_use"}
            assert set(results) <= uses, (results, uses)


# ------------------------------------------------------------------ part 1: built window
def case_window() -> list[MessageRecord]:
    """57 messages: turns 0..28, turn 22 failed (user only), turn 18 answered with a tool call."""
    out: list[MessageRecord] = []
    at = T0
    for t in range(TURNS):
        at += timedelta(minutes=1)
        failed = t == FAILED_TURN
        out.append(MessageRecord(message_id=f"m{len(out):03d}", role="user", content=turn_text(t), at=at,
                                 user_id="u1", status="failed" if failed else "ok"))
        if failed:
            continue
        calls = [ToolCall(id=f"toolu_{t}", name="read_clinical_data", input={"subject_id": "P001"},
                          result='{"subject": {"subject_id": "P001", "enrolment_date": "2026-02-05"}}')] \
            if t == TOOL_TURN else []
        out.append(MessageRecord(message_id=f"m{len(out):03d}", role="assistant", content=f"第{t}轮回复", at=at,
                                 tool_calls=calls))
    return out


def prompt_for(window: list[MessageRecord], recent_turns: int = 10, turn_block: int = 1) -> list[dict[str, Any]]:
    state = SessionState(project_id="p1", session_id="s1", created_at=T0, updated_at=T0, window=window,
                         message_count=len(window))
    prompt = assemble_prompt(
        hot_memory=HotMemory(project_id="p1", lines=[hot_line("l1", "System Rules", "禁止输出患者身份证号")]),
        reports=None, session=state, user_text=NEW_MESSAGE, intents=(Intent.GENERAL,),
        budget=PromptBudget(recent_turns=recent_turns, turn_block=turn_block),
    )
    return prompt.messages


def test_b13_window_starts_on_user_turn() -> None:
    # Given the 57-message window: one failed user message, and the tool-using
    # assistant message exactly where a naive "last 20 messages" cut would start
    window = case_window()
    assert len(window) == 57
    assert window[-20].role == "assistant" and window[-20].tool_calls
    assert [m.content for m in window if m.status == "failed"] == [turn_text(FAILED_TURN)]

    # When the prompt is assembled
    messages = prompt_for(window)

    # Then the first message is the user message of the tool turn (not its assistant reply
    # nor its tool_result)
    assert messages[0] == {"role": "user", "content": [{"type": "text", "text": "P001 入组了吗？"}]}


def test_b13_every_tool_result_follows_its_tool_use() -> None:
    # Given the 57-message window
    # When the prompt is assembled
    messages = prompt_for(case_window())

    # Then the tool pair is kept whole: assistant(tool_use) then user(tool_result)
    assert messages[1]["role"] == "assistant"
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use"]
    assert messages[2]["content"][0]["type"] == "tool_result"
    assert messages[2]["content"][0]["tool_use_id"] == messages[1]["content"][0]["id"] == f"toolu_{TOOL_TURN}"
    assert_well_formed(messages)


def test_b13_no_two_adjacent_messages_share_a_role() -> None:
    # Given the 57-message window (with a failed user message in it)
    # When the prompt is assembled
    messages = prompt_for(case_window())

    # Then roles strictly alternate
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))
    assert roles[-1] == "user"


def test_b13_at_most_10_user_turns_plus_the_new_message() -> None:
    # Given the 57-message window of 28 answered turns
    # When the prompt is assembled
    messages = prompt_for(case_window())

    # Then exactly 10 earlier turns are replayed, then the new message
    texts = user_texts(messages)
    assert len(texts) == 11
    assert texts[-1] == NEW_MESSAGE
    expected = [turn_text(t) for t in range(TURNS) if t != FAILED_TURN][-10:]
    assert texts[:-1] == expected


def test_b13_failed_user_message_is_not_replayed() -> None:
    # Given the 57-message window
    # When the prompt is assembled
    messages = prompt_for(case_window())

    # Then the failed turn's user message is not sent
    sent = [b.get("text") for m in messages for b in m["content"]]
    assert turn_text(FAILED_TURN) not in sent


def test_b13_window_of_0_turns_sends_only_the_current_message() -> None:
    # Given the 57-message window and a budget of 0 recent turns
    # When the prompt is assembled
    messages = prompt_for(case_window(), recent_turns=0)

    # Then only the new message is sent (after its session block)
    assert len(messages) == 1 and messages[0]["role"] == "user"
    assert [b["text"] for b in messages[0]["content"]][1:] == [NEW_MESSAGE]


def test_b13_window_ending_on_a_failed_message_still_alternates() -> None:
    # Given a window whose LAST turn failed (a user message with no reply)
    window = case_window()[:-2] + [MessageRecord(message_id="m999", role="user", content="失败的一条", at=T0,
                                                 status="failed")]

    # When the prompt is assembled
    messages = prompt_for(window)

    # Then the failed message is dropped and the new message follows an assistant message
    assert_well_formed(messages)
    assert messages[-2]["role"] == "assistant"
    assert "失败的一条" not in str(messages)


def test_b13_window_cut_on_an_assistant_message_drops_the_orphan_reply() -> None:
    # Given a window that (after trimming) starts with an assistant message and its tool calls
    window = case_window()[-20:]
    assert window[0].role == "assistant" and window[0].tool_calls

    # When the prompt is assembled
    messages = prompt_for(window)

    # Then the orphan reply and its tool pair are not sent; the first message is a user turn
    assert_well_formed(messages)
    assert all(b["type"] == "text" for m in messages for b in m["content"])


def test_adjacent_assistant_messages_are_merged_into_one() -> None:
    # Given a turn answered by two assistant messages (e.g. an imported transcript)
    window = [
        MessageRecord(message_id="m1", role="user", content="孩子发烧", at=T0),
        MessageRecord(message_id="m2", role="assistant", content="多久了？", at=T0),
        MessageRecord(message_id="m3", role="assistant", content="有没有咳嗽？", at=T0),
    ]

    # When the prompt is assembled
    messages = prompt_for(window)

    # Then they are sent as one assistant message with both texts
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["text"] for b in messages[1]["content"]] == ["多久了？", "有没有咳嗽？"]


# ----------------------------------------------------------------------- trim_window
def sized(i: int, role: str, chars: int) -> MessageRecord:
    return MessageRecord(message_id=f"m{i:03d}", role=role, content="患" * chars, at=T0)


def json_bytes(window: list[MessageRecord]) -> int:
    return sum(utf8_len(m.model_dump_json()) for m in window)


def test_trim_window_respects_its_byte_budget_and_keeps_the_newest() -> None:
    # Given 40 messages of 1,000 Chinese characters (about 3 KB each in JSON)
    window = [sized(i, "user" if i % 2 == 0 else "assistant", 1_000) for i in range(40)]

    # When trimmed to a 20,000-byte budget
    kept = trim_window(window, keep_user_turns=100, budget_bytes=20_000)

    # Then what is kept fits, is the newest suffix starting on a user message, and one
    # more turn would not fit
    assert json_bytes(kept) <= 20_000
    assert kept == window[-len(kept):]
    assert kept[0].role == "user"
    assert json_bytes(window[-len(kept) - 2:]) > 20_000


def test_trim_window_keeps_at_most_the_given_user_turns() -> None:
    # Given 40 small alternating messages
    window = [sized(i, "user" if i % 2 == 0 else "assistant", 5) for i in range(40)]

    # When trimmed to 12 user turns
    kept = trim_window(window, keep_user_turns=12, budget_bytes=WINDOW_BUDGET_BYTES)

    # Then exactly the newest 12 user messages (and their replies) are kept, starting on a user
    assert [m.role for m in kept].count("user") == 12
    assert kept == window[-24:]
    assert kept[0].role == "user"


# --------------------------------------------------------- part 2: 29 turns through the chat
@dataclass
class Driven:
    repo: Any
    deps: Any
    llm: ScriptedLLM
    stored_before: list[MessageRecord]
    stored_after: int
    cached_before: int
    cached_after: int
    requests: list[LLMRequest]


@pytest.fixture(scope="module")
def driven() -> Driven:
    """29 turns (turn 22 fails once) through ``handle_message``, then one more turn."""
    repo = InMemoryStore()
    seed_project(repo, "p1")
    llm = chat_llm()
    deps = make_deps(repo, llm)
    for t in range(TURNS):
        if t == FAILED_TURN:
            llm.queue(overloaded())
        try:
            handle_message(deps, project_id="p1", session_id="s1", user_id="u1", content=turn_text(t),
                           patient_id=None, deadline=None)
        except LLMUnavailable:
            assert t == FAILED_TURN
    assert llm.raised == 1
    stored_before = stored_messages(repo, "p1", "s1")
    cached_before = deps.cache.size("p1", "s1")
    first = len(llm.requests)
    handle_message(deps, project_id="p1", session_id="s1", user_id="u1", content=NEW_MESSAGE,
                   patient_id=None, deadline=None)
    return Driven(repo=repo, deps=deps, llm=llm, stored_before=stored_before,
                  stored_after=len(stored_messages(repo, "p1", "s1")), cached_before=cached_before,
                  cached_after=deps.cache.size("p1", "s1"), requests=llm.requests[first:])


def test_b13_sent_messages_start_on_a_user_turn_after_29_real_turns(driven: Driven) -> None:
    # Given 57 stored messages from 29 turns: one failed, and the tool-using reply where a
    # naive "last 20 messages" cut falls
    stored = driven.stored_before
    assert len(stored) == 57
    assert stored[-20].role == "assistant" and stored[-20].tool_calls
    assert [m.content for m in stored if m.status == "failed"] == [turn_text(FAILED_TURN)]

    # When the next message is sent
    messages = driven.requests[0].messages

    # Then what reaches the LLM is well formed and starts on a user turn, holds the 10 latest
    # answered turns (and, from the start of their block, at most 4 more), then the new message,
    # and never the failed message
    assert_well_formed(messages)
    answered = [turn_text(t) for t in range(TURNS) if t != FAILED_TURN]
    texts = user_texts(messages)
    assert texts[-1] == NEW_MESSAGE
    replayed = texts[:-1]
    assert 10 <= len(replayed) <= 14
    assert replayed == answered[-len(replayed):]
    assert turn_text(FAILED_TURN) not in str(messages)
    assert messages[-1]["content"][-1] == {"type": "text", "text": NEW_MESSAGE}


def test_b13_container_cache_holds_at_most_50_while_dynamodb_keeps_every_message(driven: Driven) -> None:
    # Given 29 turns through one container: 28 answered (56 messages) + 1 failed user message
    # Then the store holds all 57 (the failed message included) while the cache holds 50
    assert len(driven.stored_before) == 57
    assert driven.cached_before == 50
    # and after one more turn the store holds 59 (57 + this turn's 2) and the cache still 50
    assert driven.stored_after == 59
    assert driven.cached_after == 50


def test_stored_session_window_is_bounded(driven: Driven) -> None:
    # Given the session after 30 turns
    state = driven.repo.get_session("p1", "s1")

    # Then its window holds at most the user messages a replay may need (recent_turns + turn_block + 1)
    # within the byte budget, while message_count counts every message ever written
    budget = PromptBudget()
    assert budget.window_user_turns == budget.recent_turns + budget.turn_block + 1 == 16
    assert [m.role for m in state.window].count("user") <= budget.window_user_turns
    assert json_bytes(state.window) <= WINDOW_BUDGET_BYTES
    assert state.message_count == 59


# ------------------------------------------- part 3: the block rule and the cached prefix
def drive_turns(turns: int, **config: Any) -> tuple[ChatDeps, list[LLMRequest]]:
    """``turns`` plain turns through one container (offline replies); the request of each turn."""
    repo = InMemoryStore()
    seed_project(repo, "p1")
    llm = chat_llm()
    deps = make_deps(repo, llm, **config)
    requests: list[LLMRequest] = []
    for t in range(turns):
        first = len(llm.requests)
        handle_message(deps, project_id="p1", session_id="s1", user_id="u1", content=f"第{t}轮：好的，收到。",
                       patient_id=None, deadline=None)
        assert len(llm.requests) == first + 1  # a plain turn: one call
        requests.append(llm.requests[first])
    return deps, requests


def test_once_full_the_replay_keeps_its_first_message_for_a_block_of_turns() -> None:
    # Given 30 turns with the default budget (10 recent turns, dropped 5 at a time)
    budget = PromptBudget()
    assert (budget.recent_turns, budget.turn_block) == (10, 5)
    _, requests = drive_turns(30)

    starts: list[str] = []
    for k, request in enumerate(requests):
        replayed = user_texts(request.messages)[:-1]
        # Then every prompt replays a run of the latest turns ending with the previous one ...
        assert replayed == [f"第{t}轮：好的，收到。" for t in range(k - len(replayed), k)]
        # ... always the last 10 (all of them before there are 10), at most 14
        assert len(replayed) == k if k <= 10 else 10 <= len(replayed) <= 14
        starts.append(replayed[0] if replayed else "")

    # and once 10 turns are there, the first message moves only every 5th turn, by 5 turns
    moves = [k for k in range(11, 30) if starts[k] != starts[k - 1]]
    assert moves == [15, 20, 25]
    assert [starts[k] for k in moves] == ["第5轮：好的，收到。", "第10轮：好的，收到。", "第15轮：好的，收到。"]
    assert [len(user_texts(requests[k].messages)) - 1 for k in (14, 15, 19, 20)] == [14, 10, 14, 10]


def test_the_next_turn_repeats_the_previous_turns_cached_prefix_byte_for_byte() -> None:
    # Given 22 turns with a model that caches any prefix (so every breakpoint is placed)
    _, requests = drive_turns(22, min_cacheable_tokens=0)

    repeated = 0
    for k in range(1, len(requests) - 1):
        this, following = requests[k], requests[k + 1]
        # Then each request's message breakpoint ends the previous turn (the message before its last) ...
        n = message_breakpoint(this)
        assert n == len(this.messages) - 1 and this.messages[n - 1]["role"] == "assistant"
        # ... and the next request starts with exactly those bytes (tools, system, messages), except
        # when the replay's first message moved on (once every 5 turns)
        if user_texts(following.messages)[0] == user_texts(this.messages)[0]:
            assert prefix_json(following, n) == prefix_json(this, n)
            assert message_breakpoint(following) == n + 2  # this turn's question and reply added
            repeated += 1
        else:
            assert k + 1 in (15, 20)
    assert repeated == len(requests) - 2 - 2


def test_no_breakpoint_when_nothing_reaches_the_models_minimum() -> None:
    # Given a model whose minimum cacheable prefix (4,096 tokens) no request of a small project reaches:
    # the instructions and tool definitions, a two-line hot memory, short turns
    _, requests = drive_turns(16, min_cacheable_tokens=4_096)

    # Then no request carries a breakpoint: none could be written, so none is placed
    assert all(not b.cache for r in requests for b in r.system)
    assert all(message_breakpoint(r) is None for r in requests)
    assert all(question_text(r).startswith("第") for r in requests)
