"""Identifier scrubbing of free text before it reaches the LLM (docs/architecture.md, "Clinical data").

:func:`scrub_text` replaces, in this order: Chinese resident identity numbers (GB 11643-1999:
17 digits and an ISO 7064 MOD 11-2 check character; only numbers whose check character is right
are taken, so lab numbers and other long digit runs stay), e-mail addresses, mainland mobile
numbers (``1[3-9]`` + 9 digits, optionally ``+86``, with or without spaces / hyphens) and
landline numbers (a trunk ``0`` area code of 2-3 digits and a 7-8 digit number, optionally in
parentheses or with an extension). Each is counted by kind, so a call can report what it withheld.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

#: What a withheld value becomes, by kind (the model sees that something was there, not what).
PLACEHOLDER = {
    "resident_id": "[resident ID withheld]",
    "email": "[e-mail withheld]",
    "phone": "[phone number withheld]",
}

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"

_RESIDENT_ID = re.compile(r"(?<![0-9A-Za-z])\d{17}[0-9Xx](?![0-9A-Za-z])")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_MOBILE = re.compile(r"(?<![\d+])(?:(?:\+|00)?86[\s-]?)?1[3-9]\d(?:[\s-]?\d{4}){2}(?!\d)")
_LANDLINE = re.compile(
    r"(?<!\d)(?:\(0\d{2,3}\)\s?|0\d{2,3}[\s-]?)[2-9]\d{6,7}(?:\s?(?:ext\.?|转|-)\s?\d{1,5})?(?!\d)"
)


def resident_id_check_char(first17: str) -> str:
    """The check character (``0``-``9`` or ``X``) of the 17 leading digits of a resident ID."""
    total = sum(int(d) * w for d, w in zip(first17, _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11]


def is_resident_id(text: str) -> bool:
    """True when ``text`` is 18 characters with a valid GB 11643 check character."""
    return (
        len(text) == 18 and text[:17].isdigit() and text[17].upper() == resident_id_check_char(text[:17])
    )


def scrub_text(text: str) -> tuple[str, Counter[str]]:
    """``text`` with resident IDs, e-mail addresses, mobile and landline numbers replaced by
    :data:`PLACEHOLDER`, and how many of each kind were replaced (``Counter`` by kind:
    ``resident_id``, ``email``, ``phone``)."""
    counts: Counter[str] = Counter()

    def ids(m: re.Match[str]) -> str:
        if not is_resident_id(m.group(0)):
            return m.group(0)
        counts["resident_id"] += 1
        return PLACEHOLDER["resident_id"]

    def sub(kind: str) -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            counts[kind] += 1
            return PLACEHOLDER[kind]
        return repl

    out = _RESIDENT_ID.sub(ids, text)
    out = _EMAIL.sub(sub("email"), out)
    out = _MOBILE.sub(sub("phone"), out)
    out = _LANDLINE.sub(sub("phone"), out)
    return out, counts


__all__ = ["PLACEHOLDER", "is_resident_id", "resident_id_check_char", "scrub_text"]
