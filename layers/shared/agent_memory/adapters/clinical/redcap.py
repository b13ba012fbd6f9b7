"""REDCap through PyCap (``redcap.Project``): a project's records and data dictionary.

The token is the project's REDCap API token, read from Secrets Manager by the secret's NAME
(``Project.clinical_data.token_secret``) through Powertools Parameters (cached ``max_age``); it is
never logged, never put in an error message and never returned.

Calls (docs/architecture.md, "Clinical data"):

- ``content=project`` (is it longitudinal, does it repeat instruments), ``metadata``, ``arm``,
  ``event``, ``formEventMapping`` and ``repeatingFormsEvents`` build the :class:`DataDictionary`, kept per
  container for :data:`DICTIONARY_MAX_AGE_S`;
- ``content=record`` (flat, raw) exports only the records, fields and events asked for; the
  identifier fields are never requested unless a caller names them.

Every request's timeout is the time left until the turn's deadline (at most
:data:`REQUEST_TIMEOUT_S`). HTTP 403 (REDCap: "You do not have permissions to use the API") is
``ClinicalSourceAuthError`` and counted (``ClinicalSourceAuthError`` metric, an error log naming
the project and host, never the token); 429 (REDCap's API rate limit) and 5xx are retried with
tenacity's exponential backoff while the deadline allows (at most :data:`MAX_ATTEMPTS` tries); a
connection failure or timeout is ``ClinicalSourceUnavailable``; another error body is
``ClinicalSourceRejected``.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, stop_before_delay, wait_exponential

from agent_memory.domain.clinical import (
    ClinicalEvent,
    ClinicalSourceAuthError,
    ClinicalSourceRejected,
    ClinicalSourceUnavailable,
    DataDictionary,
    FieldDef,
)
from agent_memory.domain.models import ClinicalDataSource
from agent_memory.observability import logger, metrics

# PyCap (and requests) are imported by RedcapSources (built by the chat function only), never by
# importing this module.
if TYPE_CHECKING:
    import redcap
    import requests

#: Longest wait for one REDCap request when the turn has no deadline (seconds).
REQUEST_TIMEOUT_S = 10.0
#: The data dictionary (metadata, events, mappings) is re-read after this many seconds.
DICTIONARY_MAX_AGE_S = 300.0
#: The token secret is re-read after this many seconds (a rotated token applies without a deploy).
TOKEN_MAX_AGE_S = 300
#: Most attempts of one request answered 429 / 5xx (tenacity's exponential backoff between them).
MAX_ATTEMPTS = 4


class _Retryable(Exception):
    """429 or 5xx: REDCap asked us to slow down or failed for now."""


class _Forbidden(Exception):
    """403: the token was refused."""


def _check_status(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    """requests' response hook: turn REDCap's status codes into our signals before PyCap decodes."""
    if response.status_code in (401, 403):
        raise _Forbidden()
    if response.status_code == 429 or response.status_code >= 500:
        raise _Retryable(response.status_code)


def load_token(secret_name: str, *, max_age_s: int = TOKEN_MAX_AGE_S) -> str:
    """The REDCap API token in Secrets Manager secret ``secret_name`` (plain, or JSON ``{"token": ...}``).

    Raises:
        ClinicalSourceAuthError: the secret cannot be read, or holds no 32-character token.
    """
    from aws_lambda_powertools.utilities import parameters

    try:
        raw = parameters.get_secret(secret_name, max_age=max_age_s)
    except Exception as exc:  # GetParameterError and botocore errors alike: never echo details
        raise ClinicalSourceAuthError(f"the token secret {secret_name!r} could not be read") from exc
    value = (raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)).strip()
    if value.startswith("{"):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise ClinicalSourceAuthError(f"the token secret {secret_name!r} is not valid JSON") from None
        value = str(parsed.get("token", "")).strip() if isinstance(parsed, dict) else ""
    if len(value) != 32:  # REDCap tokens are 32 hexadecimal characters (PyCap checks the same)
        raise ClinicalSourceAuthError(f"the token secret {secret_name!r} does not hold a REDCap API token")
    return value


class RedcapRecords:
    """``ClinicalRecordsPort`` on one PyCap ``Project`` for one turn (see module docstring)."""

    def __init__(
        self,
        project: redcap.Project,
        source: ClinicalDataSource,
        *,
        deadline: float | None,
        clock: Callable[[], float] = time.monotonic,
        cache: _DictionaryCache | None = None,
    ) -> None:
        self._project = project
        self._source = source
        self._deadline = deadline
        self._clock = clock
        self._cache = cache

    # ------------------------------------------------------------------ port
    def dictionary(self) -> DataDictionary:
        """See :meth:`ClinicalRecordsPort.dictionary` (cached per container)."""
        key = (self._source.api_url, self._source.token_secret)
        if self._cache is not None:
            cached = self._cache.get(key, self._clock())
            if cached is not None:
                return cached[0]
        dd = self._call(self._read_dictionary)
        if self._cache is not None:
            self._cache.put(key, (dd, self._project.metadata), self._clock())
        return dd

    def export_records(
        self,
        *,
        records: Sequence[str] | None = None,
        fields: Sequence[str] | None = None,
        events: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """See :meth:`ClinicalRecordsPort.export_records`."""
        def export() -> list[dict[str, Any]]:
            rows = self._project.export_records(
                format_type="json",
                records=list(records) if records else None,
                fields=list(fields) if fields else None,
                events=list(events) if events else None,
                raw_or_label="raw",
                event_name="unique",
            )
            return list(rows)

        return self._call(export)

    # -------------------------------------------------------------- internals
    def _read_dictionary(self) -> DataDictionary:
        p = self._project
        info = p.export_project_info()
        rows = p.metadata  # PyCap caches it; export_records' record-id backfill reads it again
        fields = tuple(FieldDef.from_metadata(r) for r in rows)
        events: tuple[ClinicalEvent, ...] = ()
        arms: dict[int, str] = {}
        repeating: set[str] = set()
        if str(info.get("is_longitudinal", "0")) == "1":
            mapping: dict[str, list[str]] = {}
            for m in p.export_instrument_event_mappings():
                mapping.setdefault(str(m["unique_event_name"]), []).append(str(m["form"]))
            events = tuple(
                ClinicalEvent(
                    unique_name=str(e["unique_event_name"]),
                    label=str(e.get("custom_event_label") or e.get("event_name") or e["unique_event_name"]),
                    arm=int(e.get("arm_num") or 1),
                    day_offset=float(e.get("day_offset") or 0),
                    forms=tuple(mapping.get(str(e["unique_event_name"]), ())),
                )
                for e in p.export_events()
            )
            if len({e.arm for e in events}) > 1:  # arm names matter only when there are several
                arms = {int(a["arm_num"]): str(a.get("name", "")) for a in p.export_arms()}
        if str(info.get("has_repeating_instruments_or_events", "0")) == "1":
            repeating = {str(r["form_name"]) for r in p.export_repeating_instruments_events() if r.get("form_name")}
        return DataDictionary(
            fields=fields, events=events, repeating=frozenset(repeating), title=str(info.get("project_title", "")),
            arms=arms,
        )

    def _remaining(self) -> float:
        if self._deadline is None:
            return REQUEST_TIMEOUT_S
        return self._deadline - self._clock()

    def _call[T](self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (PyCap calls) with backoff on 429 / 5xx inside the deadline; map failures."""
        remaining = self._remaining()
        if remaining <= 0:
            raise ClinicalSourceUnavailable("no time left in this turn to ask the clinical data source")

        def attempt() -> T:
            # PyCap passes its request_kwargs to requests on every call: the timeout of this request
            # is the time left in the turn (at most REQUEST_TIMEOUT_S).
            left = max(0.05, min(REQUEST_TIMEOUT_S, self._remaining()))
            self._project._request_kwargs["timeout"] = left
            return fn()

        try:
            for try_ in Retrying(
                retry=retry_if_exception_type(_Retryable),
                wait=wait_exponential(multiplier=0.2, max=2.0),
                stop=stop_before_delay(max(0.0, remaining)) | stop_after_attempt(MAX_ATTEMPTS),
                reraise=True,
            ):
                with try_:
                    return attempt()
        except _Forbidden:
            self._alert_auth()
            raise ClinicalSourceAuthError("the clinical data source refused the project's API token") from None
        except _Retryable as exc:
            raise ClinicalSourceUnavailable(f"the clinical data source kept answering HTTP {exc.args[0]}") from None
        except Exception as exc:
            raise _mapped(exc) from None
        raise ClinicalSourceUnavailable("the clinical data source did not answer")  # pragma: no cover

    def _alert_auth(self) -> None:
        alert_auth(self._source, "token refused (HTTP 403)")


