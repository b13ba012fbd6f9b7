"""A local REDCap API server (stdlib ``http.server``): the API contract REDCap really speaks.

``POST /api/`` with form fields ``token``, ``content`` (``record``, ``metadata``, ``project``,
``event``, ``arm``, ``formEventMapping``, ``repeatingFormsEvents``, ``version``), ``format``
(``json`` or ``csv``) and ``returnFormat`` (``json``, ``csv``, ``xml``: the format of an error;
REDCap's default is ``format``'s value, else ``xml``). Records are exported flat, one row per record, event and repeat
instance (``redcap_event_name``, ``redcap_repeat_instrument``, ``redcap_repeat_instance``),
checkbox fields as ``field___code``, every value a string but the repeat instance; ``records[n]``,
``fields[n]``, ``forms[n]``, ``events[n]``, ``rawOrLabel`` are honoured. Errors are REDCap's
bodies and codes: 403 "You do not have permissions to use the API" for a missing or unknown token,
400 for a bad parameter, 429 when the per-minute rate limit is passed.

Tests can make it slow (``delay_s``), fail (``fail_next(status, n)``) or rate-limited
(``rate_limit_per_minute``). Local only; it never runs in AWS.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl

from infra.local.background_server import BackgroundServer

REDCAP_VERSION = "14.5.10"
NO_PERMISSION = "You do not have permissions to use the API"


class RedcapError(Exception):
    """An API error: HTTP status and REDCap's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class RedcapProject:
    """One project's data as REDCap stores it (see ``infra.local.demo.redcap_project.demo_project``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.info: dict[str, Any] = data["project"]
        self.metadata: list[dict[str, str]] = data["metadata"]
        self.arms: list[dict[str, Any]] = data.get("arms", [])
        self.events: list[dict[str, Any]] = data.get("events", [])
        self.mapping: list[dict[str, Any]] = data.get("mapping", [])
        self.repeating: list[dict[str, Any]] = data.get("repeating", [])
        self.records: list[dict[str, Any]] = data.get("records", [])

    @property
    def record_id(self) -> str:
        return self.metadata[0]["field_name"]

    @property
    def forms(self) -> list[str]:
        out: list[str] = []
        for m in self.metadata:
            if m["form_name"] not in out:
                out.append(m["form_name"])
        return out

    def columns(self, field: dict[str, str]) -> list[str]:
        """Export column names of a field (checkboxes expand to ``name___code``)."""
        if field["field_type"] == "checkbox":
            codes = [c.split(",", 1)[0].strip() for c in field["select_choices_or_calculations"].split("|")]
            return [f"{field['field_name']}___{c}" for c in codes if c]
        if field["field_type"] == "descriptive":
            return []
        return [field["field_name"]]

    def export_columns(self, fields: list[str], forms: list[str]) -> list[str]:
        """Columns of a record export in REDCap's order: every field of the project (or the ones
        asked for, and all of the forms asked for), each form followed by ``<form>_complete``."""
        names = {m["field_name"] for m in self.metadata}
        completes = {f"{f}_complete" for f in self.forms}
        bad = [f for f in fields if f not in names and f not in completes]
        if bad:
            raise RedcapError(400, "The following values in the parameter \"fields\" are not valid: "
                                   + ", ".join(f"'{b}'" for b in bad))
        bad_forms = [f for f in forms if f not in self.forms]
        if bad_forms:
            raise RedcapError(400, "The following values in the parameter \"forms\" are not valid: "
                                   + ", ".join(f"'{b}'" for b in bad_forms))
        everything = not fields and not forms
        cols: list[str] = []
        for form in self.forms:
            for m in (m for m in self.metadata if m["form_name"] == form):
                if everything or m["field_name"] in fields or form in forms or m["field_name"] == self.record_id:
                    cols += self.columns(m)
            if everything or f"{form}_complete" in fields or form in forms:
                cols.append(f"{form}_complete")
        return cols

    def export_records(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The flat record export (see module docstring)."""
        if params.get("type", "flat") != "flat":
            raise RedcapError(400, "The local REDCap server only exports flat records")
        fields, forms = _array(params, "fields"), _array(params, "forms")
        events, records = _array(params, "events"), _array(params, "records")
        known_events = {e["unique_event_name"] for e in self.events}
        bad = [e for e in events if e not in known_events]
        if bad:
            raise RedcapError(400, "The following values in the parameter \"events\" are not valid: "
                                   + ", ".join(f"'{b}'" for b in bad))
        cols = self.export_columns(fields, forms)
        label = params.get("rawOrLabel", "raw") == "label"
        by_name = {m["field_name"]: m for m in self.metadata}
        order = {e["unique_event_name"]: i for i, e in enumerate(self.events)}
        ids = list(dict.fromkeys(r[self.record_id] for r in self.records))
        out: list[dict[str, Any]] = []
        rows = sorted(
            self.records,
            key=lambda r: (ids.index(r[self.record_id]), order.get(r["redcap_event_name"], 99),
                           r["redcap_repeat_instrument"], r["redcap_repeat_instance"] or 0),
        )
        for r in rows:
            if records and r[self.record_id] not in records:
                continue
            if events and r["redcap_event_name"] not in events:
                continue
            value_cols = [c for c in cols if c != self.record_id]
            if (fields or forms) and not any(str(r.get(c, "")) for c in value_cols):
                continue  # REDCap leaves out rows with no value in any requested field
            row: dict[str, Any] = {self.record_id: r[self.record_id], "redcap_event_name": r["redcap_event_name"],
                                   "redcap_repeat_instrument": r["redcap_repeat_instrument"],
                                   "redcap_repeat_instance": r["redcap_repeat_instance"]}
            for c in value_cols:
                value = str(r.get(c, ""))
                if label and value:
                    value = _label(by_name.get(c.split("___", 1)[0]), c, value)
                row[c] = value
            out.append(row)
        return out


