"""The Anthropic adapter of the LLM port, on the real ``anthropic`` SDK (2.x, non-streaming): the
Claude API (:class:`AnthropicClient`, API key from Secrets Manager) and Amazon Bedrock
(:class:`BedrockClient`, the same SDK's ``AnthropicBedrock`` signed with the function's IAM role).

What is sent: model, max_tokens, system (``cache_control`` where marked), messages as given,
tools, ``tool_choice`` (a forced one only for models that accept it), ``output_config`` (the
structured output's JSON schema and the effort) when set. Never sampling parameters and never a
``thinking`` setting: current models think adaptively by default and reject budgets and
``disabled`` (docs/architecture.md, "LLM calls").

What comes back: the response's content blocks EXACTLY as received (read from the raw JSON body,
every key of every block: ``thinking`` + ``signature``, ``redacted_thinking`` + ``data``, ``text``,
``tool_use``, server tool blocks), so a tool loop can send them back unchanged; the stop reason
(``pause_turn`` and ``refusal`` included); the usage as :class:`~agent_memory.domain.llm.Usage`.
A 2xx body that is not a Messages response (not JSON, truncated JSON, another shape) ->
``LLMBadResponse``.

Retries are the SDK's own (429, 529, other 5xx, 408/409, connection errors; ``max_retries``
times, honouring ``retry-after`` / ``retry-after-ms``, else exponential backoff of at most
8 s). The request's deadline is enforced by :class:`DeadlineMiddleware`, which the
SDK runs inside its retry loop once per HTTP attempt:

* before an attempt, less than :data:`MIN_ATTEMPT_S` left -> ``LLMDeadlineExceeded``;
* each attempt is sent with ``timeout = time left`` (so a slow reply ends at the deadline);
* an attempt that timed out at the deadline -> ``LLMDeadlineExceeded``;
* a retryable failure whose wait (``retry-after`` or the SDK's largest backoff) would end
  past the deadline -> ``LLMUnavailable(retry_after_s=wait)`` instead of the SDK sleeping.

Errors the middleware raises are ours (``agent_memory.domain.errors``) and are raised ``from None``:
the SDK only retries exceptions whose ``__cause__`` chain holds one of its own retryable
errors, so ours end the call at once.

After the SDK gives up, its errors are mapped: 429 / 529 / 5xx / 408 / 409 / connection
errors -> ``LLMUnavailable``; 401 / 403 -> ``LLMAuthError`` (metric ``LLMAuthError``); 404 ->
``LLMModelNotFound`` (metric ``LLMModelNotFound``: a retired or unknown model id); other 4xx (400,
413, 422, ...) -> ``LLMBadRequest``; a timeout -> ``LLMDeadlineExceeded``. A 401 with a key read
from Secrets Manager first re-reads the secret (a rotated key) and, if it changed, tries once more.

Nothing here logs prompt or reply text or the key; the SDK's own ``anthropic`` logger (which
dumps request bodies at DEBUG) is held at INFO or above, and its OpenTelemetry spans are
pinned to ``metadata_only``.
"""

from __future__ import annotations

import email.utils
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anthropic
from anthropic import (
    APIConnectionError,
    APIRequest,
    APIResponse,
    APIStatusError,
    APITimeoutError,
    CallNext,
    Middleware,
)
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from agent_memory.config import model_family
from agent_memory.domain.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMDeadlineExceeded,
    LLMError,
    LLMModelNotFound,
    LLMUnavailable,
)
from agent_memory.domain.llm import LLMRequest, LLMResponse, Provider, Usage
from agent_memory.observability import metrics

__all__ = [
    "AnthropicClient",
    "BedrockClient",
    "DeadlineMiddleware",
    "MIN_ATTEMPT_S",
    "SecretApiKey",
    "load_api_key",
    "rejects_forced_tool_choice",
]

_log = logging.getLogger(__name__)

#: An attempt is not started with less than this many seconds left before the deadline.
MIN_ATTEMPT_S = 0.5
#: The SDK's backoff: ``min(INITIAL * 2**retries_taken, MAX)`` times a jitter in [0.75, 1].
_SDK_INITIAL_RETRY_DELAY_S = 0.5
_SDK_MAX_RETRY_DELAY_S = 8.0
#: Per-attempt timeout when a request has no deadline (background jobs), and connect timeout.
DEFAULT_ATTEMPT_TIMEOUT_S = 60.0
_CONNECT_TIMEOUT_S = 5.0
#: Statuses the SDK retries (mirrors ``SyncAPIClient._should_retry``).
_RETRIED_STATUSES = frozenset({408, 409, 429})
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
#: Keys a content block of these types must carry, with their JSON types (others are kept as received).
_REQUIRED_BLOCK_KEYS: dict[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "tool_use": (("id", str), ("name", str), ("input", dict)),
    "thinking": (("thinking", str), ("signature", str)),
    "redacted_thinking": (("data", str),),
}


