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
    ClinicalSourceEgressRefused,
    ClinicalSourceError,
    ClinicalSourceRejected,
    ClinicalSourceTokenMissing,
    ClinicalSourceTokenUnreadable,
    ClinicalSourceUnavailable,
    DataDictionary,
    FieldDef,
)
from agent_memory.domain.errors import EgressBlocked, EgressRefused, SecretNotSet, SecretUnreadable
from agent_memory.domain.models import ClinicalDataSource
from agent_memory.domain.secrets import RedcapTokenSecret, SecretNaming
from agent_memory.observability import logger, metrics

# PyCap (and requests) are imported by RedcapSources (built by the chat function only), never by
# importing this module.
if TYPE_CHECKING:
    import redcap
    import requests

    from agent_memory.domain.egress import EgressPolicy
    from agent_memory.ports import HostResolver, ProjectSecretReader

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


class _Redirected(Exception):
    """3xx: never followed (the token would go to an address the project never configured)."""


def _check_status(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    """requests' response hook: turn REDCap's status codes into our signals before PyCap decodes."""
    if response.status_code in (401, 403):
        raise _Forbidden()
    if 300 <= response.status_code < 400:
        raise _Redirected()
    if response.status_code == 429 or response.status_code >= 500:
        raise _Retryable(response.status_code)


def load_token(secret_name: str, *, max_age_s: int = TOKEN_MAX_AGE_S) -> str:
    """The REDCap API token in Secrets Manager secret ``secret_name`` (plain, or JSON ``{"token": ...}``):
    the legacy path of projects whose admin named the secret (``ClinicalDataSource.token_secret``).

    Raises:
        ClinicalSourceTokenMissing: no such secret, or it awaits deletion.
        ClinicalSourceTokenUnreadable: it cannot be read, or holds no 32-character token.
    """
    from aws_lambda_powertools.utilities import parameters

    try:
        raw = parameters.get_secret(secret_name, max_age=max_age_s)
    except Exception as exc:  # GetParameterError and botocore errors alike: never echo details
        code = str((getattr(exc.__context__, "response", None) or {}).get("Error", {}).get("Code", ""))
        if code in ("ResourceNotFoundException", "InvalidRequestException"):
            raise ClinicalSourceTokenMissing(f"the token secret {secret_name!r} does not exist") from None
        raise ClinicalSourceTokenUnreadable(f"the token secret {secret_name!r} could not be read") from None
    value = (raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)).strip()
    if value.startswith("{"):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise ClinicalSourceTokenUnreadable(f"the token secret {secret_name!r} is not valid JSON") from None
        value = str(parsed.get("token", "")).strip() if isinstance(parsed, dict) else ""
    if len(value) != 32:  # REDCap tokens are 32 hexadecimal characters (PyCap checks the same)
        raise ClinicalSourceTokenUnreadable(f"the token secret {secret_name!r} does not hold a REDCap API token")
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
        cache_key: tuple[str, str] | None = None,
    ) -> None:
        self._project = project
        self._source = source
        self._key = cache_key or (source.api_url, source.token_secret or "")
        self._deadline = deadline
        self._clock = clock
        self._cache = cache

    # ------------------------------------------------------------------ port
    def dictionary(self) -> DataDictionary:
        """See :meth:`ClinicalRecordsPort.dictionary` (cached per container)."""
        key = self._key
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
        except _Redirected:
            raise ClinicalSourceRejected("the clinical data source answered with a redirect, which is never "
                                         "followed; set api_url to the address it redirects to") from None
        except EgressBlocked as exc:
            alert_auth(self._source, f"egress policy: {exc.rule}")
            raise egress_refused(exc.reason) from None
        except _Retryable as exc:
            raise ClinicalSourceUnavailable(f"the clinical data source kept answering HTTP {exc.args[0]}") from None
        except Exception as exc:
            raise _mapped(exc) from None
        raise ClinicalSourceUnavailable("the clinical data source did not answer")  # pragma: no cover

    def _alert_auth(self) -> None:
        alert_auth(self._source, "token refused (HTTP 403)")


def alert_auth(source: ClinicalDataSource, reason: str) -> None:
    """Admin alert of a source the project cannot use (token refused, missing or unreadable; URL
    refused): the ``ClinicalSourceAuthError`` metric (alarmed to the admin topic) and an error log
    naming the host, the legacy secret's NAME if any and the reason, never the token."""
    host = urlsplit(source.api_url).netloc
    logger.error("clinical data source unusable",
                 extra={"source_host": host, "token_secret": source.token_secret, "reason": reason})
    with single_metric(name="ClinicalSourceAuthError", unit=MetricUnit.Count, value=1,
                       namespace=metrics.namespace) as metric:
        metric.add_dimension(name="source", value="redcap")


