"""``python -m infra.local.server`` (``make run``): the whole service on this machine.

No AWS account, no Docker, no network: moto serves DynamoDB and Secrets Manager, the tables come
from ``template.yaml``, the real handlers answer API Gateway v2 events, the LLM is the offline
provider unless ``ANTHROPIC_API_KEY`` is set (then the key is stored in moto Secrets Manager and
removed from the environment, so the handler reads it the way it does in AWS).

Environment: ``PORT`` (default 3000), ``MOTO_PORT`` (default: a free port), ``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``, ``LOCAL_DEV_PROJECTS`` (the dev user's projects and roles,
``demo-iit:admin,demo-clinic:admin`` by default).
Logs one line per request (method, path, status, duration, function); never bodies.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import warnings
from types import FrameType

from infra.local.stack import DEV_USER, LocalStack, LocalStackError, dev_projects_claim

EXAMPLE_DATA_QUESTION = "P001 入组了吗？"
EXAMPLE_HISTORY_QUESTION = "最近入组太慢了，我们之前有没有讨论过怎么解决？"


def curl_example(base_url: str, content: str, session: str = "demo-1") -> str:
    """A ready-to-paste curl posting ``{"content": ...}`` to the demo project's chat route."""
    return (
        f"curl -s -X POST {base_url}/v1/projects/demo-iit/sessions/{session}/messages \\\n"
        f"    -H 'content-type: application/json' \\\n"
        f"    -d '{{\"content\": \"{content}\"}}'"
    )


def banner(stack: LocalStack) -> str:
    """What the server prints once it is ready."""
    if stack.llm_provider == "anthropic":
        llm = "anthropic (Claude; API key read from moto Secrets Manager)"
    else:
        llm = "offline (deterministic, no network; set ANTHROPIC_API_KEY to use Claude)"
    reports = len(stack.repo.load_history("demo-iit", limit_weeks=520))
    return "\n".join(
        [
            "Agent Memory Service - local stack",
            f"  API:        {stack.base_url}",
            f"  LLM:        {llm}",
            f"  AWS (moto): {stack.moto_url}  tables: {', '.join(sorted(stack.table_names.values()))}",
            f"  auth:       requests without Authorization run as {DEV_USER} (custom:projects {dev_projects_claim()})",
            f"  demo data:  project demo-iit (hot memory, {reports} weekly reports), project demo-clinic",
            "",
            "Ask about current data:",
            "  " + curl_example(stack.base_url, EXAMPLE_DATA_QUESTION),
            "Ask about history (loads the weekly reports):",
            "  " + curl_example(stack.base_url, EXAMPLE_HISTORY_QUESTION),
            "Health:",
            f"  curl -s {stack.base_url}/v1/health",
            "",
            "Ctrl-C to stop.",
        ]
    )


def main() -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("infra.local").setLevel(logging.INFO)  # one line per request
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-call access log
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    port = int(os.environ.get("PORT", "3000"))
    moto_port = int(os.environ.get("MOTO_PORT", "0"))

    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    try:
        stack = LocalStack(port=port, moto_port=moto_port, moto_mode="thread").start()
    except (LocalStackError, OSError) as exc:
        print(f"local stack failed to start: {exc}", file=sys.stderr)
        return 1
    try:
        print(banner(stack), flush=True)
        while not stop.wait(0.5):
            pass
        print("\nstopping ...", file=sys.stderr, flush=True)
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
