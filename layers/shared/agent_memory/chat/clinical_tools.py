"""The clinical-data tools of the ReAct loop on a REDCap-style source (docs/architecture.md, "Clinical data").

- ``read_clinical_data(subject_id, fields?, event?)``: one subject's data by event, form and
  repeat instance, with choice labels and form completion status;
- ``list_subjects(status?)``: enrolment counts by status, enrolment dates;
- ``qc_check(subject_ids | "all", forms?)``: the data dictionary applied deterministically by
  :mod:`agent_memory.chat.qc` (required fields missing, values outside validation ranges, dates out
  of order between events, incomplete forms).

What is withheld, always: the values of fields the data dictionary flags as identifiers (never
even requested from the source), and in free text resident ID numbers, phone numbers and e-mail
addresses (:func:`agent_memory.domain.redaction.scrub_text`). :attr:`ClinicalToolSet.redactions`
counts them by kind for the call report.

One tool set serves one turn: the data dictionary is read once and each subject's export is
reused by every later call that needs the same or fewer fields (one export per subject per turn).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agent_memory.chat.qc import QC_CHECK, qc_findings
from agent_memory.domain.clinical import (
    ClinicalSourceAuthError,
    ClinicalSourceEgressRefused,
    ClinicalSourceError,
    ClinicalSourceRejected,
    ClinicalSourceTokenMissing,
    ClinicalSourceTokenUnreadable,
    ClinicalSourceUnavailable,
    DataDictionary,
    FieldDef,
)
from agent_memory.domain.llm import ToolSpec
from agent_memory.domain.redaction import scrub_text
from agent_memory.domain.text import truncate_utf8
from agent_memory.ports import ClinicalRecordsPort

#: Tool results are capped (UTF-8 bytes) so a message item stays far under 400 KB.
RESULT_MAX_BYTES = 8_000
#: The compact form kept in the session window (what the answer used).
COMPACT_MAX_BYTES = 1_200
#: Form completion status codes (REDCap ``<form>_complete``).
COMPLETION = {"0": "incomplete", "1": "unverified", "2": "complete"}

READ_CLINICAL_DATA = ToolSpec(
    name="read_clinical_data",
    description=(
        "Read CURRENT clinical data of ONE subject from the project's REDCap database: values by "
        "event (visit), form and repeat instance, with choice labels and each form's completion "
        "status. Identifier fields (name, phone, ID numbers) are never returned. Pass `fields` (field "
        "or form names) and `event` (unique event name or label) to read only what the question needs."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "subject_id": {"type": "string", "description": "Subject (record) id such as P001."},
            "fields": {"type": "array", "items": {"type": "string"},
                       "description": "Field or form names; omit for every non-identifier field."},
            "event": {"type": "string", "description": "One event (unique name or label); omit for all."},
        },
        "required": ["subject_id"],
        "additionalProperties": False,
    },
)
LIST_SUBJECTS = ToolSpec(
    name="list_subjects",
    description=(
        "Enrolment overview of the project: how many subjects by status, how many enrolled, first and "
        "latest enrolment dates, and each subject's status and enrolment date. `status` filters the list "
        "(a status label or code, e.g. enrolled)."
    ),
    input_schema={
        "type": "object",
        "properties": {"status": {"type": "string", "description": "Only subjects with this status."}},
        "additionalProperties": False,
    },
)

_STATUS_NAME = re.compile(r"status|状态", re.IGNORECASE)
_ENROL_NAME = re.compile(r"enrol|enroll|入组|random|随机", re.IGNORECASE)
_SCREEN_NAME = re.compile(r"screen|筛选", re.IGNORECASE)


def _error(code: str, **details: Any) -> tuple[str, bool]:
    return json.dumps({"error": code, **details}, ensure_ascii=False, sort_keys=True), True


class ClinicalToolSet:
    """The tools above for one project and one turn (see module docstring).

    Args:
        open_records: opens the project's source (reads the token secret) on first use; raises
            ``ClinicalSourceError`` subclasses.
    """

    specs: list[ToolSpec] = [READ_CLINICAL_DATA, LIST_SUBJECTS, QC_CHECK]

    def __init__(self, open_records: Callable[[], ClinicalRecordsPort]) -> None:
        self._open = open_records
        self._records: ClinicalRecordsPort | None = None
        self._dd: DataDictionary | None = None
        #: subject id as exported ("*" = every subject) -> (fields exported, rows)
        self._cache: dict[str, tuple[frozenset[str], list[dict[str, Any]]]] = {}
        self.redactions: Counter[str] = Counter()
        self.exports = 0

    # ------------------------------------------------------------------ tools
    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        """Run one tool call; returns (JSON result text, is_error). Source failures become an
        error result (``source_unavailable``, ``source_auth``, ``source_token_missing``,
        ``source_token_unreadable``, ``source_egress_refused``, ``source_rejected``), never raise."""
        args = tool_input if isinstance(tool_input, dict) else {}
        try:
            if name == READ_CLINICAL_DATA.name:
                return self._read(args)
            if name == LIST_SUBJECTS.name:
                return self._list(args)
            if name == QC_CHECK.name:
                return self._qc(args)
        except ClinicalSourceUnavailable as exc:
            return _error("source_unavailable", message=f"The clinical data source is unavailable: {exc}")
        except ClinicalSourceAuthError as exc:
            return _error("source_auth", message=f"The clinical data source refused access: {exc}")
        except ClinicalSourceTokenMissing as exc:
            return _error("source_token_missing", message=f"The project's REDCap token is not set: {exc}")
        except ClinicalSourceTokenUnreadable as exc:
            return _error("source_token_unreadable", message=f"The project's REDCap token cannot be read: {exc}")
        except ClinicalSourceEgressRefused as exc:
            return _error("source_egress_refused", message=str(exc))
        except ClinicalSourceRejected as exc:
            return _error("source_rejected", message=str(exc))
        except ClinicalSourceError as exc:
            return _error("source_error", message=str(exc))
        return _error("unknown_tool", tool=name)

    def compact(self, name: str, text: str, answer: str = "") -> str:
        """What the session window keeps of a result: the values (by field name, not the record's
        event / form structure), those the ``answer`` quotes first, as many as fit in
        :data:`COMPACT_MAX_BYTES` (``"more": true`` when some were left out); QC: counts and the
        first findings; list_subjects: the counts."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return truncate_utf8(text, COMPACT_MAX_BYTES)
        if not isinstance(data, dict) or "error" in data:
            return truncate_utf8(text, COMPACT_MAX_BYTES)
        if name == READ_CLINICAL_DATA.name:
            flat: dict[str, Any] = {}
            for ev in data.get("events", []):
                for form in ev.get("forms", []):
                    for k, v in form.get("values", {}).items():
                        flat.setdefault(k, v)
            used = [k for k, v in flat.items() if _quoted(v, answer)]
            order = used + [k for k in flat if k not in used]
            return _fit({"subject_id": data.get("subject_id")}, "values", [(k, flat[k]) for k in order])
        if name == LIST_SUBJECTS.name:
            out = {k: data[k] for k in ("subjects", "by_status", "enrolled", "first_enrolment", "latest_enrolment")
                   if k in data}
            return truncate_utf8(json.dumps(out, ensure_ascii=False, sort_keys=True), COMPACT_MAX_BYTES)
        findings = [(f"{f['subject_id']} {f.get('event', '')} {f['field']}", f["kind"])
                    for f in data.get("findings", [])]
        used_f = [x for x in findings if x[0].split()[-1] in answer or x[0].split()[0] in answer]
        order_f = used_f + [x for x in findings if x not in used_f]
        base = {"checked_subjects": data.get("checked_subjects"), "counts": data.get("counts")}
        return _fit(base, "findings", order_f)

    # ------------------------------------------------------------ read_clinical_data
    def _read(self, args: dict[str, Any]) -> tuple[str, bool]:
        subject = args.get("subject_id")
        if not isinstance(subject, str) or not subject.strip():
            return _error("invalid_input", message="subject_id is required")
        dd = self._dictionary()
        wanted, unknown = self._fields(dd, args.get("fields"))
        if unknown:
            return _error("unknown_fields", fields=unknown)
        events = None
        event_arg = args.get("event")
        if isinstance(event_arg, str) and event_arg.strip():
            ev = _find_event(dd, event_arg)
            if ev is None:
                return _error("unknown_event", event=event_arg, events=[e.unique_name for e in dd.events])
            events = [ev]
        sid = subject.strip()
        rows = self._subject_rows(dd, [sid], wanted)
        if not rows:
            return _error("subject_not_found", subject_id=sid)
        sid = str(rows[0][dd.record_id_field])
        self.redactions["identifier_fields"] += len(dd.identifiers)
        if events is not None:
            rows = [r for r in rows if r.get("redcap_event_name", "") in events]
        result = {"subject_id": sid, "events": self._by_event(dd, rows)}
        return truncate_utf8(json.dumps(result, ensure_ascii=False, sort_keys=True), RESULT_MAX_BYTES), False

    def _by_event(self, dd: DataDictionary, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for r in rows:
            event = str(r.get("redcap_event_name", ""))
            ev = dd.event(event)
            entry = next((e for e in out if e["event"] == event), None)
            if entry is None:
                entry = {"event": event, "label": ev.label if ev else event, "forms": []}
                if ev is not None and len(dd.arms) > 1:
                    entry["arm"] = dd.arms.get(ev.arm, str(ev.arm))
                out.append(entry)
            instrument = str(r.get("redcap_repeat_instrument") or "")
            for form in dd.forms:
                if instrument and form != instrument:
                    continue
                values = self._values(dd, form, r)
                status = COMPLETION.get(str(r.get(f"{form}_complete", "")))
                if not values and status is None:
                    continue
                item: dict[str, Any] = {"form": form, "values": values}
                if status is not None:
                    item["status"] = status
                if instrument:
                    item["instance"] = r.get("redcap_repeat_instance")
                entry["forms"].append(item)
        return out

    def _values(self, dd: DataDictionary, form: str, row: dict[str, Any]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for f in dd.fields:
            if f.form != form or f.name == dd.record_id_field or f.identifier:
                continue
            shown = self._show(f, row)
            if shown not in (None, "", []):
                values[f.name] = shown
        return values

    def _show(self, f: FieldDef, row: dict[str, Any]) -> Any:
        if f.field_type == "checkbox":
            return [f.choices.get(c, c) for c in f.choices if str(row.get(f"{f.name}___{c}", "")) == "1"]
        raw = str(row.get(f.name, "") or "")
        if not raw:
            return None
        if f.choices:
            return f.choices.get(raw, raw)
        if f.is_free_text:
            return self.scrub(raw)
        return raw

    def scrub(self, text: str) -> str:
        """``text`` without resident IDs, phone numbers and e-mail addresses (counted)."""
        clean, counts = scrub_text(text)
        self.redactions.update(counts)
        return clean

    # ----------------------------------------------------------------- list_subjects
    def _list(self, args: dict[str, Any]) -> tuple[str, bool]:
        dd = self._dictionary()
        status_f = _first(dd, lambda f: bool(f.choices) and f.field_type != "checkbox"
                          and bool(_STATUS_NAME.search(f.name + " " + f.label)))
        enrol_f = _first(dd, lambda f: f.is_date and bool(_ENROL_NAME.search(f.name + " " + f.label)))
        screen_f = _first(dd, lambda f: f.is_date and bool(_SCREEN_NAME.search(f.name + " " + f.label)))
        wanted = frozenset(f.name for f in (status_f, enrol_f, screen_f) if f is not None)
        rows = self._rows(dd, None, wanted or frozenset({dd.record_id_field}))
        subjects: dict[str, dict[str, Any]] = {}
        for r in rows:
            sid = str(r.get(dd.record_id_field, ""))
            s = subjects.setdefault(sid, {"subject_id": sid})
            for key, f in (("status", status_f), ("enrolment_date", enrol_f), ("screening_date", screen_f)):
                if f is not None and r.get(f.name) and key not in s:
                    s[key] = f.choices.get(str(r[f.name]), str(r[f.name])) if f.choices else str(r[f.name])
        listed = list(subjects.values())
        wanted_status = args.get("status")
        if isinstance(wanted_status, str) and wanted_status.strip():
            needle = wanted_status.strip().lower()
            code_of = {label: code for code, label in (status_f.choices if status_f else {}).items()}
            listed = [s for s in listed if needle in str(s.get("status", "")).lower()
                      or needle == code_of.get(str(s.get("status", "")))]
        dates = sorted(s["enrolment_date"] for s in subjects.values() if s.get("enrolment_date"))
        result: dict[str, Any] = {
            "subjects": len(subjects),
            "by_status": dict(Counter(str(s.get("status", "unknown")) for s in subjects.values())),
            "enrolled": len(dates),
            "enrolled_definition": f"subjects with {enrol_f.name}" if enrol_f else "no enrolment date field",
            "first_enrolment": dates[0] if dates else None,
            "latest_enrolment": dates[-1] if dates else None,
            "listed": listed[:200],
        }
        return truncate_utf8(json.dumps(result, ensure_ascii=False, sort_keys=True), RESULT_MAX_BYTES), False

    # ---------------------------------------------------------------------- qc_check
    def _qc(self, args: dict[str, Any]) -> tuple[str, bool]:
        dd = self._dictionary()
        raw_ids = args.get("subject_ids", "all")
        ids: list[str] | None
        if raw_ids == "all" or raw_ids == ["all"]:
            ids = None
        elif isinstance(raw_ids, str):
            ids = [raw_ids.strip()]
        elif isinstance(raw_ids, list) and all(isinstance(x, str) for x in raw_ids):
            ids = [x.strip() for x in raw_ids]
        else:
            return _error("invalid_input", message='subject_ids must be a list of ids or "all"')
        forms = args.get("forms")
        if forms is not None and (not isinstance(forms, list) or any(f not in dd.forms for f in forms)):
            return _error("unknown_forms", forms=forms, known=dd.forms)
        wanted = frozenset(
            [f.name for f in dd.fields if not f.identifier and (not forms or f.form in forms)]
            + [f"{form}_complete" for form in (forms or dd.forms)]
        )
        rows = self._rows(dd, None, wanted) if ids is None else self._subject_rows(dd, ids, wanted)
        found = {str(r.get(dd.record_id_field, "")).upper() for r in rows}
        missing = [i for i in (ids or []) if i.upper() not in found]
        if ids is not None and not found:
            return _error("subject_not_found", subject_id=", ".join(ids))
        findings = qc_findings(dd, rows, forms=forms)
        for f in findings:
            if "value" in f and isinstance(f["value"], str):
                f["value"] = self.scrub(f["value"])
        result = {
            "checked_subjects": len(found),
            "not_found": missing,
            "counts": dict(Counter(f["kind"] for f in findings)),
            "findings": findings[:150],
        }
        return truncate_utf8(json.dumps(result, ensure_ascii=False, sort_keys=True), RESULT_MAX_BYTES), False

    # --------------------------------------------------------------------- internals
    def _dictionary(self) -> DataDictionary:
        if self._records is None:
            self._records = self._open()
        if self._dd is None:
            self._dd = self._records.dictionary()
        return self._dd

    def _subject_rows(self, dd: DataDictionary, ids: Sequence[str], wanted: frozenset[str]) -> list[dict[str, Any]]:
        """Rows of the subjects ``ids``; an id not found as written is tried once in upper case
        ("p001" for "P001": record names are matched exactly)."""
        rows = self._rows(dd, ids, wanted)
        found = {_rid(dd, r) for r in rows}
        retry = [i.upper() for i in ids if i.upper() not in found and i != i.upper()]
        if retry:
            rows += self._rows(dd, retry, wanted)
        return [r for r in rows if _rid(dd, r) in {i.upper() for i in ids}]

    def _fields(self, dd: DataDictionary, asked: Any) -> tuple[frozenset[str], list[str]]:
        """Field names to export for ``asked`` (field or form names; None = every non-identifier
        field and every form's status); identifier fields are dropped and counted."""
        if not asked:
            return frozenset([f.name for f in dd.fields if not f.identifier]
                             + [f"{form}_complete" for form in dd.forms]), []
        names: list[str] = []
        unknown: list[str] = []
        for item in asked if isinstance(asked, list) else [asked]:
            item = str(item)
            if item in dd.forms:
                names += [f.name for f in dd.fields if f.form == item and not f.identifier]
                names.append(f"{item}_complete")
            elif (f := dd.field(item)) is not None:
                if not f.identifier:
                    names.append(f.name)
            elif item.endswith("_complete") and item[: -len("_complete")] in dd.forms:
                names.append(item)
            else:
                unknown.append(item)
        return frozenset(names), unknown

    def _rows(self, dd: DataDictionary, ids: Sequence[str] | None, fields: Iterable[str]) -> list[dict[str, Any]]:
        """Rows of ``ids`` (None = every subject) with at least ``fields``: from this turn's cache
        when an earlier export covered them, else one export (only those fields)."""
        assert self._records is not None
        wanted = frozenset(fields) | {dd.record_id_field}
        every = self._cache.get("*")
        if every is not None and wanted <= every[0]:
            rows = every[1] if ids is None else [r for r in every[1] if _rid(dd, r) in {i.upper() for i in ids}]
            return _drop(dd, rows)
        if ids is not None and all(i in self._cache and wanted <= self._cache[i][0] for i in ids):
            return _drop(dd, [r for i in ids for r in self._cache[i][1]])
        rows = self._records.export_records(records=list(ids) if ids else None, fields=sorted(wanted))
        self.exports += 1
        if ids is None:
            self._cache["*"] = (wanted, rows)
        else:
            for i in ids:  # keyed as asked: "p001" found nothing, "P001" may find the record
                self._cache[i] = (wanted, [r for r in rows if _rid(dd, r) == i.upper()])
        return _drop(dd, rows)


def _quoted(value: Any, answer: str) -> bool:
    """Whether the answer quotes ``value`` (a list: any of its items)."""
    if not answer:
        return False
    items = value if isinstance(value, list) else [value]
    return any(str(v) and str(v) in answer for v in items)


def _fit(base: dict[str, Any], key: str, items: list[tuple[str, Any]]) -> str:
    """``base`` plus ``{key: {name: value}}`` with as many ``items`` (in order) as fit in
    :data:`COMPACT_MAX_BYTES` of JSON; ``"more": true`` when some did not."""
    kept: dict[str, Any] = {}
    out = {**base, key: kept}
    for name, value in items:
        kept[name] = value
        if len(json.dumps(out, ensure_ascii=False).encode("utf-8")) > COMPACT_MAX_BYTES - 16:
            del kept[name]
            out["more"] = True
            break
    return json.dumps(out, ensure_ascii=False)  # insertion order: what the answer quoted first


def _rid(dd: DataDictionary, row: dict[str, Any]) -> str:
    return str(row.get(dd.record_id_field, "")).upper()


def _drop(dd: DataDictionary, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without any identifier column (a source that returns more than asked for included)."""
    ids = dd.identifiers
    if not ids:
        return rows
    return [{k: v for k, v in r.items() if k.split("___", 1)[0] not in ids} for r in rows]


def _first(dd: DataDictionary, pred: Callable[[FieldDef], bool]) -> FieldDef | None:
    return next((f for f in dd.fields if not f.identifier and pred(f)), None)


def _find_event(dd: DataDictionary, name: str) -> str | None:
    key = name.strip().lower()
    for e in dd.events:
        if key in (e.unique_name.lower(), e.label.lower()):
            return e.unique_name
    for e in dd.events:
        if key in e.label.lower() or key in e.unique_name.lower():
            return e.unique_name
    return None


__all__ = ["LIST_SUBJECTS", "QC_CHECK", "READ_CLINICAL_DATA", "ClinicalToolSet"]
