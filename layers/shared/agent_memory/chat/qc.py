"""Deterministic quality control of REDCap records against their data dictionary.

Rules (docs/architecture.md, "Clinical data"), each finding naming subject, event, (repeat
instance,) field and kind:

- ``required_missing``: a field flagged required is empty in a form that was started in that row
  (any value of the form, or a completion status set); a field whose branching logic is a simple
  ``[field] = 'v'`` / ``<>`` condition is required only when the condition holds, one with other
  branching logic is not checked;
- ``out_of_range``: a number or date outside the field's validation min / max; ``invalid_value``:
  not a number / not a ``YYYY-MM-DD`` date where one is required;
- ``date_order``: a date field recorded at several events goes backwards in the project's event
  order, or an event's first date is earlier than the previous event's first date (non-repeating
  rows, per subject);
- ``form_incomplete``: a form's completion status is "incomplete" (``0``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any

from agent_memory.domain.clinical import DataDictionary, FieldDef
from agent_memory.domain.llm import ToolSpec

QC_CHECK = ToolSpec(
    name="qc_check",
    description=(
        "Quality-control check of CURRENT data against the data dictionary: required fields missing, "
        "values outside validation ranges, dates out of order between events, incomplete forms. Returns "
        "findings (subject, event, field, kind, value, expected) to explain; identifier fields are never "
        "checked or shown."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "subject_ids": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string", "enum": ["all"]}],
                "description": 'Subject ids such as ["P007"], or "all".',
            },
            "forms": {"type": "array", "items": {"type": "string"}, "description": "Only these forms."},
        },
        "required": ["subject_ids"],
        "additionalProperties": False,
    },
)

_SIMPLE_BRANCH = re.compile(r"^\s*\[([a-z0-9_]+)\]\s*(=|<>|!=)\s*['\"]?([^'\"]*)['\"]?\s*$", re.IGNORECASE)


def _date(value: str) -> date | None:
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _branch_applies(f: FieldDef, row: dict[str, Any]) -> bool | None:
    """True / False for a simple branching condition (or none); None when it cannot be evaluated."""
    if not f.branching.strip():
        return True
    m = _SIMPLE_BRANCH.match(f.branching)
    if m is None:
        return None
    actual = str(row.get(m.group(1), ""))
    return (actual == m.group(3)) if m.group(2) == "=" else (actual != m.group(3))


def _range_finding(f: FieldDef, value: str) -> dict[str, Any] | None:
    if f.is_date:
        d = _date(value)
        if d is None:
            return {"kind": "invalid_value", "value": value, "expected": "a date YYYY-MM-DD"}
        lo, hi = _date(f.minimum) if f.minimum else None, _date(f.maximum) if f.maximum else None
        if (lo and d < lo) or (hi and d > hi):
            return {"kind": "out_of_range", "value": value, "expected": f"{f.minimum or '…'} – {f.maximum or '…'}"}
    elif f.is_number and f.field_type != "calc":
        n = _number(value)
        if n is None:
            return {"kind": "invalid_value", "value": value, "expected": f"a number ({f.validation})"}
        lo_n = _number(f.minimum) if f.minimum else None
        hi_n = _number(f.maximum) if f.maximum else None
        if (lo_n is not None and n < lo_n) or (hi_n is not None and n > hi_n):
            return {"kind": "out_of_range", "value": value, "expected": f"{f.minimum or '…'} – {f.maximum or '…'}"}
    return None


def qc_findings(
    dd: DataDictionary, rows: Sequence[dict[str, Any]], *, forms: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The findings of the rules above over flat REDCap ``rows`` (see module docstring), in
    subject, event order. Identifier fields are skipped."""
    rid = dd.record_id_field
    checked_forms = [f for f in dd.forms if not forms or f in forms]
    findings: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str, str]] = set()

    def add(row: dict[str, Any], f: FieldDef | None, field_name: str, finding: dict[str, Any]) -> None:
        event = str(row.get("redcap_event_name", ""))
        key = (str(row.get(rid, "")), event, field_name, str(row.get("redcap_repeat_instance", "")))
        if (*key[:3], finding["kind"]) in seen:
            return
        seen.add((*key[:3], finding["kind"]))
        ev = dd.event(event)
        item: dict[str, Any] = {"subject_id": key[0], "event": event, "field": field_name, **finding}
        if ev is not None:
            item["event_label"] = ev.label
        if f is not None:
            item["label"] = f.label
        if row.get("redcap_repeat_instrument"):
            item["instance"] = row.get("redcap_repeat_instance")
        findings.append(item)

    for row in rows:
        instrument = str(row.get("redcap_repeat_instrument") or "")
        for form in checked_forms:
            if (instrument and form != instrument) or (not instrument and form in dd.repeating):
                continue
            fields = [f for f in dd.fields if f.form == form and f.name != rid and not f.identifier]
            status = str(row.get(f"{form}_complete", "") or "")
            if not status and not any(_has_value(f, row) for f in fields):
                continue  # the form was not started in this row
            if status == "0":
                add(row, None, f"{form}_complete", {"kind": "form_incomplete", "form": form})
            for f in fields:
                problem = _field_finding(f, row)
                if problem is not None:
                    add(row, f, f.name, problem)
    findings += _date_order(dd, rows, checked_forms, seen)
    order = {e.unique_name: i for i, e in enumerate(dd.events)}
    findings.sort(key=lambda x: (x["subject_id"], order.get(x["event"], 99)))
    return findings


