"""Make Powertools' "current request" thread-local in the local runtime.

Lambda runs one request per execution environment (one process), and Powertools' event handler
relies on it: ``ApiGatewayResolver.resolve`` stores the request in CLASS attributes of
``BaseRouter`` (``BaseRouter.current_event = ...``, ``BaseRouter.lambda_context = ...``), shared by
every resolver of the process. The local runtime serves several requests of several functions at
once in threads of ONE process (``infra.local.stack``, a pool of handler "containers" per
function), so without this patch a request could be routed, validated and answered with another
thread's event (a body validated by another route, one caller's body stored under another
request). :func:`apply` turns those two attributes into per-thread values; in Lambda nothing is
patched (a deployed function never imports ``infra``). Upstream-style summary: the resolver's
current event belongs to the invocation, not to the class; a per-thread value keeps the
one-request-per-process behaviour and makes concurrent resolvers in one process safe.
"""

from __future__ import annotations

import threading
from typing import Any

_NAMES = frozenset({"current_event", "lambda_context"})
_local = threading.local()
_applied = False


def _thread_value(name: str) -> Any:
    try:
        return getattr(_local, name)
    except AttributeError:
        raise AttributeError(name) from None


def _per_thread_property(name: str) -> property:
    def get(_self: object) -> Any:
        return _thread_value(name)

    def set_(_self: object, value: Any) -> None:
        setattr(_local, name, value)

    return property(get, set_)


def apply() -> None:
    """Patch ``aws_lambda_powertools.event_handler.api_gateway.BaseRouter`` once per process:
    class-level reads and writes of ``current_event`` / ``lambda_context`` (what ``resolve`` does)
    and instance-level ones (what routes and middlewares do) go to the calling thread's value."""
    global _applied
    if _applied:
        return
    # through agent_memory.http.powertools: the event-handler package stays lazy, as in Lambda
    from agent_memory.http.powertools import BaseRouter

    router = BaseRouter
    base_meta = type(router)

    class ThreadLocalRouterMeta(base_meta):  # type: ignore[misc, valid-type]  # a metaclass known at run time
        """``BaseRouter``'s metaclass: its two per-request class attributes live per thread."""

        def __getattribute__(cls, name: str) -> Any:
            if name in _NAMES:
                return _thread_value(name)
            return super().__getattribute__(name)

        def __setattr__(cls, name: str, value: Any) -> None:
            if name in _NAMES:
                setattr(_local, name, value)
                return
            super().__setattr__(name, value)

    for name in _NAMES:
        # instances (every resolver and router) read and write the same per-thread value
        type.__setattr__(router, name, _per_thread_property(name))
    router.__class__ = ThreadLocalRouterMeta  # type: ignore[method-assign]  # the class's metaclass swapped
    _applied = True


__all__ = ["apply"]
