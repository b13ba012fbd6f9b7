"""The project export (project admins): everything the project stores, as JSON Lines.

Line 1 is the manifest (``kind: "manifest"``: format, project, time, counts per kind); then one
line per stored item, ``{"kind", "table", "item"}`` with the item's attributes as stored (keys
included, so ``python -m infra.data_import`` can load the file into an empty stack):

- MemoryTable: ``project``, ``hot_memory`` (the lines with their provenance),
  ``hot_memory_revision``, ``weekly_report``, ``report_revision``, ``yearly_summary``,
  ``review_item``, ``audit``, ``erasure``, ``member`` (when the member store holds any);
  operational markers (activity, job runs, alerts sent) are left out;
- SessionsTable: ``session`` (window, facts, summary), ``message`` (with its context manifest),
  ``diagnosis`` (report and snapshot); the patients' diagnosis references items are derived from
  the diagnoses and left out, and so is the project record's mark that they are complete
  (``patient_refs_since``): a project loaded from an export reads a patient's earlier diagnoses
  with a Query until ``backfill_patient_refs`` has rebuilt them (docs/architecture.md, "Request path");
- FlowLogTable: ``flow_log``, only with ``include=flow_log``.

docs/architecture.md, "Data governance".
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from agent_memory.domain.errors import PayloadTooLarge
from agent_memory.governance.erasure import GovernanceDeps

EXPORT_FORMAT = "agent-memory-export/1"
#: Largest export answered inline (UTF-8 bytes): under Lambda's 6 MB response payload.
MAX_EXPORT_BYTES = 5_000_000

#: MemoryTable sort-key prefixes -> export kind (longest prefix first); None = not exported.
_MEMORY_KINDS: tuple[tuple[str, str | None], ...] = (
    ("PROJECT", "project"),
    ("HOTREV#", "hot_memory_revision"),
    ("HOT", "hot_memory"),
    ("REPORTREV#", "report_revision"),
    ("REPORT#", "weekly_report"),
    ("YEAR#", "yearly_summary"),
    ("REVIEW#", "review_item"),
    ("AUDIT#", "audit"),
    ("ERASURE#", "erasure"),
    ("MEMBER#", "member"),
    ("ACTIVE#", None),
    ("JOBRUN#", None),
    ("ALERT#", None),
)


#: Attributes of exported items that describe derived data left out of the export, by kind.
_DERIVED_ATTRIBUTES: dict[str, frozenset[str]] = {"project": frozenset({"patient_refs_since"})}


def memory_kind(sort_key: str) -> str | None:
    """The export kind of a MemoryTable item (None: an operational marker, not exported)."""
    for prefix, kind in _MEMORY_KINDS:
        if sort_key == prefix or (prefix.endswith("#") and sort_key.startswith(prefix)):
            return kind
    return "other"


def session_kind(sort_key: str) -> str:
    """The export kind of a SessionsTable item."""
    if sort_key == "SESSION":
        return "session"
    return "message" if sort_key.startswith("MSG#") else "diagnosis" if sort_key.startswith("DIAG#") else "other"


def export_lines(deps: GovernanceDeps, *, project_id: str, include_flow_log: bool) -> Iterator[dict[str, Any]]:
    """Every exported item of the project as ``{"kind", "table", "item"}`` (no manifest).

    Raises:
        ProjectNotFound: unknown project (404).
    """
    store = deps.exports
    deps.admin.get_project(project_id)
    for item in store.memory_items(project_id):
        kind = memory_kind(str(item.get("sk", "")))
        if kind is not None:
            derived = _DERIVED_ATTRIBUTES.get(kind, frozenset())
            yield {"kind": kind, "table": "memory", "item": {k: v for k, v in item.items() if k not in derived}}
    utc_days: set[str] = set()
    for session_id in store.project_session_ids(project_id):
        for item in store.session_items(project_id, session_id):
            kind = session_kind(str(item.get("sk", "")))
            if kind == "message" and isinstance(item.get("at"), str):
                utc_days.add(str(item["at"])[:10])
            yield {"kind": kind, "table": "sessions", "item": item}
    if include_flow_log:
        for item in store.flow_log_items(project_id, utc_days):
            yield {"kind": "flow_log", "table": "flow_log", "item": item}


def export_project(deps: GovernanceDeps, *, project_id: str, include_flow_log: bool) -> str:
    """The export as JSON Lines text: the manifest line, then the items (see the module).

    Raises:
        ProjectNotFound: unknown project (404).
        PayloadTooLarge: over :data:`MAX_EXPORT_BYTES` (413).
    """
    lines: list[str] = []
    counts: Counter[str] = Counter()
    size = 0
    for line in export_lines(deps, project_id=project_id, include_flow_log=include_flow_log):
        text = json.dumps(line, ensure_ascii=False, sort_keys=True)
        size += len(text.encode("utf-8")) + 1
        if size > MAX_EXPORT_BYTES:
            raise PayloadTooLarge("the export is larger than an inline answer may be", MAX_EXPORT_BYTES, size)
        counts[line["kind"]] += 1
        lines.append(text)
    manifest = {
        "kind": "manifest", "format": EXPORT_FORMAT, "project_id": project_id,
        "exported_at": deps.clock().isoformat(), "include": ["flow_log"] if include_flow_log else [],
        "counts": dict(sorted(counts.items())),
    }
    return "\n".join([json.dumps(manifest, ensure_ascii=False, sort_keys=True), *lines]) + "\n"


__all__ = ["EXPORT_FORMAT", "MAX_EXPORT_BYTES", "export_lines", "export_project", "memory_kind", "session_kind"]
