"""The Anthropic adapter of the LLM port, on the real ``anthropic`` SDK (2.x, non-streaming).

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
errors -> ``LLMUnavailable``; other 4xx (400, 401, 403, 404, 413, 422, ...) ->
``LLMBadRequest``; a timeout -> ``LLMDeadlineExceeded``.

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
from typing import Any

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

from agent_memory.domain.errors import LLMBadRequest, LLMDeadlineExceeded, LLMError, LLMUnavailable
from agent_memory.domain.llm import LLMRequest, LLMResponse, Provider, Usage

__all__ = ["AnthropicClient", "DeadlineMiddleware", "MIN_ATTEMPT_S", "load_api_key"]

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
#: Content-block keys kept in ``LLMResponse.content``.
_BLOCK_KEYS = ("type", "text", "id", "name", "input")
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


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


def _to_wire_request(request: LLMRequest) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments for ``request``."""
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
    if request.tool_choice is not None:
        kwargs["tool_choice"] = request.tool_choice
    return kwargs


def _from_wire_message(message: Any, request: LLMRequest) -> LLMResponse:
    content: list[dict[str, Any]] = []
    for block in message.content:
        dumped = block.model_dump()
        content.append({k: dumped[k] for k in _BLOCK_KEYS if k in dumped})
    usage = None
    if message.usage is not None:
        counts = {key: getattr(message.usage, key, None) for key in _USAGE_KEYS}
        usage = Usage(**{key: value for key, value in counts.items() if isinstance(value, int)})
    return LLMResponse(
        content=content,
        stop_reason=str(message.stop_reason or ""),
        provider="anthropic",
        model=str(message.model or request.model),
        usage=usage,
    )


def _map_status_error(err: APIStatusError, *, fallback_retry_after_s: float) -> LLMError:
    status = err.status_code
    label = f"HTTP {status}" + (f" {err.type}" if err.type else "")
    if status in _RETRIED_STATUSES or status >= 500:
        wait = retry_after_s(err.response.headers) or fallback_retry_after_s
        return LLMUnavailable(f"the LLM is unavailable ({label})", retry_after_s=wait)
    return LLMBadRequest(f"the LLM rejected the request ({label})")


class AnthropicClient:
    """:class:`agent_memory.domain.llm.LLMClient` on the Anthropic Messages API."""

    provider: Provider = "anthropic"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        max_retries: int = 2,
        clock: Callable[[], float] = time.monotonic,
        attempt_timeout_s: float = DEFAULT_ATTEMPT_TIMEOUT_S,
    ) -> None:
        if not api_key:
            raise ValueError("an Anthropic API key is required")
        _quiet_sdk_logger()
        self._max_retries = max_retries
        self._clock = clock
        self._attempt_timeout_s = attempt_timeout_s
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=anthropic.Timeout(attempt_timeout_s, connect=_CONNECT_TIMEOUT_S),
            open_telemetry={"traces": {"content_mode": "metadata_only"}},
        )

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Run one Messages-API call (SDK retries inside ``request.deadline``).

        Raises:
            LLMUnavailable: overloaded / rate limited / unreachable after the retries, or a
                retry would have to wait past the deadline (``retry_after_s`` set).
            LLMDeadlineExceeded: no reply before ``request.deadline``.
            LLMBadRequest: the API rejected the request (4xx other than 408/409/429).
        """
        client = self._client
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
        started = self._clock()
        outcome = "error"
        try:
            message = client.messages.create(**_to_wire_request(request))
            outcome = "ok"
        except LLMError as err:
            outcome = type(err).__name__
            raise
        except APITimeoutError:
            outcome = "timeout"
            raise LLMDeadlineExceeded("the LLM did not answer in time") from None
        except APIConnectionError:
            outcome = "connection_error"
            raise LLMUnavailable("the LLM is unreachable", retry_after_s=fallback_wait) from None
        except APIStatusError as err:
            outcome = f"http_{err.status_code}"
            raise _map_status_error(err, fallback_retry_after_s=fallback_wait) from None
        finally:
            _log.info(
                "llm call purpose=%s model=%s outcome=%s elapsed_s=%.3f",
                request.purpose,
                request.model,
                outcome,
                self._clock() - started,
            )
        return _from_wire_message(message, request)


def load_api_key(secret_name: str) -> str:
    """Read the Anthropic API key from Secrets Manager (Powertools Parameters, cached 300 s).

    The secret is either the key itself or JSON ``{"api_key": "..."}``.

    Raises:
        ValueError: the secret is empty or JSON without a non-empty ``api_key``.
        aws_lambda_powertools.utilities.parameters.exceptions.GetParameterError: it could
            not be read.
    """
    from aws_lambda_powertools.utilities import parameters

    raw = parameters.get_secret(secret_name, max_age=300)
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
