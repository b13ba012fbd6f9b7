"""One "Lambda container" of the chat function in its own OS process, for the concurrency test.

``python -m tests.support.chat_process --project P --session S --worker N --turns 2`` imports
``functions/chat/app.py`` with the environment it is given (the local stack's functions'
environment: tables, moto endpoint, offline LLM), prints ``READY``, waits for a line on stdin (so
that all processes start their turns together), then sends ``--turns`` chat turns of user
``worker-N`` to ONE session through the handler, one after the other, exactly as Lambda invokes it
(an API Gateway payload-2.0 event with verified claims). Each outcome is one line
``RESULT {json}``: ``worker``, ``turn``, ``content``, ``status``, ``error``, ``retry_after``,
``user_message_id``, ``message_id``; an exception escaping the handler is reported as status 500
(what API Gateway would answer). Other stdout lines (Powertools' metrics) are not results.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def _load_chat_handler() -> Any:
    spec = importlib.util.spec_from_file_location("chat_function_app", REPO_ROOT / "functions" / "chat" / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.lambda_handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.chat_process")
    parser.add_argument("--project", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--worker", type=int, required=True)
    parser.add_argument("--turns", type=int, default=2)
    args = parser.parse_args(argv)

    from infra.local.events import LocalLambdaContext, build_http_api_event
    from infra.local.token import mint_token, verify_token

    handler = _load_chat_handler()
    user = f"worker-{args.worker}"
    claims = verify_token(mint_token(user))  # identity only: the test made worker-N a member
    path = f"/v1/projects/{args.project}/sessions/{args.session}/messages"
    print("READY", flush=True)
    sys.stdin.readline()
    for turn in range(args.turns):
        content = f"worker {args.worker} turn {turn}: P00{args.worker % 10} 入组了吗？"
        event = build_http_api_event(
            "POST", path, {"content-type": "application/json"}, "", json.dumps({"content": content}).encode("utf-8"),
            "POST /v1/projects/{project_id}/sessions/{session_id}/messages",
            {"project_id": args.project, "session_id": args.session}, claims,
        )
        outcome: dict[str, Any] = {"worker": args.worker, "turn": turn, "content": content}
        try:
            result = handler(event, LocalLambdaContext("ChatFunction", 30, 1024))
            body = json.loads(result.get("body") or "{}")
            headers = {str(k).lower(): v for k, v in (result.get("headers") or {}).items()}
            outcome.update(
                status=int(result["statusCode"]), error=body.get("error"), retry_after=headers.get("retry-after"),
                user_message_id=body.get("user_message_id"), message_id=body.get("message_id"),
            )
        except Exception as exc:  # noqa: BLE001 - an unhandled function error is API Gateway's 500
            outcome.update(status=500, error=type(exc).__name__, retry_after=None)
        print("RESULT " + json.dumps(outcome, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
