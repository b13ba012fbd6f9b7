"""Clinical data in REDCap's terms: the data dictionary, events, and the source's failures.

Pure types read from REDCap's own export formats (API ``content=metadata`` / ``event``; the
field names are REDCap's): the adapter turns API rows into these, the chat's clinical tools read
them. Nothing here performs I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: REDCap validation types that hold a calendar date or a date-time (``text_validation_type_or_show_slider_number``).
DATE_VALIDATIONS = frozenset({
    "date_ymd", "date_mdy", "date_dmy", "datetime_ymd", "datetime_mdy", "datetime_dmy",
    "datetime_seconds_ymd", "datetime_seconds_mdy", "datetime_seconds_dmy",
})
#: REDCap validation types that hold a number.
NUMBER_VALIDATIONS = frozenset({"integer", "number", "number_1dp", "number_2dp", "float", "int"})
#: Field types that hold free text (scrubbed of identifiers before any result leaves the tools).
FREE_TEXT_TYPES = frozenset({"notes", "text"})
#: Field types that carry no value of their own.
NO_VALUE_TYPES = frozenset({"descriptive"})


class ClinicalSourceError(Exception):
    """The clinical data source failed; the message never contains a token or a value."""


class ClinicalSourceUnavailable(ClinicalSourceError):
    """The source could not be reached, was too slow for the turn's deadline, or kept rate-limiting."""


class ClinicalSourceAuthError(ClinicalSourceError):
    """The source refused the project's credentials (REDCap: HTTP 403) or the token is unusable."""


class ClinicalSourceRejected(ClinicalSourceError):
    """The source rejected the request itself (REDCap: HTTP 400 with an ``error`` body)."""


class ClinicalSourceTokenMissing(ClinicalSourceError):
    """The project has no REDCap token for its API URL: never set, removed, or set for another URL
    (a token is bound to the URL it was given for). Nothing was sent to the source."""


class ClinicalSourceTokenSetAgain(ClinicalSourceTokenMissing):
    """The project's source names a secret (``token_secret``, set before the service owned the
    tokens): never used, since any secret could have been named; an admin sets the token again.
    Nothing was sent to the source."""


class ClinicalSourceTokenUnreadable(ClinicalSourceError):
    """The project's REDCap token exists but cannot be read (access denied, the key refused, not in
    the service's format). Nothing was sent to the source."""


class ClinicalSourceEgressRefused(ClinicalSourceError):
    """The egress policy refuses the source's URL or the address it reached (docs/architecture.md,
    "Egress policy"). Nothing was sent to the source."""


@dataclass(frozen=True)
class FieldDef:
    """One field of the data dictionary (one ``content=metadata`` row).

    ``choices``: code -> label of radio / dropdown / checkbox / yesno fields; ``minimum`` /
    ``maximum``: the validation range as REDCap stores it (text: a number or a ``YYYY-MM-DD`` date);
    ``identifier``: REDCap's "Identifier?" flag (the value is never shown to the model).
    """

    name: str
    form: str
    field_type: str
    label: str
    validation: str = ""
    minimum: str = ""
    maximum: str = ""
    required: bool = False
    identifier: bool = False
    choices: dict[str, str] = field(default_factory=dict)
    branching: str = ""

    @property
    def is_date(self) -> bool:
        return self.validation in DATE_VALIDATIONS

    @property
    def is_number(self) -> bool:
        return self.validation in NUMBER_VALIDATIONS or self.field_type == "calc"

    @property
    def is_free_text(self) -> bool:
        return self.field_type in FREE_TEXT_TYPES and not self.is_date and not self.is_number

    @classmethod
    def from_metadata(cls, row: dict[str, Any]) -> FieldDef:
        """A field from one REDCap metadata row (``field_name``, ``form_name``, ``field_type``,
        ``field_label``, ``select_choices_or_calculations`` ``"1, A | 2, B"``,
        ``text_validation_type_or_show_slider_number``, ``text_validation_min/max``,
        ``required_field`` ``y``/empty, ``identifier`` ``y``/empty, ``branching_logic``)."""
        field_type = str(row.get("field_type", ""))
        choices: dict[str, str] = {}
        if field_type in ("radio", "dropdown", "checkbox"):
            choices = parse_choices(str(row.get("select_choices_or_calculations", "")))
        elif field_type == "yesno":
            choices = {"1": "Yes", "0": "No"}
        elif field_type == "truefalse":
            choices = {"1": "True", "0": "False"}
        return cls(
            name=str(row["field_name"]),
            form=str(row.get("form_name", "")),
            field_type=field_type,
            label=str(row.get("field_label", "")),
            validation=str(row.get("text_validation_type_or_show_slider_number", "") or ""),
            minimum=str(row.get("text_validation_min", "") or ""),
            maximum=str(row.get("text_validation_max", "") or ""),
            required=str(row.get("required_field", "")).lower() == "y",
            identifier=str(row.get("identifier", "")).lower() == "y",
            choices=choices,
            branching=str(row.get("branching_logic", "") or ""),
        )


def parse_choices(text: str) -> dict[str, str]:
    """REDCap's choice list ``"1, Male | 2, Female"`` -> ``{"1": "Male", "2": "Female"}``."""
    out: dict[str, str] = {}
    for part in text.split("|"):
        code, sep, label = part.strip().partition(",")
        if sep and code.strip():
            out[code.strip()] = label.strip()
    return out


@dataclass(frozen=True)
class ClinicalEvent:
    """One longitudinal event (``content=event``): unique name, label, arm, day offset, and the
    forms mapped to it (``content=formEventMapping``), in the project's event order."""

    unique_name: str
    label: str
    arm: int = 1
    day_offset: float = 0.0
    forms: tuple[str, ...] = ()