def _quiet_sdk_logger() -> None:
    """Keep the SDK from logging request bodies (prompts) at DEBUG."""
    sdk_logger = logging.getLogger("anthropic")
    if sdk_logger.getEffectiveLevel() < logging.INFO:
        sdk_logger.setLevel(logging.INFO)


def _sdk_backoff_upper_bound_s(retries_taken: int) -> float:
    """The longest backoff the SDK may sleep after attempt ``retries_taken`` (0-based)
    when the response named no wait."""
    return min(_SDK_INITIAL_RETRY_DELAY_S * 2.0 ** min(retries_taken, 1000), _SDK_MAX_RETRY_DELAY_S)


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """The wait a response asks for (``retry-after-ms``, then ``retry-after`` as seconds or
    an HTTP date), parsed as the SDK does; ``None`` when absent, unparsable or not positive."""
    if headers is None:
        return None
    value: float | None = None
    try:
        value = float(headers.get("retry-after-ms", "")) / 1000.0
    except (TypeError, ValueError):
        raw = headers.get("retry-after")
        if raw:
            try:
                value = float(raw)
            except ValueError:
                parsed = email.utils.parsedate_tz(raw)
                if parsed is not None:
                    value = float(email.utils.mktime_tz(parsed) - time.time())
    if value is None or value <= 0:
        return None
    return value