def _label(field: dict[str, str] | None, column: str, value: str) -> str:
    if field is None:
        return {"0": "Incomplete", "1": "Unverified", "2": "Complete"}.get(value, value)
    if field["field_type"] == "checkbox":
        return "Checked" if value == "1" else "Unchecked"
    if field["field_type"] == "yesno":
        return {"1": "Yes", "0": "No"}.get(value, value)
    if field["field_type"] in ("radio", "dropdown"):
        for part in field["select_choices_or_calculations"].split("|"):
            code, _, text = part.strip().partition(",")
            if code.strip() == value:
                return text.strip()
    return value


def _array(params: dict[str, Any], name: str) -> list[str]:
    """REDCap's array parameters: ``name[0]=a&name[1]=b`` or one comma-separated ``name=a,b``."""
    items = [(k, v) for k, v in params.items() if k.startswith(f"{name}[")]
    if items:
        return [str(v) for _, v in sorted(items, key=lambda kv: int(kv[0][len(name) + 1:-1] or 0))]
    raw = params.get(name)
    return [x.strip() for x in str(raw).split(",") if x.strip()] if raw else []


class LocalRedcap(BackgroundServer):
    """The server: projects by token, on ``http://127.0.0.1:<port>/api/``.

    Usage::

        with LocalRedcap({DEMO_TOKEN: RedcapProject(demo_project())}) as server:
            redcap.Project(server.api_url, DEMO_TOKEN).export_records()
    """

    def __init__(self, projects: dict[str, RedcapProject], *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.projects = projects
        self.delay_s = 0.0
        self.rate_limit_per_minute = 0
        self.requests: list[dict[str, Any]] = []
        self._failures: deque[int] = deque()
        self._always: int | None = None
        self._recent: deque[float] = deque()
        self._lock = threading.Lock()
        super().__init__(_handler(self), name="local-redcap", host=host, port=port)

    @property
    def api_url(self) -> str:
        return f"{self.origin}/api/"

    def fail_next(self, status: int, times: int = 1) -> None:
        """Answer the next ``times`` requests with ``status`` (429, 500, 503, ...)."""
        with self._lock:
            self._failures.extend([status] * times)

    @contextmanager
    def failing(self, status: int) -> Iterator[None]:
        """Answer every request with ``status`` inside the block."""
        self._always = status
        try:
            yield
        finally:
            self._always = None

    @contextmanager
    def slow(self, delay_s: float) -> Iterator[None]:
        """Answer every request ``delay_s`` seconds late inside the block."""
        self.delay_s = delay_s
        try:
            yield
        finally:
            self.delay_s = 0.0

    # ----------------------------------------------------------------- the API
    def answer(self, params: dict[str, Any]) -> tuple[int, str, str]:
        """(status, content type, body) of one API request."""
        with self._lock:
            self.requests.append({k: v for k, v in params.items() if k != "token"})
            failure = self._failures.popleft() if self._failures else self._always
            now = time.monotonic()
            while self._recent and now - self._recent[0] > 60:
                self._recent.popleft()
            self._recent.append(now)
            limited = self.rate_limit_per_minute and len(self._recent) > self.rate_limit_per_minute
        # REDCap: errors come in ``returnFormat``, else in ``format``, else XML.
        return_format = params.get("returnFormat") or params.get("format") or "xml"
        try:
            if failure == 429 or limited:
                raise RedcapError(429, "You have exceeded the maximum number of API requests per minute")
            if failure is not None:
                raise RedcapError(failure, "The server encountered an error")
            project = self.projects.get(str(params.get("token", "")).upper())
            if project is None:
                raise RedcapError(403, NO_PERMISSION)
            data = self._content(project, params)
        except RedcapError as err:
            return err.status, *_error_body(err.message, return_format)
        if isinstance(data, str):
            return 200, "text/html; charset=utf-8", data
        fmt = params.get("format", "xml")
        if fmt == "json":
            return 200, "application/json; charset=utf-8", json.dumps(data, ensure_ascii=False)
        if fmt == "csv":
            return 200, "text/csv; charset=utf-8", _csv(data if isinstance(data, list) else [data])
        return 400, *_error_body("The local REDCap server exports json or csv only", return_format)

    @staticmethod
    def _content(project: RedcapProject, params: dict[str, Any]) -> Any:
        content = params.get("content")
        longitudinal = str(project.info.get("is_longitudinal")) == "1"
        if content == "record":
            return project.export_records(params)
        if content == "metadata":
            fields, forms = _array(params, "fields"), _array(params, "forms")
            return [m for m in project.metadata
                    if (not fields or m["field_name"] in fields) and (not forms or m["form_name"] in forms)]
        if content == "project":
            return project.info
        if content == "version":
            return REDCAP_VERSION
        if content in ("event", "arm", "formEventMapping") and not longitudinal:
            raise RedcapError(400, f"You cannot export {content}s for classic projects")
        arms = [int(a) for a in _array(params, "arms")]
        if content == "event":
            return [e for e in project.events if not arms or e["arm_num"] in arms]
        if content == "arm":
            return [a for a in project.arms if not arms or a["arm_num"] in arms]
        if content == "formEventMapping":
            return [m for m in project.mapping if not arms or m["arm_num"] in arms]
        if content == "repeatingFormsEvents":
            return project.repeating
        raise RedcapError(400, "The value of the parameter \"content\" is not valid")


def _error_body(message: str, return_format: str) -> tuple[str, str]:
    if return_format == "json":
        return "application/json; charset=utf-8", json.dumps({"error": message})
    if return_format == "csv":
        return "text/csv; charset=utf-8", f"ERROR: {message}"
    xml = f'<?xml version="1.0" encoding="UTF-8" ?>\n<hash>\n  <error>{message}</error>\n</hash>'
    return "text/xml; charset=utf-8", xml


def _csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    cols = list(dict.fromkeys(k for r in rows for k in r))
    writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _handler(server: LocalRedcap) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8")
            params = dict(parse_qsl(body, keep_blank_values=True))
            if server.delay_s:
                time.sleep(server.delay_s)
            if self.path.rstrip("/") != "/api":
                status, ctype, text = 404, "text/plain", "Not Found"
            else:
                status, ctype, text = server.answer(params)
            self._send(status, ctype, text)

        def do_GET(self) -> None:  # noqa: N802
            self._send(405, "application/json", json.dumps({"error": "The API accepts POST requests only"}))

        def _send(self, status: int, ctype: str, text: str) -> None:
            data = text.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - never log requests (tokens)
            return

    return Handler


def demo_server(*, port: int = 0) -> LocalRedcap:
    """A server holding the demo-iit project under its demo token (not started)."""
    from infra.local.demo.redcap_project import DEMO_TOKEN, demo_project

    return LocalRedcap({DEMO_TOKEN: RedcapProject(demo_project())}, port=port)


__all__ = ["NO_PERMISSION", "LocalRedcap", "RedcapProject", "demo_server"]
