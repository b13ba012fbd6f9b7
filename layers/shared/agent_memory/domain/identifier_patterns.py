"""The pattern detectors of the identifier scrubber (docs/architecture.md, "Identifiers").

Pure and deterministic: every function takes text and returns :class:`Withheld` spans (offsets
into that text, a kind, never the value). :func:`find_pattern_identifiers` runs them all on text
folded by :func:`fold_width` (full-width ASCII and the ideographic space mapped one character to
one character, so the offsets are the original text's).

Kinds and their rules:

- ``resident_id``: GB 11643 numbers: 18 characters (17 digits and a digit or ``X``) whose first
  two digits are a province code and whose digits 7-14 are a calendar date between 1900 and
  2099, with or without a valid check character; 15-digit numbers of the pre-1999 form (province
  code, ``YYMMDD`` date). Groups of 2 or more digits may be separated by single spaces, hyphens
  or dots. A valid
  check character is withheld whatever surrounds it; the others are not withheld right after a
  label that names another kind of number (sample, lot, order, invoice: :data:`_NOT_PERSONAL`).
- ``phone``: mainland mobiles (``1[3-9]`` + 9 digits) with an optional ``+86`` / ``0086`` /
  ``86`` prefix; landlines with a trunk ``0`` and a real area-code shape (``010``, ``02x``,
  ``0[3-9]xx``) and a 7-8 digit number starting 2-9, ``+86`` without the trunk ``0``, area codes
  in parentheses, an extension after ``转`` / ``ext`` / ``分机``. A 7-8 digit number without an
  area code is a phone only right after a phone label in the same clause (``电话`` / ``座机`` /
  ``tel`` ...; :data:`_PHONE_LABEL`) and never when it reads as a ``YYYYMMDD`` date. Numbers
  right after a :data:`_NOT_PERSONAL` label (``样本号 13512345678``) are not phones.
- ``email``: addresses with a dotted domain, internationalised ones included (a Latin or quoted
  local part, domain labels in any script).
- ``record_number``, ``insurance_number``, ``passport``, ``resident_id``: the value right after
  a label (``住院号`` / ``病案号`` / ``MRN`` / ``hospital ID`` / ``医保卡号`` / ``insurance card`` /
  ``护照号`` / ``身份证号`` / ``ID number`` ..., then ``:`` ``：`` ``是`` ``为`` ``#`` or nothing),
  when it has the shape of such a number (digits, optionally after 1-4 letters, with hyphens;
  :data:`_LABELS`).

A digit run glued to letters or continuing a code (``NCT01234567``, ``IIT-2025-017-0032``,
``v2.13``, ``132/86``) is never a number of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

#: Full-width ASCII (U+FF01-U+FF5E) and the ideographic space, folded to ASCII one for one.
_FOLD = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


def fold_width(text: str) -> str:
    """``text`` with full-width ASCII forms and U+3000 as their ASCII forms (same length)."""
    return text.translate(_FOLD)


@dataclass(frozen=True)
class Withheld:
    """One span to withhold: ``text[start:end]`` (character offsets), its kind, and the subject
    it belongs to when known (a study subject id such as ``P004``; never the value itself)."""

    start: int
    end: int
    kind: str
    subject: str | None = None
    #: Which detector wins when spans overlap (subject index 3 > checked resident ID 2 > label 1 > pattern 0).
    priority: int = 0


# ---------------------------------------------------------------------------- dates and IDs
#: First two digits of GB 11643 numbers (GB/T 2260 province-level codes).
_PROVINCES = frozenset({
    "11", "12", "13", "14", "15", "21", "22", "23", "31", "32", "33", "34", "35", "36", "37",
    "41", "42", "43", "44", "45", "46", "50", "51", "52", "53", "54", "61", "62", "63", "64", "65",
    "71", "81", "82", "83",
})
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def resident_id_check_char(first17: str) -> str:
    """The check character (``0``-``9`` or ``X``) of the 17 leading digits of a resident ID
    (GB 11643-1999, ISO 7064 MOD 11-2)."""
    total = sum(int(d) * w for d, w in zip(first17, _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11]


def is_resident_id(text: str) -> bool:
    """True when ``text`` is 18 characters with a valid GB 11643 check character."""
    return (
        len(text) == 18 and text[:17].isdigit() and text[17].upper() == resident_id_check_char(text[:17])
    )


def plausible_date(year: int, month: int, day: int) -> bool:
    """A calendar date between 1900 and 2099 (29 February only in leap years)."""
    if not (1900 <= year <= 2099 and 1 <= month <= 12 and 1 <= day <= _DAYS[month - 1]):
        return False
    return not (month == 2 and day == 29 and (year % 4 or (year % 100 == 0 and year % 400)))


def _ymd(digits: str) -> bool:
    return len(digits) == 8 and plausible_date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))


def resident_id_shape(digits: str) -> str | None:
    """``"checked"`` (18 characters, valid check character), ``"plausible"`` (18 with a province
    code and birth date, or the 15-digit form with both) or None, for digits without separators."""
    if len(digits) == 18 and digits[:17].isdigit() and digits[17] in "0123456789Xx":
        if digits[:2] not in _PROVINCES or not _ymd(digits[6:14]):
            return None
        return "checked" if is_resident_id(digits) else "plausible"
    if len(digits) == 15 and digits.isdigit() and digits[:2] in _PROVINCES:
        return "plausible" if _ymd("19" + digits[6:12]) else None
    return None


# ---------------------------------------------------------------------------------- phones
def _area_code(digits: str) -> int:
    """Length of the trunk-0 area code ``digits`` starts with (3 or 4), or 0."""
    if digits.startswith("010") or (digits.startswith("02") and len(digits) > 2):
        return 3
    if len(digits) > 3 and digits[0] == "0" and digits[1] in "3456789" and digits[2] != "0":
        return 4
    return 0


def _landline(digits: str, groups: list[str]) -> bool:
    """A trunk-0 landline: area code, then 7-8 digits starting 2-9; when typed in groups, the
    first group is the area code."""
    area = _area_code(digits)
    rest = digits[area:]
    if not area or len(rest) not in (7, 8) or rest[0] in "01":
        return False
    return len(groups) == 1 or len(groups[0]) == area


def _mobile(digits: str) -> bool:
    return len(digits) == 11 and digits[0] == "1" and digits[1] in "3456789"


def _country_prefix(groups: list[str]) -> tuple[int, str]:
    """(groups taken by a leading 86 / 0086, the digits after it) for a prefixed number."""
    if groups[0] in ("86", "0086"):
        return 1, "".join(groups[1:])
    joined = "".join(groups)
    for prefix in ("0086", "86"):
        if joined.startswith(prefix) and len(groups) == 1:
            return 0, joined[len(prefix):]
    return 0, ""


def phone_shape(groups: list[str]) -> bool:
    """True when the digit groups (as typed, separators removed) are a mobile or an area-coded
    landline, with or without a country prefix (then the area code has no trunk 0: ``+86 10 ...``).
    Every group has >= 3 digits but a country code and an area code after it."""
    taken, rest = _country_prefix(groups)
    if rest:
        body = groups[taken:] if taken else [rest]
        if len(body[0]) < 2 or any(len(g) < 3 for g in body[1:]):
            return False
        return _mobile(rest) or _landline("0" + rest, ["0" + body[0], *body[1:]])
    if any(len(g) < 3 for g in groups):
        return False
    digits = "".join(groups)
    return _mobile(digits) or _landline(digits, groups)


def local_number_shape(groups: list[str]) -> bool:
    """A 7-8 digit number without area code (``62345678``, ``8888 6666``) that is not a date."""
    digits = "".join(groups)
    if len(digits) not in (7, 8) or digits[0] in "01" or any(len(g) < 3 for g in groups):
        return False
    return not _ymd(digits)


# ------------------------------------------------------------------------- context labels
#: Labels naming a number that is not a person's: right before a number, it is not a phone and
#: (unless its check character is valid) not a resident ID.
_NOT_PERSONAL = re.compile(
    r"(?:样本|标本|条码|条形码|批号|批次|试剂盒|订单|发票|快递|运单|单号|流水号|序列号|编号|会议号|设备"
    r"|(?<![A-Za-z])(?:accession|specimen|sample|barcode|lot|batch|kit|order|invoice|tracking|serial"
    r"|shipment|meeting|isbn)(?![A-Za-z]))",
    re.IGNORECASE,
)
#: Labels naming a phone number: a 7-8 digit number right after one (same clause) is a phone.
_PHONE_LABEL = re.compile(
    r"(?:电话|座机|固话|手机|联系方式|传真|(?<![A-Za-z])(?:tel|phone|landline|fax|mobile|call)(?![A-Za-z]))",
    re.IGNORECASE,
)
#: What ends a clause: a label before it does not reach a number after it.
_CLAUSE_END = re.compile(r"[，。；;！？!?,\n]|(?<=\D)\.\s")
_LABEL_REACH = 24


def _clause_before(text: str, start: int) -> str:
    """The text of the clause before ``start`` (at most :data:`_LABEL_REACH` characters)."""
    window = text[max(0, start - _LABEL_REACH):start]
    ends = list(_CLAUSE_END.finditer(window))
    return window[ends[-1].end():] if ends else window


# ---------------------------------------------------------------------------- digit runs
#: A run of digit groups separated by single spaces, hyphens or dots, optionally ending in X;
#: not glued to letters and not the continuation of a code (``IIT-2025``, ``v2.13``, ``132/86``).
_RUN = re.compile(
    r"(?<![0-9A-Za-z_])(?<![0-9A-Za-z][-_/])(?<![0-9]\.)"
    r"\d+(?:[ .-]\d+)*(?:[Xx])?"
    r"(?![0-9A-Za-z_])(?![-_][A-Za-z])"
)
_GROUP = re.compile(r"\d+[Xx]?")
#: The most digits a number looked for has (``0086`` and an 11-digit mobile; an 18-digit ID).
_LONGEST = 18
_PHONE_LEFT = re.compile(r"(?:\(\+?(?:00)?86\)[ -]?|\+)$")
_EXTENSION = re.compile(r"^\s?(?:转|ext\.?|分机|x)\s?\d{1,5}(?!\d)", re.IGNORECASE)
#: An area code in parentheses, with its trunk 0 or after a country code without it:
#: ``(021) 6234 5678``, ``+86 (571) 8765 4321``, ``+86 (0)571 8765 4321``.
_PAREN_LANDLINE = re.compile(
    r"(?:(?<![0-9A-Za-z])\((0\d{2,3})\)|(?:\+|(?<![0-9A-Za-z]))(?:00)?86[ -]?(?:\(0\)\s?|\((?=[1-9]\d{1,2}\)))"
    r"([1-9]\d{1,2})\)?)\s?(\d{3,4})[ -]?(\d{4})(?!\d)"
)


def _classify(text: str, groups: list[re.Match[str]], label: str) -> tuple[str, int] | None:
    """(kind, priority) of the digit groups as one number, or None."""
    parts = [g.group(0) for g in groups]
    digits = "".join(parts)
    blocked = _NOT_PERSONAL.search(label) is not None
    # An ID is typed in groups of 2 or more (6-8-4, 4-4-4-4-2), never digit by digit.
    shape = resident_id_shape(digits) if all(len(p) >= 2 for p in parts) else None
    if shape == "checked":
        return "resident_id", 2
    if shape == "plausible" and not blocked:
        return "resident_id", 0
    if blocked or not digits.isdigit():
        return None
    if phone_shape(parts):
        return "phone", 0
    if _PHONE_LABEL.search(label) and local_number_shape(parts):
        return "phone", 0
    return None


def _digit_numbers(text: str) -> Iterator[Withheld]:
    """Resident IDs and phones among the digit runs of ``text``: within a run, the longest group
    sequence from each group that is one of them (a run may hold a date and a phone, two phones)."""
    for run in _RUN.finditer(text):
        groups = list(_GROUP.finditer(text, run.start(), run.end()))
        i = 0
        while i < len(groups):
            label = _clause_before(text, groups[i].start())
            for j in range(_last_group(groups, i), i, -1):
                found = _classify(text, groups[i:j], label)
                if found is not None:
                    yield _span(text, groups[i].start(), groups[j - 1].end(), *found)
                    i = j
                    break
            else:
                i += 1


def _last_group(groups: list[re.Match[str]], i: int) -> int:
    """The end (exclusive) of the longest group sequence from ``i`` that is not longer than any
    number looked for (:data:`_LONGEST` digits), so that a long run costs linear time."""
    total, j = 0, i
    while j < len(groups) and total + len(groups[j].group(0)) <= _LONGEST:
        total += len(groups[j].group(0))
        j += 1
    return max(j, i + 1)


def _span(text: str, start: int, end: int, kind: str, priority: int) -> Withheld:
    """A span, a phone's widened by its country-code prefix and extension."""
    if kind == "phone":
        left = _PHONE_LEFT.search(text, max(0, start - 8), start)
        if left is not None:
            start = left.start()
        ext = _EXTENSION.match(text[end:end + 12])
        if ext is not None:
            end += ext.end()
    return Withheld(start, end, kind, priority=priority)