def egress_refused(reason: str) -> ClinicalSourceEgressRefused:
    """The tool's error for a URL or peer the egress policy refuses (never "credentials refused")."""
    return ClinicalSourceEgressRefused(f"the data source is refused by the egress policy: {reason}")


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
    """``ClinicalSourcesPort``: a PyCap ``Project`` per configured source and turn.

    Args:
        token_secret_prefix: legacy sources (``token_secret``) may name secrets under it only.
        token_loader: reads a legacy source's token by secret name.
        egress / resolver: the egress policy and its DNS; when set, every request goes through
            ``agent_memory.adapters.egress.guarded_session`` (checked on each connection) and the
            URL's form is checked before the token is read.
        secrets / naming: the service-owned token store (sources with ``token_set``).
    """

    def __init__(
        self,
        *,
        token_secret_prefix: str = "",
        token_loader: Callable[[str], str] = load_token,
        clock: Callable[[], float] = time.monotonic,
        verify_ssl: bool = True,
        egress: EgressPolicy | None = None,
        resolver: HostResolver | None = None,
        secrets: ProjectSecretReader | None = None,
        naming: SecretNaming | None = None,
    ) -> None:
        import redcap  # noqa: F401 - loaded while the chat function initialises (SnapStart's snapshot holds it)

        self._prefix = token_secret_prefix
        self._token_loader = token_loader
        self._clock = clock
        self._verify_ssl = verify_ssl
        self._cache = _DictionaryCache()
        self._egress = egress
        self._secrets = secrets
        self._naming = naming
        self._project_cls: Any = redcap.Project
        if egress is not None:
            from agent_memory.adapters.egress import guarded_session
            from agent_memory.adapters.resolver import SystemResolver

            self._project_cls = _project_on(guarded_session(egress, resolver or SystemResolver()))

    def open(
        self, source: ClinicalDataSource, *, deadline: float | None, project_id: str | None = None,
    ) -> RedcapRecords:
        """See :meth:`ClinicalSourcesPort.open`.

        Raises:
            ClinicalSourceEgressRefused: the URL's form is refused by the egress policy (its
                addresses are checked on each connection, by the transport).
            ClinicalSourceTokenMissing / ClinicalSourceTokenUnreadable: no usable token for the URL.
            ClinicalSourceAuthError: a legacy secret name outside the prefix, a legacy URL that is
                not https (http only to a loopback address), or a URL PyCap refuses.
        """
        try:
            self._check_url(source.api_url)
            token = self._token(source, project_id)
        except ClinicalSourceError as exc:
            alert_auth(source, str(exc))
            raise
        try:
            project = self._project_cls(
                source.api_url, token, verify_ssl=self._verify_ssl,
                timeout=REQUEST_TIMEOUT_S, hooks={"response": [_check_status]}, allow_redirects=False,
            )
        except AssertionError:  # PyCap's URL / token checks; its message would quote the token
            alert_auth(source, "PyCap refused the URL or token format")
            raise ClinicalSourceAuthError(
                "the clinical data source is misconfigured (the REDCap API URL must end with /api/)"
            ) from None
        key = (source.api_url, source.token_secret or f"project:{project_id}")
        cached = self._cache.get(key, self._clock())
        if cached is not None:
            # PyCap reads the record-id field from its metadata on every export; a cached
            # dictionary brings its metadata rows along so a turn makes no metadata call.
            project._metadata = cached[1]
        return RedcapRecords(project, source, deadline=deadline, clock=self._clock, cache=self._cache, cache_key=key)

    def _check_url(self, url: str) -> None:
        if self._egress is None:
            if not _allowed_url(url):
                raise ClinicalSourceAuthError("the REDCap API URL must be https (http only to a loopback address)")
            return
        try:
            self._egress.check_form(url, field="api_url")
        except EgressRefused as exc:
            raise egress_refused(exc.reason) from None

    def _token(self, source: ClinicalDataSource, project_id: str | None) -> str:
        """The token to send to ``source.api_url`` (see :meth:`open` for the errors)."""
        if source.token_set and self._secrets is not None and project_id is not None:
            return self._bound_token(source.api_url, project_id)
        if source.token_secret:
            if not source.token_secret.startswith(self._prefix):
                raise ClinicalSourceAuthError(f"the token secret's name must start with {self._prefix!r}")
            return self._token_loader(source.token_secret)
        raise ClinicalSourceTokenMissing("the project's REDCap token is not set")

    def _bound_token(self, api_url: str, project_id: str) -> str:
        """The service-owned token, only if it was given for ``api_url`` (re-read once past the cache
        when the cached one names another URL: the token may just have been set again)."""
        assert self._secrets is not None
        ref = (self._naming or SecretNaming(redcap_token_prefix=self._prefix or "agent-memory/redcap/")
               ).redcap_token(project_id)
        for fresh in (False, True):
            try:
                stored = RedcapTokenSecret.from_secret(self._secrets.read(ref, fresh=fresh))
            except SecretNotSet:
                raise ClinicalSourceTokenMissing("the project's REDCap token is not set") from None
            except SecretUnreadable:
                raise ClinicalSourceTokenUnreadable("the project's REDCap token cannot be read") from None
            if stored.api_url == api_url:
                return stored.token.get_secret_value()
        raise ClinicalSourceTokenMissing("the project's REDCap token is not set for this API URL; set it again")


def _project_on(session: requests.Session) -> type[redcap.Project]:
    """``redcap.Project`` sending through ``session``: PyCap 2.7 posts through one module-level
    session (``redcap.request._session``, bound as ``_RCRequest``'s default); this subclass passes
    ours instead. The override repeats ``Base._call_api`` of the pinned PyCap with one argument
    added (``tests/unit/test_egress_transport.py`` guards it)."""
    import redcap
    from redcap.request import _ContentConfig, _RCRequest

    class _GuardedProject(redcap.Project):
        def _call_api(self, payload: dict[str, Any], return_type: Any, file: Any = None) -> Any:
            config = _ContentConfig(return_empty_json=return_type == "empty_json",
                                    return_bytes=return_type == "file_map")
            request = _RCRequest(url=self.url, payload=payload, config=config, session=session)
            return request.execute(verify_ssl=self.verify_ssl, return_headers=return_type == "file_map", file=file,
                                   **self._request_kwargs)

    return _GuardedProject


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