@dataclass(frozen=True)
class DataDictionary:
    """A project's data dictionary: fields in their order, the record-id field (the first field,
    as in REDCap), events (empty for a classic project), arms (number -> name) and repeating
    instruments."""

    fields: tuple[FieldDef, ...]
    events: tuple[ClinicalEvent, ...] = ()
    repeating: frozenset[str] = frozenset()
    title: str = ""
    arms: dict[int, str] = field(default_factory=dict)

    @property
    def record_id_field(self) -> str:
        return self.fields[0].name if self.fields else "record_id"

    @property
    def forms(self) -> list[str]:
        seen: list[str] = []
        for f in self.fields:
            if f.form not in seen:
                seen.append(f.form)
        return seen

    def field(self, name: str) -> FieldDef | None:
        """The field named ``name``; a checkbox column ``name___code`` and a form's
        ``<form>_complete`` column resolve to their field / None."""
        base = name.split("___", 1)[0]
        for f in self.fields:
            if f.name == base:
                return f
        return None

    @property
    def identifiers(self) -> frozenset[str]:
        """Names of the fields flagged as identifiers."""
        return frozenset(f.name for f in self.fields if f.identifier)

    def event(self, unique_name: str) -> ClinicalEvent | None:
        for e in self.events:
            if e.unique_name == unique_name:
                return e
        return None

    def event_order(self, unique_name: str) -> int:
        """Position of an event (unknown events last)."""
        for i, e in enumerate(self.events):
            if e.unique_name == unique_name:
                return i
        return len(self.events)


# ------------------------------------------------------------------ identifier-field values
#: (kind, pattern on "field_name field_label" lowercased), first match wins: what an identifier
#: field holds. ``surname`` / ``given_name`` parts are joined into one ``name`` per subject.
_IDENTIFIER_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in (
        ("email", r"e-?mail|邮箱|邮件"),
        ("phone", r"phone|(?<![a-z])tel(?![a-z])|mobile|(?<![a-z])cell|(?<![a-z])fax|手机|电话|联系方式|传真"),
        ("passport", r"passport|护照"),
        ("insurance_number", r"insurance|医保|社保"),
        ("resident_id", r"resident|national.?id|id.?card|(?<![a-z])id.?(?:number|no)|身份证|证件"),
        ("record_number", r"(?<![a-z])mrn|住院号|病案|病历号|门诊号|hosp(?:ital)?.?(?:no|num|id)|medical.?record"
                          r"|inpatient|outpatient"),
        ("address", r"address|(?<![a-z])addr|地址|住址|residence"),
        ("surname", r"last.?name|surname|family.?name|姓氏|(?<!\w)姓(?!\w)"),
        ("given_name", r"first.?name|given.?name|(?<!\w)名(?!\w)"),
        ("name", r"name|姓名|名字"),
    )
)


def identifier_kind(f: FieldDef) -> str | None:
    """What an identifier field holds, as a scrubber kind (``name``, ``phone``, ``email``,
    ``resident_id``, ``record_number``, ``insurance_number``, ``passport``, ``address``,
    ``surname`` / ``given_name`` parts, or ``identifier`` for any other text), or None for a field
    that is not an identifier or whose values are dates, numbers or choices: those are everywhere
    in clinical text and would withhold visit dates and lab values (docs/architecture.md, "Identifiers")."""
    if not f.identifier or f.field_type not in FREE_TEXT_TYPES or f.choices:
        return None
    if f.validation == "email":
        return "email"
    if f.validation.startswith("phone"):
        return "phone"
    if f.is_date or f.is_number or f.validation in ("time", "time_mm_ss", "zipcode", "postalcode_china"):
        return None
    key = f"{f.name} {f.label}".lower()
    for kind, pattern in _IDENTIFIER_KINDS:
        if pattern.search(key):
            return kind
    return "identifier"


@dataclass(frozen=True)
class IdentifierValue:
    """One value of a subject's identifier field, as read from the source; held only while the
    subject identifier index hashes it (``value`` is left out of ``repr``)."""

    subject_id: str
    kind: str
    value: str = field(repr=False)


def subject_identifier_values(dd: DataDictionary, rows: Iterable[dict[str, Any]]) -> list[IdentifierValue]:
    """The identifier values of exported records (REDCap flat rows): one per subject, kind and
    distinct value; a surname and a given name of one subject become one ``name`` (a name part
    alone is not kept: a surname matches half the text of a project)."""
    kinds = {f.name: k for f in dd.fields if (k := identifier_kind(f)) is not None}
    out: dict[tuple[str, str, str], IdentifierValue] = {}
    parts: dict[str, dict[str, str]] = {}
    for row in rows:
        subject = str(row.get(dd.record_id_field, "")).strip()
        if not subject:
            continue
        for name, kind in kinds.items():
            value = str(row.get(name) or "").strip()
            if not value:
                continue
            if kind in ("surname", "given_name"):
                parts.setdefault(subject, {})[kind] = value
            else:
                out.setdefault((subject, kind, value), IdentifierValue(subject, kind, value))
    for subject, p in parts.items():
        if "surname" in p and "given_name" in p:
            sep = "" if p["surname"].isalpha() and not p["surname"].isascii() else " "
            value = f"{p['surname']}{sep}{p['given_name']}"
            out.setdefault((subject, "name", value), IdentifierValue(subject, "name", value))
    return list(out.values())


__all__ = [
    "ClinicalEvent", "ClinicalSourceAuthError", "ClinicalSourceError", "ClinicalSourceRejected",
    "ClinicalSourceUnavailable", "DataDictionary", "FieldDef", "IdentifierValue", "identifier_kind", "parse_choices",
    "subject_identifier_values",
]