def _parenthesised_landlines(text: str) -> Iterator[Withheld]:
    for m in _PAREN_LANDLINE.finditer(text):
        area = m.group(1) or "0" + m.group(2)
        if _area_code(area + m.group(3)) == len(area) and m.group(3)[0] not in "01":
            yield _span(text, m.start(), m.end(), "phone", 0)


# ---------------------------------------------------------------------------------- e-mail
#: The Latin letters an address's local part may hold besides ASCII (internationalised mailboxes:
#: ``müller@…``); CJK characters are left out so the words before an address are never taken in.
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
#: Internationalised top-level domains written in their own script (RFC 5890 labels) that clinical
#: teams meet (China, Hong Kong, Taiwan, Singapore, company / network registries, Russia); any other
#: IDN TLD is matched in its ASCII form (``xn--…``).
_IDN_TLDS = "中国|中國|公司|网络|網絡|香港|台湾|台灣|新加坡|在线|集团|рф"
#: An e-mail address: a local part (ASCII atext and Latin letters, or a quoted string) and a dotted
#: domain whose labels may be in any script (``wang@医院.cn``, ``zhang.san@医院.中国``,
#: ``"li si"@example.com``); the top-level domain is ASCII letters, an ``xn--`` label or an IDN TLD
#: above. Not glued to letters or digits.
EMAIL = re.compile(
    r"(?:(?<![" + _LATIN + r"0-9._%+-])[" + _LATIN + r"0-9._%+-]+|\"[^\"\r\n]{1,64}\")"
    r"@[^\W_](?:[\w-]*[^\W_])?(?:\.[^\W_](?:[\w-]*[^\W_])?)*"
    r"\.(?:[A-Za-z]{2,}(?![A-Za-z0-9-])|xn--[A-Za-z0-9-]+|(?:" + _IDN_TLDS + r"))"
)


