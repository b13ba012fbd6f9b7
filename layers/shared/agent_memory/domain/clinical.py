"""Clinical data in REDCap's terms: the data dictionary, events, and the source's failures.

Pure types read from REDCap's own export formats (API ``content=metadata`` / ``event``; the
field names are REDCap's): the adapter turns API rows into these, the chat's clinical tools read
them. Nothing here performs I/O.
"""

from __future__ import annotations

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


__all__ = [
    "ClinicalEvent", "ClinicalSourceAuthError", "ClinicalSourceError", "ClinicalSourceRejected",
    "ClinicalSourceUnavailable", "DataDictionary", "FieldDef", "parse_choices",
]
