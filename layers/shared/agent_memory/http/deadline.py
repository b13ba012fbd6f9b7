"""The time budget of one API request, as a ``time.monotonic()`` instant.

Two clocks bound a chat turn:

* the Lambda timeout (``context.get_remaining_time_in_millis()``), and
* API Gateway's integration timeout: an HTTP API waits at most **30 s** for the Lambda
  integration (an AWS quota, not adjustable upward), then answers 503 by itself, with no
  request id of ours and after the turn may already be half-written.

The LLM call must end before the smaller of the two, minus a *reserve*: the time the
handler still needs after a failed LLM call to record the failed turn (the user message is
already in the flow log) and to send its own JSON 503/504. ``LLMRequest.deadline`` takes the
value returned here; the Anthropic adapter derives every attempt's timeout from it and never
sleeps for a retry past it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

#: API Gateway HTTP API maximum integration timeout, in seconds (AWS quota).
HTTP_API_INTEGRATION_TIMEOUT_S = 30.0


class LambdaContextLike(Protocol):
    """The part of the Lambda context object used here."""

    def get_remaining_time_in_millis(self) -> int: ...


def deadline_from_context(
    lambda_context: LambdaContextLike | None,
    *,
    started_monotonic: float,
    api_gateway_timeout_s: float = HTTP_API_INTEGRATION_TIMEOUT_S,
    reserve_s: float,
    now: Callable[[], float] = time.monotonic,
) -> float:
    """Return the monotonic instant by which the LLM call must have returned.

    ``min(now + remaining Lambda time - reserve, started + api_gateway_timeout_s - reserve)``.

    Args:
        lambda_context: the Lambda context; ``None`` (local runs) leaves only the gateway
            budget.
        started_monotonic: ``time.monotonic()`` when the handler started (close to when
            API Gateway started its own 30 s clock).
        api_gateway_timeout_s: the integration timeout (30 s for an HTTP API).
        reserve_s: seconds kept back to write the failed turn and answer.
        now: the monotonic clock (injected by tests).
    """
    gateway_deadline = started_monotonic + api_gateway_timeout_s - reserve_s
    if lambda_context is None:
        return gateway_deadline
    lambda_deadline = now() + lambda_context.get_remaining_time_in_millis() / 1000.0 - reserve_s
    return min(lambda_deadline, gateway_deadline)