def alert_auth(source: ClinicalDataSource, reason: str) -> None:
    """Admin alert of an unusable token: the ``ClinicalSourceAuthError`` metric (alarmed to the admin
    topic) and an error log naming the host, the secret's NAME and the reason, never the token."""
    host = urlsplit(source.api_url).netloc
    logger.error("clinical data source refused the API token",
                 extra={"source_host": host, "token_secret": source.token_secret, "reason": reason})
    with single_metric(name="ClinicalSourceAuthError", unit=MetricUnit.Count, value=1,
                       namespace=metrics.namespace) as metric:
        metric.add_dimension(name="source", value="redcap")


def _mapped(exc: Exception) -> Exception:
    """A requests / PyCap failure as a domain error (anything else unchanged)."""
    import requests

    if isinstance(exc, (requests.Timeout, requests.ConnectionError)):
        return ClinicalSourceUnavailable("the clinical data source did not answer in time")
    if isinstance(exc, requests.RequestException):  # PyCap's RedcapError: REDCap's own {"error": ...} body
        return ClinicalSourceRejected(_error_text(exc))
    return exc


def _error_text(exc: Exception) -> str:
    """REDCap's ``error`` message of a rejected request (PyCap raises with the decoded body)."""
    body = exc.args[0] if exc.args else ""
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])[:300]
    return "the clinical data source rejected the request"


