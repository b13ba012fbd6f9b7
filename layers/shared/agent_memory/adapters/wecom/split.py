"""A long answer as WeCom messages within WeCom's size limits (docs/architecture.md, "WeCom").

WeCom counts a message's ``content`` in UTF-8 bytes; the limits are constants below. An answer
that fits is sent as it is. A longer one is split by ``semantic-text-splitter`` (Unicode sentence
and line boundaries, Markdown structure for Markdown messages; never inside a character or a
grapheme cluster) into parts that each fit with their number: ``(1/3) `` before a text part,
``(1/3)`` on a line of its own before a Markdown part (so a heading that opens it stays one).

WeCom drops, without an error, an application's messages to one member past 30 a minute, so an
answer is sent in at most :data:`MAX_PARTS` parts; what does not fit in them is cut and the last
part says so (:data:`CUT_NOTE`).
"""

from __future__ import annotations

from semantic_text_splitter import MarkdownSplitter, TextSplitter

from agent_memory.domain.text import utf8_len

# The limits as WeCom's API reference states them (docs/architecture.md, "WeCom"):
#: 发送应用消息 (``message/send``), 文本消息: ``text.content`` "最长不超过2048个字节" (longer is cut).
APP_TEXT_LIMIT_BYTES = 2048
#: 发送应用消息, markdown消息: ``markdown.content`` "最长不超过2048个字节，必须是utf8编码".
APP_MARKDOWN_LIMIT_BYTES = 2048
#: 群机器人 (``webhook/send``), 文本类型: ``text.content`` "最长不超过2048个字节".
ROBOT_TEXT_LIMIT_BYTES = 2048
#: 群机器人, markdown类型: ``markdown.content`` "最长不超过4096个字节" (WeCom answers 40058 past it).
ROBOT_MARKDOWN_LIMIT_BYTES = 4096
#: Most messages one answer becomes (WeCom: 30 application messages a minute to one member).
MAX_PARTS = 10
#: Ends the last part of an answer cut at :data:`MAX_PARTS`.
CUT_NOTE = "\n…（回答过长，余下部分未发送 / answer cut, the rest was not sent）"


def _marker(index: int, total: int, *, markdown: bool) -> str:
    return f"({index}/{total})" + ("\n" if markdown else " ")


def _chunks(text: str, capacity: int, *, markdown: bool) -> list[str]:
    splitter = (MarkdownSplitter if markdown else TextSplitter).from_callback(utf8_len, capacity)
    return list(splitter.chunks(text))


def split_message(text: str, limit_bytes: int, *, markdown: bool, max_parts: int = MAX_PARTS) -> list[str]:
    """``text`` as at most ``max_parts`` messages of at most ``limit_bytes`` UTF-8 bytes each.

    Args:
        text: the answer (whitespace around it is dropped).
        limit_bytes: the content limit of the message type (one of the ``*_LIMIT_BYTES``).
        markdown: split along Markdown structure and number parts on their own line.
        max_parts: most parts; the text past them is cut and the last part ends with :data:`CUT_NOTE`.

    Returns:
        The parts in order: ``[]`` for a text with nothing to send, ``[text]`` when it fits, else
        numbered parts ``(i/n)``.

    Raises:
        ValueError: ``limit_bytes`` leaves no room for a numbered part (below 64 bytes).
    """
    text = text.strip()
    if not text:
        return []
    if utf8_len(text) <= limit_bytes:
        return [text]
    if limit_bytes < 64:
        raise ValueError("limit_bytes must leave room for a part's number")
    total = 99  # the widest number of a first guess (two digits); grows until the numbers fit
    while True:
        capacity = limit_bytes - utf8_len(_marker(total, total, markdown=markdown))
        chunks = _chunks(text, capacity, markdown=markdown)
        if len(str(len(chunks))) <= len(str(total)):
            break
        total = int("9" * len(str(len(chunks))))
    if len(chunks) > max_parts:
        # the last part kept is split again, to leave room for the note, at a boundary
        chunks = chunks[: max_parts - 1] + [_chunks(chunks[max_parts - 1], capacity - utf8_len(CUT_NOTE),
                                                    markdown=markdown)[0] + CUT_NOTE]
    n = len(chunks)
    return [_marker(i, n, markdown=markdown) + chunk for i, chunk in enumerate(chunks, start=1)]


__all__ = [
    "APP_MARKDOWN_LIMIT_BYTES",
    "APP_TEXT_LIMIT_BYTES",
    "CUT_NOTE",
    "MAX_PARTS",
    "ROBOT_MARKDOWN_LIMIT_BYTES",
    "ROBOT_TEXT_LIMIT_BYTES",
    "split_message",
]
