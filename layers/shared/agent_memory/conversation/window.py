"""The session window: the newest messages kept on the session item for the next prompt.

Older messages stay as ``MSG#`` items. The rules are in ``docs/architecture.md`` ("Session
window"): a count of user turns, a byte budget, and never a reply without its question.
"""

from __future__ import annotations

from agent_memory.domain.text import utf8_len
from agent_memory.domain.turns import MessageRecord

#: JSON (UTF-8) bytes of the window kept on the session item; with the facts and the rolling
#: summary the item stays under DynamoDB's 400 KB item limit.
WINDOW_BUDGET_BYTES = 220_000


def trim_window(window: list[MessageRecord], *, keep_user_turns: int, budget_bytes: int) -> list[MessageRecord]:
    """Newest messages holding at most ``keep_user_turns`` user messages and at most
    ``budget_bytes`` of JSON (UTF-8). Older messages stay in DynamoDB (``MSG#`` items).

    When messages were cut, the kept part starts on a user message: an assistant message
    whose user message was cut is an orphan no prompt can replay, so it is not kept either.
    """
    users = 0
    start = len(window)
    size = 0
    for i in range(len(window) - 1, -1, -1):
        m = window[i]
        size += utf8_len(m.model_dump_json())
        if size > budget_bytes:
            break
        if m.role == "user":
            users += 1
            if users > keep_user_turns:
                break
        start = i
    if start > 0:
        while start < len(window) and window[start].role != "user":
            start += 1
    return window[start:]


#: Turns the prompt's replay drops at a time (docs/architecture.md, "Prompt caching"): its first
#: turn, the rolling summary and the session-memory block ahead of the turns change together, once
#: every this many turns.
TURN_BLOCK = 5


def turn_block_of(position: int, turn_block: int = TURN_BLOCK) -> int:
    """The replay block of the turn whose user message is message number ``position`` of the
    session (0 = its first message): block ``k`` holds the turns whose user message is numbered
    ``2 * turn_block * k`` to ``2 * turn_block * (k + 1) - 1`` (a turn is a question and its reply,
    so about ``turn_block`` turns). The recent turns a prompt replays start on a block's first turn
    and the rolling summary covers the turns before it (docs/architecture.md, "Prompt caching")."""
    return position // (2 * max(1, turn_block))
