"""A local HTTP server that speaks the Anthropic Messages API, for the real SDK in tests.

It listens on ``127.0.0.1`` (a free port), records every request (headers, JSON body,
arrival time on ``time.monotonic()``) and answers ``POST /v1/messages`` from a script: a
queue of steps ``{"status": int, "json": dict, "headers": dict, "delay_s": float}``. Each
request takes the next step; once the queue is empty the last step is repeated (so
``script(overloaded())`` means "always 529"). With no script at all it answers a text
reply ``"ok"``.

A step's delay is slept in small slices and ends early when the server stops, so a test of
a 35 s LLM can stop the server without waiting 35 s.

Usage::

    server = MessagesAPIServer().start()
    server.script(overloaded(), text_reply("hi"))
    client = anthropic.Anthropic(api_key="k", base_url=server.base_url)
    ...
    assert len(server.requests) == 2
    server.stop()
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MODEL = "claude-test-model"
_DELAY_SLICE_S = 0.02
_ids = itertools.count(1)

Step = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. Header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    arrived: float  # time.monotonic()


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    steps: deque[Step] = field(default_factory=deque)
    last: Step | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)


# --- step builders -------------------------------------------------------------------------


def _usage(input_tokens: int, output_tokens: int, **extra: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, **extra}


def message_body(
    content: list[dict[str, Any]],
    *,
    stop_reason: str,
    model: str = DEFAULT_MODEL,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A Messages-API ``message`` object."""
    return {
        "id": f"msg_test_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or _usage(10, 5),
    }


def step(
    status: int = 200,
    json_body: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
    delay_s: float = 0.0,
) -> Step:
    """A raw script step."""
    return {"status": status, "json": json_body or {}, "headers": dict(headers or {}), "delay_s": delay_s}


def text_reply(
    text: str = "ok",
    *,
    model: str = DEFAULT_MODEL,
    stop_reason: str = "end_turn",
    usage: dict[str, int] | None = None,
    delay_s: float = 0.0,
) -> Step:
    """200 with one text block (``stop_reason="max_tokens"`` for a cut text reply)."""
    body = message_body([{"type": "text", "text": text}], stop_reason=stop_reason, model=model, usage=usage)
    return step(200, body, delay_s=delay_s)


def tool_use_reply(
    name: str,
    tool_input: dict[str, Any],
    *,
    model: str = DEFAULT_MODEL,
    text: str | None = None,
    usage: dict[str, int] | None = None,
) -> Step:
    """200 with a ``tool_use`` block (optionally after a text block), ``stop_reason=tool_use``."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append(
        {"type": "tool_use", "id": f"toolu_test_{next(_ids):04d}", "name": name, "input": tool_input}
    )
    return step(200, message_body(content, stop_reason="tool_use", model=model, usage=usage))


def truncated_tool_use_reply(name: str, *, model: str = DEFAULT_MODEL) -> Step:
    """200 with ``stop_reason="max_tokens"`` and a tool_use cut mid-JSON: the API
    hands back ``input: {}`` when the partial JSON could not be parsed."""
    content = [{"type": "tool_use", "id": f"toolu_test_{next(_ids):04d}", "name": name, "input": {}}]
    return step(200, message_body(content, stop_reason="max_tokens", model=model, usage=_usage(10, 64)))


def error_body(error_type: str, message: str) -> dict[str, Any]:
    """An error in Anthropic's format."""
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": f"req_test_{next(_ids):04d}",
    }


def overloaded(*, retry_after: float | None = None, delay_s: float = 0.0) -> Step:
    """529 ``overloaded_error`` (optionally with ``retry-after``)."""
    headers = {"retry-after": _fmt(retry_after)} if retry_after is not None else {}
    return step(529, error_body("overloaded_error", "Overloaded"), headers=headers, delay_s=delay_s)


def rate_limited(retry_after: float = 2, *, retry_after_ms: float | None = None) -> Step:
    """429 ``rate_limit_error`` with ``retry-after`` (seconds; optionally ``retry-after-ms``)."""
    headers = {"retry-after": _fmt(retry_after)}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = _fmt(retry_after_ms)
    return step(429, error_body("rate_limit_error", "Rate limited"), headers=headers)


def invalid_request(message: str = "messages: field required") -> Step:
    """400 ``invalid_request_error``."""
    return step(400, error_body("invalid_request_error", message))


def api_error(status: int = 500) -> Step:
    """A 5xx ``api_error``."""
    return step(status, error_body("api_error", "Internal server error"))


def slow(base: Step, delay_s: float) -> Step:
    """``base`` answered after ``delay_s`` seconds."""
    return {**copy.deepcopy(base), "delay_s": delay_s}


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# --- the server ----------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive state to leak

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        state = self.server.state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        record = RecordedRequest(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            arrived=time.monotonic(),
        )
        with state.lock:
            state.requests.append(record)
            if self.path.split("?")[0] != "/v1/messages":
                current: Step = step(404, error_body("not_found_error", f"no route {self.path}"))
            elif state.steps:
                current = state.steps.popleft()
                state.last = current
            elif state.last is not None:
                current = state.last
            else:
                current = text_reply("ok")
        if not self._sleep(float(current.get("delay_s") or 0.0)):
            return  # server stopping: drop the connection without answering
        self._send(current)

    def _sleep(self, delay_s: float) -> bool:
        end = time.monotonic() + delay_s
        stopping = self.server.state.stopping
        while (left := end - time.monotonic()) > 0:
            if stopping.wait(min(_DELAY_SLICE_S, left)):
                return False
        return True

    def _send(self, current: Step) -> None:
        payload = json.dumps(current.get("json") or {}, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(int(current.get("status", 200)))
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", f"req_stub_{next(_ids):04d}")
            for name, value in (current.get("headers") or {}).items():
                self.send_header(name, str(value))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): fine


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class MessagesAPIServer:
    """A scripted Messages-API server on ``127.0.0.1`` in a background thread."""

    def __init__(self) -> None:
        self._state = _State()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> MessagesAPIServer:
        self._server = _Server(self._state)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; handlers still sleeping in a delay return within a slice."""
        self._state.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._server = None
        self._thread = None

    def __enter__(self) -> MessagesAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``, to pass as the SDK's ``base_url``."""
        if self._server is None:
            raise RuntimeError("server not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # script
    def script(self, *steps: Step) -> None:
        """Replace the queue of steps (the last one repeats once the queue is empty)."""
        with self._state.lock:
            self._state.steps = deque(copy.deepcopy(list(steps)))
            self._state.last = None

    def enqueue(self, *steps: Step) -> None:
        """Append steps to the queue."""
        with self._state.lock:
            self._state.steps.extend(copy.deepcopy(list(steps)))

    # recordings
    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the requests received so far, in arrival order."""
        with self._state.lock:
            return list(self._state.requests)

    def clear(self) -> None:
        """Forget the recorded requests."""
        with self._state.lock:
            self._state.requests.clear()
