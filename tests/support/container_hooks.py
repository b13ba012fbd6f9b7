"""Hooks the local runtime calls inside a function's containers, right after the handler's module
is imported (``LOCAL_CONTAINER_HOOK=module:function``, set for a block with
``LocalStack.configured``): how a test replaces a dependency of a function whose handler runs in
another process."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

#: The file :func:`record_llm_requests` appends to (one JSON document per line).
LLM_REQUEST_LOG_ENV = "TEST_LLM_REQUEST_LOG"


def erase_inline_up_to_two_items(module: Any) -> None:
    """The governance function erases inline only targets of at most 2 items (larger: a job): its
    routes' collaborators swapped through the resolver's dependency table."""
    from agent_memory.http.routes import governance

    app = module.app
    deps = app.dependency_overrides[governance.function_deps]()
    smaller = dataclasses.replace(deps, governance=dataclasses.replace(deps.governance, inline_items=2))
    app.dependency_overrides[governance.function_deps] = lambda: smaller


def record_llm_requests(module: Any) -> None:
    """Every request the offline provider receives in this container is appended, as JSON, to the
    file named by :data:`LLM_REQUEST_LOG_ENV`."""
    from agent_memory.adapters.llm.offline import OfflineLLM

    complete = OfflineLLM.complete
    path = os.environ[LLM_REQUEST_LOG_ENV]

    def recording(self: OfflineLLM, request: Any) -> Any:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(dataclasses.asdict(request), ensure_ascii=False, default=str) + "\n")
        return complete(self, request)

    OfflineLLM.complete = recording  # type: ignore[method-assign]


def die_on_request_header(module: Any) -> None:
    """The handler's process is killed (SIGKILL, as the out-of-memory killer would) while it holds a
    request that carries the header ``x-test-die``."""
    import signal

    handler = module.lambda_handler

    def dying(event: dict[str, Any], context: Any) -> Any:
        if "x-test-die" in (event.get("headers") or {}):
            os.kill(os.getpid(), signal.SIGKILL)
        return handler(event, context)

    module.lambda_handler = dying
