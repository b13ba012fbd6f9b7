"""UTF-8 byte caps (never splitting a character), the token estimate (agent_memory.domain.text) and
DynamoDB item sizes (agent_memory.adapters.dynamo.item_size)."""

from __future__ import annotations

import math
import re

import pytest

from agent_memory.adapters.dynamo.item_size import DYNAMODB_ITEM_LIMIT_BYTES, dynamodb_item_size
from agent_memory.domain import text as text_module
from agent_memory.domain.text import (
    TOKEN_CACHE_ENTRIES,
    TOKEN_CACHE_MAX_CHARS,
    content_problem,
    estimate_tokens,
    truncate_utf8,
    utf8_len,
)

B23_INPUT = "患者主诉头痛🩺三天"


def test_b23_input_is_28_utf8_bytes() -> None:
    # Given a text of 8 CJK characters (3 bytes each) and one emoji (4 bytes)
    # When it is measured
    # Then it is 28 UTF-8 bytes
    assert utf8_len(B23_INPUT) == 28


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(10, "患者主"), (21, "患者主诉头痛"), (22, "患者主诉头痛🩺")],
)
def test_b23_truncate_never_splits_a_character(limit: int, expected: str) -> None:
    # Given the 28-byte text
    # When it is capped at 10, 21 and 22 bytes
    result = truncate_utf8(B23_INPUT, limit)

    # Then the result is a whole-character prefix within the limit
    assert result == expected
    encoded = result.encode("utf-8")
    assert encoded.decode("utf-8", errors="strict") == result
    assert "\ufffd" not in result
    assert len(encoded) <= limit
    assert B23_INPUT.startswith(result)


def test_b23_every_limit_gives_the_longest_whole_character_prefix() -> None:
    # Given the 28-byte text and every limit from 0 to past its length
    for limit in range(0, 31):
        # When it is capped
        result = truncate_utf8(B23_INPUT, limit)

        # Then the result is valid UTF-8 without U+FFFD, fits, is a prefix ...
        encoded = result.encode("utf-8")
        assert encoded.decode("utf-8", errors="strict") == result, limit
        assert "\ufffd" not in result, limit
        assert len(encoded) <= limit, limit
        assert B23_INPUT.startswith(result), limit
        # ... and is the LONGEST such prefix (one more character would not fit)
        if result != B23_INPUT:
            assert utf8_len(B23_INPUT[: len(result) + 1]) > limit, limit


def test_truncate_keeps_text_that_fits_and_empties_on_non_positive_limits() -> None:
    # Given a 28-byte text
    # When the limit is its size, larger, zero or negative
    # Then it is returned whole for >= 28 and empty for <= 0
    assert truncate_utf8(B23_INPUT, 28) == B23_INPUT
    assert truncate_utf8(B23_INPUT, 1_000) == B23_INPUT
    assert truncate_utf8(B23_INPUT, 0) == ""
    assert truncate_utf8(B23_INPUT, -5) == ""


def test_estimate_tokens_counts_one_token_per_cjk_character() -> None:
    # Given Chinese text (ideographs and full-width punctuation)
    # When estimated
    # Then each character is one token
    assert estimate_tokens("患者主诉头痛") == 6
    assert estimate_tokens("入组了吗？") == 5  # the full-width question mark is one token


def test_estimate_tokens_counts_latin_runs_in_fours() -> None:
    # Given Latin words and digits
    # When estimated
    # Then each run of letters/digits is ceil(len / 4) tokens and spaces are free
    assert estimate_tokens("enrolment") == 3  # 9 letters
    assert estimate_tokens("the patient") == 1 + 2
    assert estimate_tokens("2026") == 1


def test_estimate_tokens_counts_other_symbols_one_each_and_whitespace_free() -> None:
    # Given ASCII punctuation, an emoji and whitespace
    # When estimated
    # Then each non-space symbol is one token; whitespace costs nothing
    assert estimate_tokens("!?") == 2
    assert estimate_tokens("🩺") == 1
    assert estimate_tokens("  \n\t ") == 0


def test_estimate_tokens_on_mixed_text_adds_the_rules() -> None:
    # Given a mixed message: "P001" (1) + 入组了吗 (4) + ？ (1)
    # When estimated
    # Then the parts add up
    assert estimate_tokens("P001 入组了吗？") == 6
    # and the 28-byte text: 8 CJK + 1 emoji
    assert estimate_tokens(B23_INPUT) == 9


def test_estimate_tokens_of_empty_text_is_zero() -> None:
    # Given empty text / When estimated / Then 0
    assert estimate_tokens("") == 0


#: The CJK ranges of the estimate's rules, inclusive (ideographs, kana, hangul, CJK symbols and
#: punctuation, full-width forms).
CJK_RANGES = (
    (0x2E80, 0x2FDF), (0x3000, 0x303F), (0x3040, 0x30FF), (0x3100, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF), (0x20000, 0x3134F),
)


_CJK = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES) + "]")
_RUN = re.compile(r"[A-Za-z0-9_]+")


