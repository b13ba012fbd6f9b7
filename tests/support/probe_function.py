"""A Lambda handler for the tests of the local runtime's containers (tests/integration/
test_local_container_pool.py): it reports what its container sees, prints, raises, sleeps or dies
on request (``event["do"]``)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

_invocations = 0


def handler(event: dict[str, Any], context: Any) -> Any:
    """``describe``: pid, environment, invocations so far, request id, remaining ms, SIGINT
    disposition; ``print``: prints ``text``; ``raise``: ValueError; ``sleep``: ``seconds``;
    ``kill``: sends ``signal`` to its own process."""
    global _invocations
    _invocations += 1
    action = event["do"]
    if action == "describe":
        sigint = "ignored" if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else "handled"
        return {"pid": os.getpid(), "env": dict(os.environ), "invocations": _invocations,
                "request_id": context.aws_request_id, "remaining_ms": context.get_remaining_time_in_millis(),
                "sigint": sigint}
    if action == "print":
        print(event["text"])
        return "printed"
    if action == "raise":
        raise ValueError("the probe raised")
    if action == "sleep":
        time.sleep(event["seconds"])
        return "slept"
    os.kill(os.getpid(), event["signal"])
    time.sleep(10)
    return "not killed"
