"""Say something to the assistant as a WeCom member would: a signed, encrypted text message POSTed to
a project's WeCom callback as WeCom sends it, then the answer the WeCom API emulator received for
that member, printed.

    python -m infra.wecom_say --api-url http://127.0.0.1:3000 --project demo-iit \\
        --emulator-url http://127.0.0.1:8090 --user crc.li --text "P001 入组了吗？" \\
        --corp-id ww... --agent-id 1000002 --token ... --aes-key ...

The channel's values may also come from ``WECOM_CORP_ID``, ``WECOM_AGENT_ID``, ``WECOM_TOKEN`` and
``WECOM_AES_KEY``; left out, they (and the API, emulator and project) are read from the running
``make run`` stack's ``.local/stack.json`` (``LOCAL_STACK_FILE``), whose demo-iit channel is drawn
anew at every start: ``make wecom-say USER=crc.li TEXT="P001 入组了吗？"``.

The message is ``POST {api}/v1/wecom/{project}/callback?msg_signature=&timestamp=&nonce=`` with
``<xml><ToUserName/><AgentID/><Encrypt/></xml>``; the answer is read from the emulator's
``GET /_emulator/messages?userid=`` until new messages stop arriving (a long answer comes in
numbered parts).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import xmltodict

from agent_memory.adapters.wecom.crypto import WeComCallbackCrypto

#: How long to wait for the first part of the answer (seconds): a turn may take a while.
ANSWER_TIMEOUT_S = 60.0
#: An answer is complete once no new part arrived for this long (seconds).
QUIET_S = 1.5
POLL_S = 0.25


def text_message_xml(*, corp_id: str, agent_id: int, user: str, text: str, msg_id: str, created: int) -> str:
    """The plaintext XML of a member's text message, as WeCom encrypts it (special characters escaped)."""
    return str(xmltodict.unparse({"xml": {
        "ToUserName": corp_id, "FromUserName": user, "CreateTime": str(created), "MsgType": "text",
        "Content": text, "MsgId": msg_id, "AgentID": str(agent_id),
    }}, full_document=False))


def signed_callback(
    crypto: WeComCallbackCrypto, message_xml: str, *, now: int, nonce: str
) -> tuple[dict[str, str], str]:
    """(query parameters, body) of the callback POST WeCom would send for ``message_xml``."""
    signature, body = crypto.seal_callback(message_xml, timestamp=str(now), nonce=nonce)
    return {"msg_signature": signature, "timestamp": str(now), "nonce": nonce}, body


def post_callback(callback_url: str, query: dict[str, str], body: str, *, timeout_s: float = 10.0) -> tuple[int, str]:
    """POST the callback; (HTTP status, answer text)."""
    url = f"{callback_url}?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(url, data=body.encode("utf-8"), method="POST",
                                     headers={"Content-Type": "text/xml; charset=utf-8"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (a local URL)
            return int(response.status), response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode("utf-8", "replace")


def received(emulator_url: str, user: str) -> list[dict[str, Any]]:
    """The messages the emulator holds for ``user``, oldest first."""
    url = f"{emulator_url.rstrip('/')}/_emulator/messages?{urllib.parse.urlencode({'userid': user})}"
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (a local URL)
        messages: list[dict[str, Any]] = json.loads(response.read())["messages"]
        return messages


def wait_for_answer(
    read: Callable[[], list[dict[str, Any]]], *, before: int, timeout_s: float = ANSWER_TIMEOUT_S,
    quiet_s: float = QUIET_S, poll_s: float = POLL_S, clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """The messages after the first ``before`` once none arrived for ``quiet_s`` (``[]`` when none
    came within ``timeout_s``)."""
    deadline = clock() + timeout_s
    seen, changed_at = before, clock()
    while True:
        messages = read()
        if len(messages) != seen:
            seen, changed_at = len(messages), clock()
        if seen > before and clock() - changed_at >= quiet_s:
            return messages[before:]
        if seen == before and clock() >= deadline:
            return []
        sleep(poll_s)


#: Where ``make run`` describes the running stack (``infra.local.server.STACK_FILE``).
STACK_FILE = Path(os.environ.get("LOCAL_STACK_FILE") or Path(__file__).resolve().parents[1] / ".local" / "stack.json")


def stack_defaults(stack_file: Path = STACK_FILE) -> dict[str, Any]:
    """The running local stack's API URL and demo WeCom channel (``{}`` when no stack runs)."""
    try:
        described = json.loads(stack_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    wecom = described.get("wecom") or {}
    return {"api_url": described.get("base_url"), **wecom}


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ.get
    stack = stack_defaults()

    def default(variable: str, key: str, fallback: Any = None) -> Any:
        return env(variable) or stack.get(key) or fallback

    parser = argparse.ArgumentParser(description="Send a WeCom member's message to a project's callback")
    parser.add_argument("--api-url", default=default("API_URL", "api_url", "http://127.0.0.1:3000"))
    parser.add_argument("--project", default=default("PROJECT", "project", "demo-iit"))
    parser.add_argument("--emulator-url", default=default("WECOM_EMULATOR_URL", "emulator_url", "http://127.0.0.1:8090"))
    parser.add_argument("--user", required=True, help="the member's WeCom user id")
    parser.add_argument("--text", required=True)
    parser.add_argument("--corp-id", default=default("WECOM_CORP_ID", "corp_id"))
    parser.add_argument("--agent-id", type=int, default=int(default("WECOM_AGENT_ID", "agent_id", 0)))
    parser.add_argument("--token", default=default("WECOM_TOKEN", "token"))
    parser.add_argument("--aes-key", default=default("WECOM_AES_KEY", "encoding_aes_key"))
    parser.add_argument("--timeout", type=float, default=ANSWER_TIMEOUT_S)
    args = parser.parse_args(argv)
    missing = [n for n in ("corp_id", "agent_id", "token", "aes_key") if not getattr(args, n)]
    if missing:
        parser.error("the channel needs " + ", ".join("--" + n.replace("_", "-") for n in missing))
    return args


def main(argv: list[str] | None = None) -> int:
    """Send, wait, print the answer; exit 0 when an answer came, 1 otherwise."""
    args = _arguments(argv)
    crypto = WeComCallbackCrypto(corp_id=args.corp_id, agent_id=args.agent_id, token=args.token,
                                 encoding_aes_key=args.aes_key)
    now = int(time.time())
    xml = text_message_xml(corp_id=args.corp_id, agent_id=args.agent_id, user=args.user, text=args.text,
                           msg_id=str(secrets.randbits(63)), created=now)
    query, body = signed_callback(crypto, xml, now=now, nonce=str(secrets.randbelow(10**10)))
    before = len(received(args.emulator_url, args.user))
    callback_url = f"{args.api_url.rstrip('/')}/v1/wecom/{args.project}/callback"
    status, answer = post_callback(callback_url, query, body)
    print(f"callback answered HTTP {status}", file=sys.stderr)
    if status != 200:
        print(answer, file=sys.stderr)
        return 1
    replies = wait_for_answer(lambda: received(args.emulator_url, args.user), before=before,
                              timeout_s=args.timeout)
    for reply in replies:
        print(reply["content"])
    if not replies:
        print(f"no answer for {args.user} within {args.timeout:.0f} s", file=sys.stderr)
    return 0 if replies else 1


if __name__ == "__main__":
    sys.exit(main())