def _field_finding(f: FieldDef, row: dict[str, Any]) -> dict[str, Any] | None:
    """A required value missing, or a value outside its range / of the wrong kind; else None."""
    if f.required and not _has_value(f, row) and _branch_applies(f, row) is True:
        return {"kind": "required_missing"}
    value = str(row.get(f.name, "") or "")
    if value and f.field_type != "checkbox":
        return _range_finding(f, value)
    return None


def _has_value(f: FieldDef, row: dict[str, Any]) -> bool:
    if f.field_type == "checkbox":
        return any(str(row.get(f"{f.name}___{c}", "")) == "1" for c in f.choices)
    return bool(str(row.get(f.name, "") or "").strip())


def _date_order(
    dd: DataDictionary, rows: Sequence[dict[str, Any]], forms: Sequence[str], seen: set[tuple[str, str, str, str]]
) -> list[dict[str, Any]]:
    rid = dd.record_id_field
    date_fields = [f for f in dd.fields if f.is_date and not f.identifier and f.form not in dd.repeating]
    by_subject: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if not r.get("redcap_repeat_instrument"):
            by_subject.setdefault(str(r.get(rid, "")), []).append(r)
    out: list[dict[str, Any]] = []
    for sid, subject_rows in by_subject.items():
        subject_rows.sort(key=lambda r: dd.event_order(str(r.get("redcap_event_name", ""))))
        # The same date field at several events, and each event's first date, must not go backwards.
        last: dict[str, tuple[date, str]] = {}
        prev_first: tuple[date, str, str] | None = None
        for r in subject_rows:
            event = str(r.get("redcap_event_name", ""))
            first: tuple[date, str] | None = None
            for f in date_fields:
                d = _date(str(r.get(f.name, "") or ""))
                if d is None:
                    continue
                if first is None:
                    first = (d, f.name)
                before = last.get(f.name)
                if before is not None and d < before[0] and f.form in forms:
                    _order(out, seen, dd, sid, event, f, r, f"on or after {before[0].isoformat()} ({before[1]})")
                last[f.name] = (d, event)
            if first is not None:
                first_field = dd.field(first[1])
                if prev_first is not None and first[0] < prev_first[0] and first_field is not None \
                        and first_field.form in forms:
                    expected = f"on or after {prev_first[0].isoformat()} ({prev_first[1]} {prev_first[2]})"
                    _order(out, seen, dd, sid, event, first_field, r, expected)
                prev_first = (first[0], first[1], event)
    return out


def _order(out: list[dict[str, Any]], seen: set[tuple[str, str, str, str]], dd: DataDictionary, sid: str,
           event: str, f: FieldDef, row: dict[str, Any], expected: str) -> None:
    if (sid, event, f.name, "date_order") in seen:
        return
    seen.add((sid, event, f.name, "date_order"))
    ev = dd.event(event)
    out.append({"subject_id": sid, "event": event, "event_label": ev.label if ev else event, "field": f.name,
                "label": f.label, "kind": "date_order", "value": str(row.get(f.name, "")), "expected": expected})


__all__ = ["QC_CHECK", "qc_findings"]
