"""THE identifier scrubber: typed text and tool results alike (docs/architecture.md, "Identifiers").

:func:`scrub` finds identifiers with the pattern detectors of
:mod:`agent_memory.domain.identifier_patterns` (resident IDs, phones, e-mail addresses, values
after a record-number / insurance / passport / ID label) and, when given, a ``known`` finder
(the project's subject identifier index: names, addresses, phones of its REDCap subjects),
merges overlapping spans, and replaces each span with a placeholder that keeps the meaning in
the text's language (``[电话已隐去]`` / ``[phone number withheld]``; ``[P004 的姓名已隐去]`` /
``[P004's name withheld]`` when the subject is known). It returns the text and how many spans of
each kind it withheld, never the values.

:func:`scrub_value` scrubs one value of a record with its label as context (``住院号: 123456``);
:func:`scrub_data` every string value of a JSON-like structure (a REDCap row, a stored window or
manifest). :func:`scrub_text` is the tool results' form (English placeholders, ``Counter`` by kind).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_memory.domain.identifier_patterns import (
    Withheld,
    find_pattern_identifiers,
    fold_width,
    is_resident_id,
    resident_id_check_char,
)

Language = Literal["zh", "en"]
#: A finder of known identifiers (the subject identifier index): spans of ``text``.
KnownFinder = Callable[[str], Iterable[Withheld]]

#: Every kind the scrubber withholds, with its name in each language.
KINDS: dict[str, tuple[str, str]] = {
    "resident_id": ("身份证号", "resident ID"),
    "phone": ("电话", "phone number"),
    "email": ("邮箱", "e-mail"),
    "record_number": ("病历号", "record number"),
    "insurance_number": ("医保/社保卡号", "insurance card number"),
    "passport": ("护照/通行证号", "passport number"),
    "name": ("姓名", "name"),
    "address": ("地址", "address"),
    "identifier": ("标识信息", "identifier"),
}

#: English placeholder by kind (tool results; the form earlier callers know).
PLACEHOLDER = {kind: f"[{en} withheld]" for kind, (_zh, en) in KINDS.items()}

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def placeholder(kind: str, lang: Language, subject: str | None = None) -> str:
    """What a withheld span becomes: ``[电话已隐去]`` / ``[phone number withheld]``, or with the
    subject ``[P004 的电话已隐去]`` / ``[P004's phone number withheld]``."""
    zh, en = KINDS.get(kind, KINDS["identifier"])
    if lang == "zh":
        return f"[{subject} 的{zh}已隐去]" if subject else f"[{zh}已隐去]"
    return f"[{subject}'s {en} withheld]" if subject else f"[{en} withheld]"


def text_language(text: str) -> Language:
    """``zh`` when the text has at least as many CJK characters as Latin words (code-switched
    Chinese chat counts as Chinese), else ``en``. :func:`scrub` reads it on the text without its
    identifiers."""
    return "zh" if len(_CJK.findall(text)) >= max(1, len(_LATIN_WORD.findall(text))) else "en"


@dataclass(frozen=True)
class Scrubbed:
    """The result of :func:`scrub`.

    Attributes:
        text: the text with every span replaced by its placeholder.
        counts: spans withheld by kind (``{"phone": 2}``); never the values.
        spans: the withheld spans as offsets into the ORIGINAL text, in text order.
    """

    text: str
    counts: dict[str, int] = field(default_factory=dict)
    spans: tuple[Withheld, ...] = ()

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds withheld, sorted (what a ``reject`` policy reports)."""
        return tuple(sorted(self.counts))

    @property
    def found(self) -> bool:
        return bool(self.spans)


def merge_spans(spans: Iterable[Withheld]) -> list[Withheld]:
    """Overlapping spans as one span covering them all. Its kind is that of a span covering the
    whole (a name inside an e-mail address is an e-mail address), of highest priority (a subject's
    value over a checked resident ID over a labelled value over a pattern); its subject is that of
    the highest-priority span of that kind (``+86`` widens a subject's phone, keeping the subject)."""
    groups: list[list[Withheld]] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if s.end <= s.start:
            continue
        if groups and s.start < max(x.end for x in groups[-1]):
            groups[-1].append(s)
        else:
            groups.append([s])
    return [_merged(g) for g in groups]


def _merged(group: list[Withheld]) -> Withheld:
    start, end = min(s.start for s in group), max(s.end for s in group)
    covering = [s for s in group if s.start == start and s.end == end] or group
    kind = max(covering, key=lambda s: (s.priority, s.end - s.start)).kind
    same = [s for s in group if s.kind == kind and s.subject is not None]
    subject = max(same, key=lambda s: s.priority).subject if same else None
    return Withheld(start, end, kind, subject, max(s.priority for s in group))


def find_identifiers(text: str, known: KnownFinder | None = None) -> list[Withheld]:
    """The spans :func:`scrub` withholds in ``text`` (merged, in text order)."""
    folded = fold_width(text)
    spans = find_pattern_identifiers(folded)
    if known is not None:
        spans.extend(known(text))
    return merge_spans(spans)


def scrub(text: str, *, known: KnownFinder | None = None, lang: Language | None = None) -> Scrubbed:
    """``text`` with its identifiers withheld (see the module docstring).

    Args:
        text: any text (a typed message, a transcript turn, a tool result's value).
        known: the project's subject identifier finder (``IdentifierIndex.find``), or None for
            the patterns alone.
        lang: the placeholders' language; None = the text's own (:func:`text_language`).
    """
    return _withheld(text, find_identifiers(text, known), lang)


def scrub_value(value: str, *, label: str | None = None, known: KnownFinder | None = None,
                lang: Language | None = None) -> Scrubbed:
    """One value of a record (a REDCap field, a JSON member) scrubbed as if written after its
    label (``住院号: 123456``): the label gives a bare number its meaning, as it would in a sentence,
    but only spans inside the value are withheld and counted (the label is never changed).

    Args:
        value: the value as stored (any field type: numbers, dates and codes pass untouched
            unless they are identifiers).
        label: the field's label or name (``住院号``, ``mrn``, ``Contact phone``); None = the value alone.
        known, lang: as :func:`scrub`; ``lang`` None = the language of label and value together.
    """
    if not label:
        return scrub(value, known=known, lang=lang)
    prefix = f"{label}: "
    at = len(prefix)
    spans = [Withheld(max(0, s.start - at), s.end - at, s.kind, s.subject, s.priority)
             for s in find_identifiers(prefix + value, known) if s.end > at]
    return _withheld(value, spans, lang or text_language(prefix + _without(value, spans)))


def _withheld(text: str, spans: list[Withheld], lang: Language | None) -> Scrubbed:
    """``text`` with each of ``spans`` (merged, in text order) replaced by its placeholder."""
    if not spans:
        return Scrubbed(text)
    language = lang or text_language(_without(text, spans))
    parts: list[str] = []
    at = 0
    for s in spans:
        parts.append(text[at:s.start])
        parts.append(placeholder(s.kind, language, s.subject))
        at = s.end
    parts.append(text[at:])
    counts = Counter(s.kind for s in spans)
    return Scrubbed("".join(parts), dict(sorted(counts.items())), tuple(spans))


def _without(text: str, spans: list[Withheld]) -> str:
    """``text`` without the spans: the identifiers themselves (an e-mail address, a pinyin name)
    say nothing about the language the placeholders are written in."""
    return " ".join(text[a:b] for a, b in zip([0, *(s.end for s in spans)], [*(s.start for s in spans), len(text)],
                                              strict=True))


#: Scrubs one string value given its label (the key it is stored under; None in a list).
ValueScrubber = Callable[[str, str | None], Scrubbed]


#: Keys whose values are never text a person wrote (ids, times, hashes, codes of the product's
#: own): :func:`scrub_data` leaves them as they are.
NOT_TEXT_KEYS = frozenset({
    "message_id", "session_id", "project_id", "user_id", "patient_id", "subject_id", "line_id", "review_id",
    "diagnosis_id", "reminder_id", "audit_id", "id", "tool_use_id", "evidence", "idempotency_hash", "at",
    "created_at", "updated_at", "added_at", "stated_at", "decided_at", "role", "status", "source", "section",
    "kind", "origin", "role_tag", "study_role", "version", "revision", "iso_week", "day", "type",
})


def scrub_data(data: Any, scrub_one: ValueScrubber, label: str | None = None, *,
               skip: frozenset[str] = NOT_TEXT_KEYS) -> tuple[Any, Counter[str]]:
    """Every string value in ``data`` (JSON-like: dicts, lists, strings, numbers) scrubbed by
    ``scrub_one(value, label)``, a member's key being its label; a string that is itself a JSON
    object or array (a stored tool result, a manifest) is scrubbed member by member and written
    back compact. Keys, numbers, booleans and the members named in ``skip`` (ids, times: never
    typed text) are kept. Returns the new data (``data`` itself when nothing was withheld) and
    the spans withheld by kind.
    """
    counts: Counter[str] = Counter()
    if isinstance(data, str):
        nested = _json_container(data)
        if nested is not None:
            inner, found = scrub_data(nested, scrub_one, label, skip=skip)
            return (json.dumps(inner, ensure_ascii=False) if found else data), found
        result = scrub_one(data, label)
        return (result.text if result.found else data), Counter(result.counts)
    if isinstance(data, dict):
        out: dict[Any, Any] = {}
        for key, value in data.items():
            out[key], found = (value, Counter[str]()) if key in skip else scrub_data(value, scrub_one, str(key),
                                                                                      skip=skip)
            counts.update(found)
        return (out if counts else data), counts
    if isinstance(data, list):
        items = []
        for value in data:
            item, found = scrub_data(value, scrub_one, label, skip=skip)
            items.append(item)
            counts.update(found)
        return (items if counts else data), counts
    return data, counts


def _json_container(text: str) -> dict[str, Any] | list[Any] | None:
    """``text`` parsed when it is a JSON object or array, else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        parsed = json.loads(stripped)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict | list) else None


def scrub_text(text: str) -> tuple[str, Counter[str]]:
    """Tool results' form of :func:`scrub`: English placeholders, counts as a ``Counter``."""
    result = scrub(text, lang="en")
    return result.text, Counter(result.counts)


__all__ = [
    "KINDS", "NOT_TEXT_KEYS", "PLACEHOLDER", "KnownFinder", "Language", "Scrubbed", "ValueScrubber", "Withheld",
    "find_identifiers", "is_resident_id", "merge_spans", "placeholder", "resident_id_check_char", "scrub",
    "scrub_data", "scrub_text", "scrub_value", "text_language",
]
