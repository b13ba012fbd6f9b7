"""The text rules the server applies to request fields, as JSON-Schema ``pattern`` s for the OpenAPI
document (docs/architecture.md, "API contract").

The server applies the rules in code (``agent_memory.domain.text.content_problem``, the request
models' validators); these patterns state the same rules to clients and to schemathesis, character
class by character class, from the same Unicode properties (``str.isspace``, the categories Cc
and Cf; their code point ranges are written out below, so that importing this module costs nothing).
``tests/unit/test_text_patterns.py`` recomputes those ranges and checks every pattern against its
rule's code for every code point. Classes use ``\\uXXXX`` escapes in the Basic Multilingual Plane and the characters
themselves above it (a JSON-Schema pattern is an ECMA-262 regular expression in Unicode mode).
"""

from __future__ import annotations

#: C0 controls other than tab, newline and carriage return, and DEL: never part of a message
#: (``agent_memory.domain.text.content_problem``).
FORBIDDEN_CONTROLS = ((0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x7F))


def _char(point: int) -> str:
    return f"\\u{point:04x}" if point <= 0xFFFF else chr(point)


def char_class(*groups: tuple[tuple[int, int], ...]) -> str:
    """The inside of a character class holding every range of ``groups`` (merged)."""
    merged: list[list[int]] = []
    for a, b in sorted(r for group in groups for r in group):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in merged)


#: Whitespace as ``str.strip`` and ``str.isspace`` see it (code point ranges, inclusive).
WHITESPACE = ((0x09, 0x0D), (0x1C, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
              (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
#: Invisible format characters (category Cf: zero-width spaces and joiners, bidi marks, the BOM).
FORMAT = ((0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891),
          (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064),
          (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
          (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F))
#: Control characters (category Cc).
CONTROL = ((0x00, 0x1F), (0x7F, 0x9F))
#: The Unicode version the three tables above are taken from (``unicodedata.unidata_version`` of
#: Python 3.13); ``tests/unit/test_text_patterns.py`` recomputes them and fails when it changes.
UNICODE_VERSION = "15.1.0"

_F = char_class(FORBIDDEN_CONTROLS)
_I = char_class(WHITESPACE, FORMAT)
_S = char_class(WHITESPACE)
_C = char_class(CONTROL, FORMAT)
_CS = char_class(CONTROL, FORMAT, WHITESPACE)

#: Message text (chat content, a transcript turn, a session name): no control character but tab,
#: newline and carriage return, and at least one visible character (not whitespace, not Cf).
VISIBLE_TEXT = f"^[^{_F}]*[^{_F}{_I}][^{_F}]*$"

#: A visible text, once stripped: ``(?:...)`` the stripped text (one visible character; or two or
#: more, starting and ending with a non-whitespace character, one of them visible), with any
#: whitespace around it.
_STRIPPED_VISIBLE = (
    f"[^{_F}{_I}]|[^{_F}{_I}][^{_F}]*[^{_F}{_S}]|[^{_F}{_S}][^{_F}]*[^{_F}{_I}]"
    f"|[^{_F}{_S}][^{_F}]*[^{_F}{_I}][^{_F}]*[^{_F}{_S}]"
)
#: Optional text the server strips (an answer's feedback reason and tags): blank (ignored), or a
#: visible text once stripped.
BLANK_OR_VISIBLE = f"^[{_S}]*(?:{_STRIPPED_VISIBLE})?[{_S}]*$"

#: A display text (a project's name, a member's display name): once stripped, not empty and
#: without any control or format character (Cc, Cf).
DISPLAY_TEXT = f"^[{_S}]*[^{_CS}](?:[^{_C}]*[^{_CS}])?[{_S}]*$"

#: Any text without a forbidden control character (a hot-memory document, a reason): C0 controls
#: but tab, newline and carriage return, and DEL, are refused.
NO_CONTROLS = f"^[^{_F}]*$"

#: Text that is not blank once stripped (a weekly report's corrected summary).
NOT_BLANK = f"[^{_S}]"


__all__ = [
    "BLANK_OR_VISIBLE", "CONTROL", "DISPLAY_TEXT", "FORBIDDEN_CONTROLS", "FORMAT", "NOT_BLANK", "UNICODE_VERSION",
    "VISIBLE_TEXT", "WHITESPACE", "char_class",
]