def _rules_estimate(text: str) -> int:
    """The documented rules written out: each CJK character 1, each Latin run ceil(len / 4), each
    other non-space character 1, whitespace 0."""
    rest, tokens = _CJK.subn(" ", text)
    tokens += sum(math.ceil(len(run) / 4) for run in _RUN.findall(rest))
    return tokens + sum(1 for ch in _RUN.sub(" ", rest) if not ch.isspace())


def test_estimate_tokens_follows_the_rules_for_every_code_point() -> None:
    # Given every code point up to past the last CJK range (and every 97th one above) alone, and
    # between Latin letters (where it may split a run or not)
    points = [*range(0x32000), *range(0x32000, 0x110000, 97)]
    singles = "".join(chr(c) for c in points if not 0xD800 <= c <= 0xDFFF)
    mixed = ["患者P001于第12周出现发热，体温38.5°C。\u3000The patient reported ｈｅａｄａｃｈｅ\t🙂", "abc\u3000def",
             "\u3000\u3000", "ab\u2e7fcd\u2e80ef", "x_y-z 𠀀𠀁 ﾟ"]
    # Then the estimate is what the rules give: per character, and for mixed texts
    assert [ch for ch in singles if estimate_tokens(ch) != _rules_estimate(ch)] == []
    assert [ch for ch in singles[::7] if estimate_tokens(f"abcd{ch}efgh") != _rules_estimate(f"abcd{ch}efgh")] == []
    assert [estimate_tokens(t) for t in mixed] == [_rules_estimate(t) for t in mixed]
    assert estimate_tokens("\u3000 \u3000") == 2  # the ideographic space is a CJK symbol, not free


def test_estimate_tokens_remembers_short_texts_within_its_bound_and_gives_the_same_counts() -> None:
    # Given texts below and above the size up to which estimates are remembered
    short = "P001 入组了吗？" * 10
    long = "P001 入组了吗？" * (TOKEN_CACHE_MAX_CHARS // 10 + 1)
    text_module._estimate_tokens_cached.cache_clear()
    # When each is estimated twice
    first, again = estimate_tokens(short), estimate_tokens(short)
    long_first, long_again = estimate_tokens(long), estimate_tokens(long)
    # Then the counts follow the rules every time (6 tokens per repetition) ...
    assert first == again == 60
    assert long_first == long_again == 6 * (TOKEN_CACHE_MAX_CHARS // 10 + 1)
    info = text_module._estimate_tokens_cached.cache_info()
    # ... the short text was computed once and then remembered, the long one never stored
    assert (info.hits, info.misses, info.currsize) == (1, 1, 1)
    # and many distinct texts never grow the cache beyond its bound
    for n in range(TOKEN_CACHE_ENTRIES * 3):
        estimate_tokens(f"第 {n} 次访视")
    assert text_module._estimate_tokens_cached.cache_info().currsize == TOKEN_CACHE_ENTRIES


def test_dynamodb_item_size_counts_attribute_names_and_utf8_bytes() -> None:
    # Given a raw item with an ASCII name and value
    # When measured
    # Then the name's bytes and the value's bytes are summed
    assert dynamodb_item_size({"pk": {"S": "p1"}}) == 4
    # and a longer attribute name costs its extra bytes
    assert dynamodb_item_size({"pk_long": {"S": "p1"}}) == 9
    # and Chinese counts 3 UTF-8 bytes per character, in names and in values
    assert dynamodb_item_size({"内容": {"S": "患者主诉"}}) == 6 + 12
    # and the emoji counts 4 bytes
    assert dynamodb_item_size({"c": {"S": B23_INPUT}}) == 1 + 28


def test_dynamodb_item_size_counts_list_and_map_overheads() -> None:
    # Given a list of two strings and a map with one entry
    # When measured
    # Then lists/maps add 3 bytes plus 1 per element, map keys count their bytes
    assert dynamodb_item_size({"l": {"L": [{"S": "ab"}, {"S": "患"}]}}) == 1 + 3 + (1 + 2) + (1 + 3)
    assert dynamodb_item_size({"m": {"M": {"键": {"S": "ab"}}}}) == 1 + 3 + (3 + 1 + 2)


def test_dynamodb_item_limit_is_400_kb() -> None:
    # Given / When / Then: DynamoDB's item limit is 400 KB = 409,600 bytes
    assert DYNAMODB_ITEM_LIMIT_BYTES == 400 * 1024


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "must not be empty"),
        (" \t\n\u3000\u00a0", "must not be empty"),
        ("\u200b\u200c\u200d\ufeff", "must not be empty"),
        ("\u202e\u2066", "must not be empty"),
        ("P001\x00入组了吗", "must not contain control characters"),
        ("a\x1bb", "must not contain control characters"),
        ("P001 入组了吗", None),
        ("第一行\n第二行\t制表", None),
        ("\u200bP001", None),
    ],
)
def test_content_problem_refuses_invisible_or_control_text(text: str, problem: str | None) -> None:
    assert content_problem(text) == problem