def _sdk_will_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether the SDK retries a response (mirrors ``SyncAPIClient._should_retry``)."""
    should_retry = headers.get("x-should-retry")
    if should_retry == "true":
        return True
    if should_retry == "false":
        return False
    return status in _RETRIED_STATUSES or status >= 500


class DeadlineMiddleware(Middleware):
    """Keeps one ``messages.create`` call, retries included, inside ``deadline``.

    Runs once per HTTP attempt inside the SDK's retry loop; see the module docstring.
    """

    def __init__(
        self,
        deadline: float,
        *,
        max_retries: int,
        clock: Callable[[], float] = time.monotonic,
        attempt_timeout_s: float = DEFAULT_ATTEMPT_TIMEOUT_S,
    ) -> None:
        self._deadline = deadline
        self._max_retries = max_retries
        self._clock = clock
        self._attempt_timeout_s = attempt_timeout_s

    def _left(self) -> float:
        return self._deadline - self._clock()

    def _retries_left(self, request: APIRequest) -> int:
        max_retries = request.max_retries if isinstance(request.max_retries, int) else self._max_retries
        return max_retries - request.retries_taken

    def handle(self, request: APIRequest, call_next: CallNext) -> APIResponse[Any]:
        left = self._left()
        if left < MIN_ATTEMPT_S:
            _log.warning("llm deadline reached before attempt %d", request.retries_taken + 1)
            raise LLMDeadlineExceeded("no time left for an LLM attempt before the deadline") from None

        try:
            response = call_next(request.copy(timeout=min(left, self._attempt_timeout_s)))
        except APIConnectionError as err:
            left = self._left()
            if isinstance(err, APITimeoutError) and left < MIN_ATTEMPT_S:
                _log.warning("llm attempt %d timed out at the deadline", request.retries_taken + 1)
                raise LLMDeadlineExceeded("the LLM did not answer before the deadline") from None
            if self._retries_left(request) > 0:
                wait = _sdk_backoff_upper_bound_s(request.retries_taken)
                if wait + MIN_ATTEMPT_S > left:
                    _log.warning("llm connection failed; no time for a retry before the deadline")
                    raise LLMUnavailable("the LLM is unreachable", retry_after_s=wait) from None
            raise  # the SDK retries it (or maps it after its last attempt)

        http = response.http_response
        if (
            not http.is_success
            and self._retries_left(request) > 0
            and _sdk_will_retry(http.status_code, http.headers)
        ):
            wait = retry_after_s(http.headers) or _sdk_backoff_upper_bound_s(request.retries_taken)
            if wait + MIN_ATTEMPT_S > self._left():
                _log.warning(
                    "llm answered %d asking to wait %.1f s, past the deadline; not retrying",
                    http.status_code,
                    wait,
                )
                http.close()
                raise LLMUnavailable(
                    f"the LLM is unavailable (HTTP {http.status_code})", retry_after_s=wait
                ) from None
        return response


def rejects_forced_tool_choice(model: str) -> bool:
    """Whether ``model`` answers 400 to a forced ``tool_choice`` (``tool`` / ``any``): the generation-5
    models, which think before answering (docs/architecture.md, "LLM calls")."""
    parsed = model_family(model)
    return parsed is not None and parsed[1] >= 5


def _tool_choice(request: LLMRequest) -> dict[str, Any] | None:
    """``request.tool_choice``, except that a forced choice becomes ``auto`` for a model that rejects it."""
    choice = request.tool_choice
    if choice is None or choice.get("type") not in ("tool", "any") or not rejects_forced_tool_choice(request.model):
        return choice
    _log.warning("llm call purpose=%s: forced tool_choice dropped for model %s", request.purpose, request.model)
    relaxed: dict[str, Any] = {"type": "auto"}
    if "disable_parallel_tool_use" in choice:
        relaxed["disable_parallel_tool_use"] = choice["disable_parallel_tool_use"]
    return relaxed


def _to_wire_request(request: LLMRequest) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments for ``request`` (see the module docstring)."""
    system: list[dict[str, Any]] = []
    for block in request.system:
        item: dict[str, Any] = {"type": "text", "text": block.text}
        if block.cache:
            item["cache_control"] = {"type": "ephemeral"}
        system.append(item)
    kwargs: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": request.messages,
    }
    if system:
        kwargs["system"] = system
    if request.tools:
        kwargs["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
    choice = _tool_choice(request)
    if choice is not None:
        kwargs["tool_choice"] = choice
    output_config: dict[str, Any] = {}
    if request.output_schema is not None:
        output_config["format"] = {"type": "json_schema", "schema": request.output_schema}
    if request.effort is not None:
        output_config["effort"] = request.effort
    if output_config:
        kwargs["output_config"] = output_config
    return kwargs


def _bad_response(why: str) -> LLMBadResponse:
    _log.warning("llm answered 2xx with something that is not a Messages response: %s", why)
    return LLMBadResponse("the LLM provider answered with something that is not a Messages response")


def _checked_block(block: Any, index: int) -> dict[str, Any]:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise _bad_response(f"content[{index}] is not a content block")
    for key, kind in _REQUIRED_BLOCK_KEYS.get(block["type"], ()):
        if not isinstance(block.get(key), kind):
            raise _bad_response(f"content[{index}] ({block['type']}) has no valid {key!r}")
    return block


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    counts = {key: raw.get(key) for key in _USAGE_KEYS}
    return Usage(**{key: value for key, value in counts.items() if isinstance(value, int) and value >= 0})


def _parse_message(body: bytes, request: LLMRequest, provider: Provider) -> LLMResponse:
    """The Messages response in ``body`` (raw bytes of a 2xx answer), its blocks untouched.

    Raises:
        LLMBadResponse: not JSON (truncated included), or not a Messages response.
    """
    try:
        message = json.loads(body)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        raise _bad_response("the body is not JSON") from None
    if not isinstance(message, dict) or message.get("type") != "message":
        raise _bad_response("the body is not a message object")
    content = message.get("content")
    if not isinstance(content, list):
        raise _bad_response("the message has no content list")
    stop_reason = message.get("stop_reason")
    if not isinstance(stop_reason, str):
        raise _bad_response("the message has no stop_reason")
    model = message.get("model")
    return LLMResponse(
        content=[_checked_block(block, i) for i, block in enumerate(content)],
        stop_reason=stop_reason,
        provider=provider,
        model=model if isinstance(model, str) and model else request.model,
        usage=_usage(message.get("usage")),
    )


#: Errors counted by the adapter itself, by metric name (the admin alarms watch the first two).
_COUNTED: tuple[tuple[type[LLMError], str], ...] = (
    (LLMAuthError, "LLMAuthError"),
    (LLMModelNotFound, "LLMModelNotFound"),
    (LLMBadResponse, "LLMBadResponse"),
)


def _count(metric_name: str) -> None:
    """One count of ``metric_name`` now (dimension ``service`` only, as the alarms expect), emitted at
    once so that the background jobs, which answer no HTTP request, count as well."""
    with single_metric(name=metric_name, unit=MetricUnit.Count, value=1, namespace=metrics.namespace):
        pass


def _map_status_error(err: APIStatusError, *, fallback_retry_after_s: float) -> LLMError:
    status = err.status_code
    label = f"HTTP {status}" + (f" {err.type}" if err.type else "")
    if status in (401, 403):
        return LLMAuthError(f"the LLM provider refused our credentials ({label})")
    if status == 404:
        return LLMModelNotFound(f"the LLM provider does not know the model ({label})")
    if status in _RETRIED_STATUSES or status >= 500:
        wait = retry_after_s(err.response.headers) or fallback_retry_after_s
        return LLMUnavailable(f"the LLM is unavailable ({label})", retry_after_s=wait)
    return LLMBadRequest(f"the LLM rejected the request ({label})")


class ApiKeySource(Protocol):
    """Where the API key comes from: called before every call (cheap: cached), ``force=True`` re-reads."""

    def __call__(self, *, force: bool = False) -> str: ...


class SecretApiKey:
    """The API key in Secrets Manager, read through Powertools Parameters and cached ``max_age_s``
    seconds: a rotated secret is used from the first call after that, without a new version."""

    def __init__(self, secret_name: str, *, max_age_s: int = 300) -> None:
        self.secret_name = secret_name
        self.max_age_s = max_age_s

    def __call__(self, *, force: bool = False) -> str:
        """The key (re-read when ``force``).

        Raises:
            LLMAuthError: the secret holds no usable key (empty, not JSON, no ``api_key``): a
                configuration fault answered 502 ``llm_auth`` with its metric, never a 500.
        """
        try:
            return load_api_key(self.secret_name, max_age_s=self.max_age_s, force_fetch=force)
        except ValueError as exc:
            _count("LLMAuthError")
            raise LLMAuthError(f"the API key secret is unusable: {exc}") from None


class _MessagesClient:
    """:class:`agent_memory.ports.LLMClient` over an SDK client (see the module docstring)."""

    provider: Provider

    def __init__(
        self,
        *,
        max_retries: int,
        clock: Callable[[], float],
        attempt_timeout_s: float,
    ) -> None:
        _quiet_sdk_logger()
        self._max_retries = max_retries
        self._clock = clock
        self._attempt_timeout_s = attempt_timeout_s

    def _sdk_options(self) -> dict[str, Any]:
        return {
            "max_retries": self._max_retries,
            "timeout": anthropic.Timeout(self._attempt_timeout_s, connect=_CONNECT_TIMEOUT_S),
            "open_telemetry": {"traces": {"content_mode": "metadata_only"}},
        }

    def _sdk_client(self) -> Any:
        raise NotImplementedError

    def _refreshed_after_auth_error(self) -> bool:
        """Whether the credentials changed since the failed call (then it is tried once more)."""
        return False

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Run one Messages-API call (SDK retries inside ``request.deadline``).

        Raises:
            LLMUnavailable: overloaded / rate limited / unreachable after the retries, or a
                retry would have to wait past the deadline (``retry_after_s`` set).
            LLMDeadlineExceeded: no reply before ``request.deadline``.
            LLMAuthError: the provider refused the credentials (401 / 403).
            LLMModelNotFound: the provider does not know the model (404: retired or wrong id).
            LLMBadRequest: the API rejected the request (another 4xx but 408/409/429).
            LLMBadResponse: a 2xx answer that is not a Messages response.
        """
        started = self._clock()
        outcome = "error"
        try:
            try:
                body = self._call(request)
            except LLMAuthError:
                if not self._refreshed_after_auth_error():
                    raise
                _log.warning("llm credentials refused; trying once more with the re-read key")
                body = self._call(request)
            response = _parse_message(body, request, self.provider)
            outcome = "ok"
        except LLMError as err:
            outcome = type(err).__name__
            metric = next((name for kind, name in _COUNTED if isinstance(err, kind)), None)
            if metric is not None:
                _count(metric)  # once per failed call (not for a 401 the re-read key recovered from)
            raise
        finally:
            _log.info(
                "llm call provider=%s purpose=%s model=%s outcome=%s elapsed_s=%.3f",
                self.provider,
                request.purpose,
                request.model,
                outcome,
                self._clock() - started,
            )
        if response.usage is not None:
            _log.info("llm usage purpose=%s %s", request.purpose, response.usage.as_dict())
        return response

    def _call(self, request: LLMRequest) -> bytes:
        """One ``messages.create`` (retries inside) -> the raw body of the 2xx answer."""
        client = self._sdk_client()
        if request.deadline is not None:
            client = client.with_middleware(
                DeadlineMiddleware(
                    request.deadline,
                    max_retries=self._max_retries,
                    clock=self._clock,
                    attempt_timeout_s=self._attempt_timeout_s,
                )
            )
        fallback_wait = _sdk_backoff_upper_bound_s(self._max_retries)
        try:
            raw = client.messages.with_raw_response.create(**_to_wire_request(request))
            body: bytes = raw.read()
        except LLMError:
            raise
        except APITimeoutError:
            raise LLMDeadlineExceeded("the LLM did not answer in time") from None
        except APIConnectionError:
            raise LLMUnavailable("the LLM is unreachable", retry_after_s=fallback_wait) from None
        except APIStatusError as err:
            raise _map_status_error(err, fallback_retry_after_s=fallback_wait) from None
        return body


class AnthropicClient(_MessagesClient):
    """The Claude API (``anthropic.Anthropic``), with the API key given or read from a
    :class:`SecretApiKey` before every call (the SDK client is rebuilt when the key changed)."""

    provider: Provider = "anthropic"

    def __init__(
        self,
        api_key: str | ApiKeySource,
        *,
        base_url: str | None = None,
        max_retries: int = 2,
        clock: Callable[[], float] = time.monotonic,
        attempt_timeout_s: float = DEFAULT_ATTEMPT_TIMEOUT_S,
    ) -> None:
        super().__init__(max_retries=max_retries, clock=clock, attempt_timeout_s=attempt_timeout_s)
        self._key_source: ApiKeySource | None = None if isinstance(api_key, str) else api_key
        self._base_url = base_url
        self._key = api_key if isinstance(api_key, str) else api_key()
        if not self._key:
            raise ValueError("an Anthropic API key is required")
        self._client = self._build(self._key)

    def _build(self, key: str) -> anthropic.Anthropic:
        return anthropic.Anthropic(api_key=key, base_url=self._base_url, **self._sdk_options())

    def _use(self, key: str) -> bool:
        if not key or key == self._key:
            return False
        self._key = key
        self._client = self._build(key)
        return True

    def _sdk_client(self) -> Any:
        if self._key_source is not None:
            self._use(self._key_source())
        return self._client

    def _refreshed_after_auth_error(self) -> bool:
        if self._key_source is None:
            return False
        try:
            key = self._key_source(force=True)
        except Exception:  # noqa: BLE001 - the original auth error is the one to report
            _log.warning("llm key could not be re-read after an auth error", exc_info=True)
            return False
        return self._use(key)


class BedrockClient(_MessagesClient):
    """Claude on Amazon Bedrock (``anthropic.AnthropicBedrock``: ``POST /model/{model id}/invoke``,
    SigV4-signed with the function's IAM role; no API key). ``request.model`` is a Bedrock model or
    inference-profile id (e.g. ``anthropic.claude-sonnet-5-5``)."""

    provider: Provider = "bedrock"

    def __init__(
        self,
        *,
        aws_region: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        clock: Callable[[], float] = time.monotonic,
        attempt_timeout_s: float = DEFAULT_ATTEMPT_TIMEOUT_S,
    ) -> None:
        super().__init__(max_retries=max_retries, clock=clock, attempt_timeout_s=attempt_timeout_s)
        self._client = anthropic.AnthropicBedrock(aws_region=aws_region, base_url=base_url, **self._sdk_options())

    def _sdk_client(self) -> Any:
        return self._client


def load_api_key(secret_name: str, *, max_age_s: int = 300, force_fetch: bool = False) -> str:
    """Read the Anthropic API key from Secrets Manager (Powertools Parameters, cached ``max_age_s``).

    The secret is either the key itself or JSON ``{"api_key": "..."}``. ``force_fetch`` skips the
    cache (after the API refused the cached key).

    Raises:
        ValueError: the secret is empty or JSON without a non-empty ``api_key``.
        aws_lambda_powertools.utilities.parameters.exceptions.GetParameterError: it could
            not be read.
    """
    from aws_lambda_powertools.utilities import parameters

    raw = parameters.get_secret(secret_name, max_age=max_age_s, force_fetch=force_fetch)
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8")
    value = str(raw).strip()
    if value.startswith("{"):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"secret {secret_name!r} is not valid JSON") from None
        key = parsed.get("api_key") if isinstance(parsed, dict) else None
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"secret {secret_name!r} has no 'api_key'")
        return key.strip()
    if not value:
        raise ValueError(f"secret {secret_name!r} is empty")
    return value
