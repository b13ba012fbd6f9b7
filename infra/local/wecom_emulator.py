"""A local WeCom (企业微信) API emulator (stdlib ``http.server``): the calls the service makes, with
WeCom's JSON answers ``{"errcode", "errmsg", ...}``.

- ``GET /cgi-bin/gettoken?corpid=&corpsecret=``: 40013 ``invalid corpid``, 40001 ``invalid
  credential`` (secret), else a new ``access_token`` with ``expires_in`` (7,200 s unless set);
- ``POST /cgi-bin/message/send?access_token=``: 41001 no token, 40014 unknown token, 42001 expired,
  40056 an ``agentid`` that is not the token's application, 81013 a user outside the application's
  visible range (when the app lists its users), 40008 a ``msgtype`` other than text / markdown,
  44004 empty content, 40058 content over 2,048 bytes (WeCom cuts such a text; the emulator refuses
  it, so a sender that does not split is caught); else the message is recorded for its user;
- ``POST /cgi-bin/webhook/send?key=``: 93000 an unknown key, 40058 over 2,048 bytes (text) or
  4,096 bytes (markdown); else recorded for the key;
- ``GET /_emulator/messages?userid=`` and ``GET /_emulator/robot?key=``: what was recorded, oldest
  first (``{"messages": [{"msgtype", "content", "agentid", "received_at"}]}``), for tests and
  ``infra/wecom_say.py``.

User ids are compared ignoring case, as WeCom does. Tests can make it fail (``fail_next``: an
errcode such as -1 or 45009, or an HTTP status) and expire every token (``expire_tokens``). Local
only; it never runs in AWS.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from infra.local.background_server import BackgroundServer

#: WeCom's token lifetime (seconds).
TOKEN_TTL_S = 7200
#: Content limits WeCom documents (UTF-8 bytes): application text and markdown, robot text, robot markdown.
APP_LIMIT_BYTES = 2048
ROBOT_LIMITS_BYTES = {"text": 2048, "markdown": 4096}

_ERRMSG = {
    -1: "system busy", 40001: "invalid credential", 40008: "invalid message type", 40013: "invalid corpid",
    40014: "invalid access_token", 40056: "invalid agentid", 40058: "content exceed max length",
    41001: "access_token missing", 42001: "access_token expired", 44004: "empty content",
    45009: "api freq out of limit", 47001: "data format error", 81013: "user & party & tag all invalid",
    93000: "invalid webhook url",
}


class WeComRefusal(Exception):
    """An API error answered as ``{"errcode", "errmsg"}`` (HTTP 200, as WeCom answers them)."""

    def __init__(self, errcode: int) -> None:
        super().__init__(errcode)
        self.errcode = errcode


@dataclass(frozen=True)
class EmulatedApp:
    """A self-built application: its corp, agent id and secret; ``users`` its visible range (None: anyone)."""

    corp_id: str
    agent_id: int
    secret: str
    users: frozenset[str] | None = None


@dataclass
class _Token:
    app: EmulatedApp
    expires_at: float


@dataclass
class _Failure:
    errcode: int | None = None
    http_status: int | None = None
    path: str | None = None  # None: the next call of any path


@dataclass
class _State:
    tokens: dict[str, _Token] = field(default_factory=dict)
    to_users: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    to_robots: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    calls: list[str] = field(default_factory=list)
    failures: list[_Failure] = field(default_factory=list)


class WeComEmulator(BackgroundServer):
    """The emulator on ``http://127.0.0.1:<port>`` (see module docstring).

    Usage::

        with WeComEmulator([EmulatedApp("ww1", 1000002, "s3cret")], robot_keys=["k-1"]) as wecom:
            WeComApi(base_url=wecom.base_url).send_to_member(settings, "crc.li", "P001 已入组")
            wecom.messages_to("crc.li")
    """

    def __init__(
        self,
        apps: Iterable[EmulatedApp],
        *,
        robot_keys: Iterable[str] = (),
        token_ttl_s: int = TOKEN_TTL_S,
        clock: Callable[[], float] = time.monotonic,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.apps = list(apps)
        self.robot_keys = set(robot_keys)
        self.token_ttl_s = token_ttl_s
        self._clock = clock
        self._state = _State()
        self._lock = threading.Lock()
        super().__init__(_handler(self), name="wecom-emulator", host=host, port=port)

    @property
    def base_url(self) -> str:
        """Where the API is (what ``WeComApi(base_url=...)`` takes)."""
        return self.origin

    # ------------------------------------------------------------- test controls
    def fail_next(
        self, *, errcode: int | None = None, http_status: int | None = None, times: int = 1, path: str | None = None
    ) -> None:
        """Answer the next ``times`` API calls (of ``path`` only, when given) with ``errcode`` (e.g.
        -1, 45009) or an HTTP status."""
        with self._lock:
            self._state.failures.extend(_Failure(errcode, http_status, path) for _ in range(times))

    def expire_tokens(self) -> None:
        """Every token issued so far is expired from now on (the next use answers 42001)."""
        with self._lock:
            for token in self._state.tokens.values():
                token.expires_at = self._clock() - 1

    def messages_to(self, userid: str) -> list[dict[str, Any]]:
        """The application messages ``userid`` received, oldest first."""
        with self._lock:
            return list(self._state.to_users.get(userid.lower(), []))

    def robot_messages(self, key: str) -> list[dict[str, Any]]:
        """The messages posted through robot ``key``, oldest first."""
        with self._lock:
            return list(self._state.to_robots.get(key, []))

    @property
    def calls(self) -> list[str]:
        """The API paths called, in order (no query strings: they hold secrets)."""
        with self._lock:
            return list(self._state.calls)

    # ------------------------------------------------------------------ the API
    def answer(self, method: str, path: str, query: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body) of one request."""
        if path.startswith("/_emulator/"):
            return self._inspect(path, query)
        with self._lock:
            self._state.calls.append(path)
            failure = next((f for f in self._state.failures if f.path in (None, path)), None)
            if failure is not None:
                self._state.failures.remove(failure)
        if failure is not None and failure.http_status is not None:
            return failure.http_status, {"error": "emulated failure"}
        try:
            if failure is not None and failure.errcode is not None:
                raise WeComRefusal(failure.errcode)
            result = self._route(method, path, query, body)
        except WeComRefusal as refusal:
            return 200, {"errcode": refusal.errcode, "errmsg": _ERRMSG.get(refusal.errcode, "error")}
        return 200, {"errcode": 0, "errmsg": "ok", **result}

    def _route(self, method: str, path: str, query: dict[str, str], body: bytes) -> dict[str, Any]:
        if (method, path) == ("GET", "/cgi-bin/gettoken"):
            return self._gettoken(query)
        if (method, path) == ("POST", "/cgi-bin/message/send"):
            return self._message_send(query.get("access_token", ""), _json(body))
        if (method, path) == ("POST", "/cgi-bin/webhook/send"):
            return self._webhook_send(query.get("key", ""), _json(body))
        raise WeComRefusal(47001)

    def _gettoken(self, query: dict[str, str]) -> dict[str, Any]:
        in_corp = [a for a in self.apps if a.corp_id == query.get("corpid")]
        if not in_corp:
            raise WeComRefusal(40013)
        app = next((a for a in in_corp if secrets.compare_digest(a.secret, query.get("corpsecret", ""))), None)
        if app is None:
            raise WeComRefusal(40001)
        token = secrets.token_urlsafe(48)
        with self._lock:
            self._state.tokens[token] = _Token(app, self._clock() + self.token_ttl_s)
        return {"access_token": token, "expires_in": self.token_ttl_s}

    def _message_send(self, access_token: str, body: dict[str, Any]) -> dict[str, Any]:
        if not access_token:
            raise WeComRefusal(41001)
        with self._lock:
            token = self._state.tokens.get(access_token)
        if token is None:
            raise WeComRefusal(40014)
        if token.expires_at <= self._clock():
            raise WeComRefusal(42001)
        if body.get("agentid") != token.app.agent_id:
            raise WeComRefusal(40056)
        userid = str(body.get("touser", "")).lower()
        if not userid or (token.app.users is not None and userid not in {u.lower() for u in token.app.users}):
            raise WeComRefusal(81013)
        content = _content(body, {"text": APP_LIMIT_BYTES, "markdown": APP_LIMIT_BYTES})
        with self._lock:
            self._state.to_users[userid].append(
                {"msgtype": body["msgtype"], "content": content, "agentid": token.app.agent_id,
                 "received_at": time.time()})
        return {"invaliduser": "", "msgid": secrets.token_hex(16)}

    def _webhook_send(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        if key not in self.robot_keys:
            raise WeComRefusal(93000)
        content = _content(body, ROBOT_LIMITS_BYTES)
        with self._lock:
            self._state.to_robots[key].append(
                {"msgtype": body["msgtype"], "content": content, "received_at": time.time()})
        return {}

    def _inspect(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if path == "/_emulator/messages" and query.get("userid"):
            return 200, {"messages": self.messages_to(query["userid"])}
        if path == "/_emulator/robot" and query.get("key"):
            return 200, {"messages": self.robot_messages(query["key"])}
        return 404, {"error": "GET /_emulator/messages?userid= or /_emulator/robot?key="}


def _json(body: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WeComRefusal(47001) from None
    if not isinstance(parsed, dict):
        raise WeComRefusal(47001)
    return parsed


def _content(body: dict[str, Any], limits: dict[str, int]) -> str:
    """The ``content`` of a text or markdown message within its limit, else WeCom's refusal."""
    msgtype = body.get("msgtype")
    if msgtype not in limits:
        raise WeComRefusal(40008)
    content = (body.get(msgtype) or {}).get("content")
    if not isinstance(content, str) or not content.strip():
        raise WeComRefusal(44004)
    if len(content.encode("utf-8")) > limits[msgtype]:
        raise WeComRefusal(40058)
    return content


def _handler(emulator: WeComEmulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._serve("GET", b"")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            self._serve("POST", self.rfile.read(length))

        def _serve(self, method: str, body: bytes) -> None:
            parts = urlsplit(self.path)
            status, answer = emulator.answer(method, parts.path, dict(parse_qsl(parts.query)), body)
            data = json.dumps(answer, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
            """Silent: request lines carry access tokens and robot keys."""

    return Handler


def main(argv: list[str] | None = None) -> None:
    """``python -m infra.local.wecom_emulator --app CORP:AGENT:SECRET [--robot KEY] [--port N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", action="append", default=[], help="CORP_ID:AGENT_ID:SECRET (repeatable)")
    parser.add_argument("--robot", action="append", default=[], help="a robot webhook key (repeatable)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    apps = [EmulatedApp(corp, int(agent), secret) for corp, agent, secret in (a.split(":", 2) for a in args.app)]
    with WeComEmulator(apps, robot_keys=args.robot, port=args.port) as emulator:
        print(f"WeCom emulator on {emulator.base_url} (Ctrl-C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