def _emails(text: str) -> Iterator[Withheld]:
    for m in EMAIL.finditer(text):
        yield Withheld(m.start(), m.end(), "email")


# ---------------------------------------------------------------------------- label values
_EN = r"(?<![A-Za-z])"
_NO = r"(?:\s?(?:number|no\.?|num\.?|#))"
#: What ends an English record or insurance label: a number word, or the document's noun ("hospital
#: ID", "insurance card", "social security card number").
_NOUN = rf"(?:{_NO}|\s?ID|\s?card{_NO}?)"
#: kind -> label alternatives (Chinese, then English; matched case-insensitively).
_LABELS: dict[str, str] = {
    "record_number": (
        r"住院号码|住院号|病案号码|病案号|病历号码|病历号|门诊号码|门诊号|就诊卡号|就诊号"
        rf"|{_EN}MRN|{_EN}(?:medical\s+record|hospital|inpatient|outpatient|admission|chart|clinic){_NOUN}"
    ),
    "insurance_number": (
        r"医保卡号码?|医保号码?|医保卡|社保卡号码?|社保号码?|社保卡|社会保障卡号|社会保障号码?"
        rf"|{_EN}(?:(?:medical|health)\s+)?insurance{_NOUN}|{_EN}social\s+security{_NOUN}"
    ),
    "passport": (
        r"护照号码|护照号|护照|(?:港澳|往来港澳|台湾|往来台湾|大陆居民往来台湾)?通行证(?:号码|号)?|台胞证(?:号码|号)?"
        rf"|回乡证(?:号码|号)?|{_EN}passport{_NO}?|{_EN}travel\s+permit{_NO}?"
    ),
    "resident_id": (
        r"身份证号码|身份证号|身份证|证件号码|证件号"
        rf"|{_EN}ID\s+card{_NO}?|{_EN}national\s+ID{_NO}?|{_EN}resident\s+ID{_NO}?"
    ),
    # "ID number" alone also heads study ids (Subject ID No. 0032): only a whole ID's length counts.
    "id_number": rf"{_EN}ID{_NO}",
}
#: Between a label and its value: separators and "the last four digits".
_SEP = r"\s?(?:[:#=]|是|为|is|后四位|后4位|末四位|尾号)?\s?(?:是|为)?\s?"
_VALUES: dict[str, str] = {
    "record_number": r"(?:[A-Za-z]{1,4}-?)?\d[0-9A-Za-z]*(?:-[0-9A-Za-z]+)*",
    "insurance_number": r"(?:[A-Za-z]{1,4}-?)?\d[0-9A-Za-z]*(?:-[0-9A-Za-z]+)*",
    "passport": r"[A-Za-z]{1,2}\d{6,9}|\d{7,9}",
    "resident_id": r"[0-9*][0-9*]*(?:[ -][0-9*]+)*[Xx]?",
    "id_number": r"[0-9*][0-9*]*(?:[ -][0-9*]+)*[Xx]?",
}
#: Least digits a labelled value has (a masked ID counts its ``*`` too).
_MIN_DIGITS = {"record_number": 4, "insurance_number": 6, "passport": 6, "resident_id": 4, "id_number": 15}
#: The kind a label's value is counted as.
_LABEL_KIND = {"id_number": "resident_id"}
_SPACED = re.compile(r"\d{2,6}(?: \d{2,})+")
_LABELLED = {
    kind: re.compile(
        rf"(?:{labels})(?:号码|号|编号)?(?:\s?[/、或]\s?(?:{'|'.join(_LABELS.values())}))*{_SEP}"
        rf"(?P<value>{_SPACED.pattern}(?![0-9A-Za-z])|{_VALUES[kind]})(?![0-9A-Za-z*])",
        re.IGNORECASE,
    )
    for kind, labels in _LABELS.items()
}


def _labelled_values(text: str) -> Iterator[Withheld]:
    for kind, pattern in _LABELLED.items():
        for m in pattern.finditer(text):
            value = m.group("value")
            if sum(c.isdigit() or c == "*" for c in value) < _MIN_DIGITS[kind]:
                continue
            yield Withheld(m.start("value"), m.end("value"), _LABEL_KIND.get(kind, kind), priority=1)


def find_pattern_identifiers(folded: str) -> list[Withheld]:
    """Every pattern match in ``folded`` (text after :func:`fold_width`), overlapping spans
    included (the caller merges them)."""
    spans: list[Withheld] = []
    spans.extend(_digit_numbers(folded))
    spans.extend(_parenthesised_landlines(folded))
    spans.extend(_emails(folded))
    spans.extend(_labelled_values(folded))
    return spans


__all__ = [
    "EMAIL", "Withheld", "find_pattern_identifiers", "fold_width", "is_resident_id", "local_number_shape",
    "phone_shape", "plausible_date", "resident_id_check_char", "resident_id_shape",
]