_Cached = tuple[DataDictionary, list[dict[str, Any]]]


class _DictionaryCache:
    """Data dictionaries (with REDCap's metadata rows) per (API URL, secret name), for
    :data:`DICTIONARY_MAX_AGE_S` seconds."""

    def __init__(self, max_age_s: float = DICTIONARY_MAX_AGE_S) -> None:
        self._max_age_s = max_age_s
        self._items: dict[tuple[str, str], tuple[float, _Cached]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str], now: float) -> _Cached | None:
        with self._lock:
            hit = self._items.get(key)
        return hit[1] if hit is not None and now - hit[0] < self._max_age_s else None

    def put(self, key: tuple[str, str], dd: _Cached, now: float) -> None:
        with self._lock:
            self._items[key] = (now, dd)


class RedcapSources:
    """``ClinicalSourcesPort``: a PyCap ``Project`` per configured source and turn."""

    def __init__(
        self,
        *,
        token_secret_prefix: str = "",
        token_loader: Callable[[str], str] = load_token,
        clock: Callable[[], float] = time.monotonic,
        verify_ssl: bool = True,
    ) -> None:
        import redcap  # noqa: F401 - loaded while the chat function initialises (SnapStart's snapshot holds it)

        self._prefix = token_secret_prefix
        self._token_loader = token_loader
        self._clock = clock
        self._verify_ssl = verify_ssl
        self._cache = _DictionaryCache()

    def open(self, source: ClinicalDataSource, *, deadline: float | None) -> RedcapRecords:
        """See :meth:`ClinicalSourcesPort.open`.

        Raises:
            ClinicalSourceAuthError: the secret's name is outside the configured prefix (a project
                could otherwise send another secret to a URL of its choosing), the URL is not https
                (plain http only to a loopback address, for local servers), or the token is unusable.
        """
        import redcap

        try:
            if not source.token_secret.startswith(self._prefix):
                raise ClinicalSourceAuthError(f"the token secret's name must start with {self._prefix!r}")
            if not _allowed_url(source.api_url):
                raise ClinicalSourceAuthError("the REDCap API URL must be https (http only to a loopback address)")
            token = self._token_loader(source.token_secret)
        except ClinicalSourceAuthError as exc:
            alert_auth(source, str(exc))
            raise
        try:
            project = redcap.Project(
                source.api_url, token, verify_ssl=self._verify_ssl,
                timeout=REQUEST_TIMEOUT_S, hooks={"response": [_check_status]},
            )
        except AssertionError:  # PyCap's URL / token checks; its message would quote the token
            alert_auth(source, "PyCap refused the URL or token format")
            raise ClinicalSourceAuthError(
                "the clinical data source is misconfigured (the REDCap API URL must end with /api/)"
            ) from None
        cached = self._cache.get((source.api_url, source.token_secret), self._clock())
        if cached is not None:
            # PyCap reads the record-id field from its metadata on every export; a cached
            # dictionary brings its metadata rows along so a turn makes no metadata call.
            project._metadata = cached[1]
        return RedcapRecords(project, source, deadline=deadline, clock=self._clock, cache=self._cache)


def _allowed_url(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return bool(parts.hostname)
    if parts.scheme != "http" or not parts.hostname:
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


__all__ = ["REQUEST_TIMEOUT_S", "RedcapRecords", "RedcapSources", "load_token"]
