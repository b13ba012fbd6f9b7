"""The OpenAPI document's text patterns (``agent_memory.http.text_patterns``) state exactly the
rules the server applies in code: the Unicode tables they are built from are Python's, and on
every kind of character, alone and in combinations, a pattern matches a text if and only if the
server's rule accepts it."""

from __future__ import annotations

import itertools
import re
import sys
import unicodedata
from collections.abc import Callable

import pytest

from agent_memory.domain.text import content_problem
from agent_memory.http import text_patterns as tp
from agent_memory.http.project_requests import DisplayText

#: One character of every kind the rules tell apart: forbidden controls that are whitespace
#: (VT) or not (NUL), allowed controls (tab, newline, CR), a C1 control (not whitespace; NEL is),
#: spaces (ASCII, ideographic), format characters (BMP, astral), visible characters (ASCII, CJK,
#: astral).
KINDS = ["\x0b", "\x00", "\t", "\n", "\r", "\x80", "\x85", " ", "\u3000", "\u200b", "\U000e0020", "a", "中",
         "\U0001f600"]


def _ranges(has: Callable[[str], bool]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    start: int | None = None
    for point in range(sys.maxunicode + 2):
        inside = point <= sys.maxunicode and not 0xD800 <= point <= 0xDFFF and has(chr(point))
        if inside and start is None:
            start = point
        elif not inside and start is not None:
            out.append((start, point - 1))
            start = None
    return tuple(out)


def test_the_tables_are_this_pythons_unicode_data() -> None:
    # A Python with other Unicode data fails here: regenerate the tables in text_patterns.py
    assert unicodedata.unidata_version == tp.UNICODE_VERSION
    assert _ranges(str.isspace) == tp.WHITESPACE
    assert _ranges(lambda c: unicodedata.category(c) == "Cf") == tp.FORMAT
    assert _ranges(lambda c: unicodedata.category(c) == "Cc") == tp.CONTROL


def _display_text_accepts(text: str) -> bool:
    from pydantic import TypeAdapter, ValidationError

    try:
        TypeAdapter(DisplayText).validate_python(text)
    except ValidationError:
        return False
    return True


RULES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "visible text": (tp.VISIBLE_TEXT, lambda s: content_problem(s) is None),
    "blank or visible": (tp.BLANK_OR_VISIBLE, lambda s: not s.strip() or content_problem(s.strip()) is None),
    "display text": (tp.DISPLAY_TEXT, lambda s: len(s) <= 200 and _display_text_accepts(s)),
    "not blank": (tp.NOT_BLANK, lambda s: bool(s.strip())),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_a_pattern_accepts_exactly_what_its_rule_accepts(rule: str) -> None:
    pattern, accepts = RULES[rule]
    compiled = re.compile(pattern)
    texts = [""] + ["".join(t) for n in (1, 2, 3) for t in itertools.product(KINDS, repeat=n)]
    differ = [t for t in texts if (compiled.search(t) is not None) != accepts(t)]
    assert differ == []


@pytest.mark.parametrize("table", ["WHITESPACE", "FORMAT", "CONTROL", "FORBIDDEN_CONTROLS"])
def test_a_character_class_holds_every_range_of_its_table_and_nothing_next_to_them(table: str) -> None:
    ranges = getattr(tp, table)
    inside = re.compile(f"[{tp.char_class(ranges)}]")

    def listed(point: int) -> bool:
        return any(a <= point <= b for a, b in ranges)

    edges = {p for a, b in ranges for p in (a - 1, a, b, b + 1)
             if 0 <= p <= sys.maxunicode and not 0xD800 <= p <= 0xDFFF}
    assert [hex(p) for p in sorted(edges) if (inside.fullmatch(chr(p)) is not None) != listed(p)] == []
