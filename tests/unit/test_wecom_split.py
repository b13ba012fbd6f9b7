"""Long answers as WeCom messages: each part within WeCom's UTF-8 byte limit with its number, split
on sentence or paragraph boundaries, never inside a character, the whole text kept in order."""

from __future__ import annotations

import re

import pytest

from agent_memory.adapters.wecom.split import (
    APP_TEXT_LIMIT_BYTES,
    CUT_NOTE,
    ROBOT_MARKDOWN_LIMIT_BYTES,
    split_message,
)

SENTENCE = "受试者P001已于今日完成入组，随访计划已按方案生成。"  # 72 bytes in UTF-8
MARKER = re.compile(r"^\((\d+)/(\d+)\)[ \n]")


def _unnumbered(parts: list[str]) -> str:
    return "".join(MARKER.sub("", p) for p in parts)


def test_a_short_answer_is_one_unnumbered_message() -> None:
    assert split_message("  P001 已入组。 ", APP_TEXT_LIMIT_BYTES, markdown=False) == ["P001 已入组。"]
    assert split_message(" \n ", APP_TEXT_LIMIT_BYTES, markdown=False) == []


def test_a_long_chinese_answer_splits_within_the_limit_on_sentence_ends() -> None:
    # Given: 100 sentences (7,200 bytes), more than three text messages
    text = SENTENCE * 100
    # When
    parts = split_message(text, APP_TEXT_LIMIT_BYTES, markdown=False)
    # Then: 4 numbered parts, each within 2,048 bytes, each ending a sentence, nothing lost
    assert len(parts) == 4
    assert [MARKER.match(p).groups() for p in parts] == [(str(i), "4") for i in range(1, 5)]  # type: ignore[union-attr]
    assert all(len(p.encode("utf-8")) <= APP_TEXT_LIMIT_BYTES for p in parts)
    assert all(p.endswith("。") for p in parts)
    assert _unnumbered(parts) == text


def test_paragraphs_are_kept_whole_when_they_fit() -> None:
    # Given: three paragraphs of 1,440 bytes each
    paragraphs = [f"第{n}段：" + SENTENCE * 20 for n in (1, 2, 3)]
    # When
    parts = split_message("\n\n".join(paragraphs), APP_TEXT_LIMIT_BYTES, markdown=False)
    # Then: one paragraph per part
    assert [MARKER.sub("", p) for p in parts] == paragraphs


def test_a_run_without_boundaries_never_splits_a_character() -> None:
    # Given: 3,000 CJK characters with no space or punctuation, and 4-byte emoji between them
    text = ("蛋白尿" * 500 + "😀") * 2
    parts = split_message(text, APP_TEXT_LIMIT_BYTES, markdown=False)
    # Then: every part is whole UTF-8 within the limit and together they are the text
    assert all(len(p.encode("utf-8")) <= APP_TEXT_LIMIT_BYTES for p in parts)
    assert "\ufffd" not in "".join(parts)
    assert _unnumbered(parts) == text


def test_markdown_parts_number_on_their_own_line_and_keep_headings() -> None:
    # Given: a Markdown report of three sections of about 3,000 bytes each (a robot message holds 4,096)
    sections = [f"## 第{n}周\n\n" + "\n".join(f"- {SENTENCE}" for _ in range(40)) for n in (1, 2, 3)]
    # When
    parts = split_message("\n\n".join(sections), ROBOT_MARKDOWN_LIMIT_BYTES, markdown=True)
    # Then: a heading opens each part, after the number's own line
    assert len(parts) == 3
    assert [p.split("\n")[:2] for p in parts] == [[f"({n}/3)", f"## 第{n}周"] for n in (1, 2, 3)]
    assert all(len(p.encode("utf-8")) <= ROBOT_MARKDOWN_LIMIT_BYTES for p in parts)


def test_an_answer_past_the_part_cap_is_cut_with_a_note() -> None:
    # Given: an answer of about 29 messages and a cap of 5
    parts = split_message(SENTENCE * 800, APP_TEXT_LIMIT_BYTES, markdown=False, max_parts=5)
    # Then: 5 parts, numbered of 5, the last ending with the note, all within the limit
    assert len(parts) == 5 and parts[0].startswith("(1/5) ") and parts[-1].endswith(CUT_NOTE)
    assert all(len(p.encode("utf-8")) <= APP_TEXT_LIMIT_BYTES for p in parts)


def test_part_numbers_of_three_digits_still_fit() -> None:
    parts = split_message(SENTENCE * 200, 100, markdown=False, max_parts=1000)
    assert len(parts) == 200 and parts[-1].startswith("(200/200) ")
    assert all(len(p.encode("utf-8")) <= 100 for p in parts)


def test_a_limit_too_small_for_a_number_is_refused() -> None:
    with pytest.raises(ValueError, match="room"):
        split_message(SENTENCE * 3, 40, markdown=False)
