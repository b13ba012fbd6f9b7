"""A local HTTP server that speaks the Anthropic Messages API, for the real SDK in tests.

It listens on ``127.0.0.1`` (a free port), records every request (headers, JSON body, arrival
time on ``time.monotonic()``, the model) and answers ``POST /v1/messages`` and Amazon Bedrock's
``POST /model/{model id}/invoke`` (what ``anthropic.AnthropicBedrock`` calls) from a script: a
queue of steps ``{"status": int, "json": dict, "headers": dict, "delay_s": float}`` (or ``"raw"``:
a body sent as it is). Each accepted request takes the next step; once the queue is empty the
last step is repeated (so ``script(overloaded())`` means "always 529"). With no script at all it
answers a text reply ``"ok"`` (``"{}"`` to a structured-output request).

**Strict mode** (on by default; ``MessagesAPIServer(strict=False)`` or ``server.strict = False``
turns it off) behaves like the current API, before any step is taken:

* a model id in the installed SDK's ``DEPRECATED_MODELS`` -> 404 ``not_found_error``;
* for a current model (generation 5 or later, e.g. ``claude-sonnet-5-5``, ``claude-haiku-5-5``,
  their Bedrock ids): a forced ``tool_choice`` (``tool`` / ``any``), sampling parameters
  (``temperature``, ``top_p``, ``top_k``), ``thinking`` ``disabled`` or with a budget, an assistant
  prefill (the last message is the assistant's), a malformed ``output_config``, and thinking
  blocks sent back altered, from another model, or missing from a tool-using assistant turn of
  the current tool loop -> 400 ``invalid_request_error`` shaped like the real API;
* a current model's tool-using reply starts with a ``thinking`` block carrying a signature (added
  when the scripted step has none), which the next request must send back unchanged.

Usage: a step without explicit ``usage`` reports figures computed from the request (token
estimates of ``agent_memory.domain.text``): input tokens, output tokens, and the cache fields from
the ``cache_control`` breakpoints (blocks and top-level automatic caching): a breakpoint whose
prefix (tools, system, messages up to it) is new and at least the model's minimum cacheable
length (``agent_memory.config.min_cacheable_tokens``) is written; a prefix seen before at a
breakpoint up to 20 blocks back is read; nothing below the minimum.

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
import hashlib
import itertools
import json
import re
import threading
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic.resources.messages.messages import DEPRECATED_MODELS

from agent_memory.config import min_cacheable_tokens
from agent_memory.domain.text import estimate_tokens

DEFAULT_MODEL = "claude-test-model"
_DELAY_SLICE_S = 0.02
#: How many blocks before a breakpoint the API looks for an earlier cache entry.
CACHE_LOOKBACK_BLOCKS = 20
_ids = itertools.count(1)
_SAMPLING = ("temperature", "top_p", "top_k")
_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_GENERATION = re.compile(r"^(?:[a-z]{2,6}\.)?(?:anthropic\.)?claude-[a-z]+-(\d)(?:-\d)?(?![0-9])")
_BEDROCK_PATH = re.compile(r"^/model/(?P<model>[^/]+)/invoke$")

Step = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. Header names are lower-case. ``model`` is the body's
    ``model`` or, on the Bedrock path, the URL's model id; ``route`` is ``messages`` or ``bedrock``."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    arrived: float  # time.monotonic()
    model: str = ""
    route: str = "messages"


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    steps: deque[Step] = field(default_factory=deque)
    last: Step | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    strict: bool = True
    #: prompt-cache entries: (model, prefix hash)
    cache: set[tuple[str, str]] = field(default_factory=set)
    #: thinking signature -> (model, block as sent); redacted data -> model
    thinking: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    redacted: dict[str, str] = field(default_factory=dict)
    #: tool_use id -> the thinking blocks sent before it
    tool_thinking: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: content (canonical JSON) of the replies that stopped with ``pause_turn``: sending one back as
    #: the last message continues the turn, which is not a prefill
    paused: set[str] = field(default_factory=set)


# --- step builders -------------------------------------------------------------------------


def _usage(input_tokens: int, output_tokens: int, **extra: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, **extra}


def message_body(
    content: list[dict[str, Any]],
    *,
    stop_reason: str,
    model: str | None = None,
    usage: dict[str, int] | None = None,
    stop_details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Messages-API ``message`` object. ``model`` None = the request's model; ``usage`` None =
    computed by the server from the request (see the module docstring)."""
    body: dict[str, Any] = {
        "id": f"msg_test_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }
    if stop_details is not None:
        body["stop_details"] = stop_details
    return body


def step(
    status: int = 200,
    json_body: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
    delay_s: float = 0.0,
) -> Step:
    """A raw script step."""
    return {"status": status, "json": json_body or {}, "headers": dict(headers or {}), "delay_s": delay_s}


def thinking_block(text: str = "Let me think about which data to read.") -> dict[str, Any]:
    """A ``thinking`` block for a scripted reply (the server signs it when it sends it)."""
    return {"type": "thinking", "thinking": text, "signature": None}


def text_reply(
    text: str = "ok",
    *,
    model: str | None = None,
    stop_reason: str = "end_turn",
    usage: dict[str, int] | None = None,
    delay_s: float = 0.0,
    thinking: str | None = None,
) -> Step:
    """200 with one text block (``stop_reason="max_tokens"`` for a cut text reply), after a
    ``thinking`` block when ``thinking`` is given."""
    content = [thinking_block(thinking)] if thinking is not None else []
    content.append({"type": "text", "text": text})
    body = message_body(content, stop_reason=stop_reason, model=model, usage=usage)
    return step(200, body, delay_s=delay_s)


def json_reply(obj: Any, *, model: str | None = None, usage: dict[str, int] | None = None) -> Step:
    """The answer to a structured-output request (``output_config.format``): the JSON of ``obj``
    as the one text block."""
    return text_reply(json.dumps(obj, ensure_ascii=False), model=model, usage=usage)


def tool_use_reply(
    name: str,
    tool_input: dict[str, Any],
    *,
    model: str | None = None,
    text: str | None = None,
    usage: dict[str, int] | None = None,
    thinking: str | None = None,
) -> Step:
    """200 with a ``tool_use`` block (optionally after a text block), ``stop_reason=tool_use``. A
    current model's reply starts with a signed ``thinking`` block (``thinking`` sets its text)."""
    content: list[dict[str, Any]] = [thinking_block(thinking)] if thinking is not None else []
    if text:
        content.append({"type": "text", "text": text})
    content.append(
        {"type": "tool_use", "id": f"toolu_test_{next(_ids):04d}", "name": name, "input": tool_input}
    )
    return step(200, message_body(content, stop_reason="tool_use", model=model, usage=usage))


def truncated_tool_use_reply(name: str, *, model: str | None = None) -> Step:
    """200 with ``stop_reason="max_tokens"`` and a tool_use cut mid-JSON: the API
    hands back ``input: {}`` when the partial JSON could not be parsed."""
    content = [{"type": "tool_use", "id": f"toolu_test_{next(_ids):04d}", "name": name, "input": {}}]
    return step(200, message_body(content, stop_reason="max_tokens", model=model, usage=_usage(10, 64)))


def refusal_reply(
    *, category: str | None = "general_harms", explanation: str | None = None, model: str | None = None
) -> Step:
    """200 with ``stop_reason="refusal"``, no content and ``stop_details`` (the model declined)."""
    details = {"type": "refusal", "category": category, "explanation": explanation}
    return step(200, message_body([], stop_reason="refusal", model=model, stop_details=details))


def empty_reply(*, model: str | None = None, stop_reason: str = "end_turn", thinking: str | None = None) -> Step:
    """200 whose final answer has no text (no content at all, or only a thinking block)."""
    content = [thinking_block(thinking)] if thinking is not None else []
    return step(200, message_body(content, stop_reason=stop_reason, model=model))


def pause_turn_reply(*, text: str | None = None, model: str | None = None) -> Step:
    """200 with ``stop_reason="pause_turn"``: a long turn paused mid-way (a server tool call in
    flight); sending the content back as the assistant turn lets the model continue."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append({
        "type": "server_tool_use",
        "id": f"srvtoolu_test_{next(_ids):04d}",
        "name": "web_search",
        "input": {"query": "paused"},
    })
    return step(200, message_body(content, stop_reason="pause_turn", model=model))


def raw_reply(body: str, *, status: int = 200, content_type: str = "application/json") -> Step:
    """A body sent exactly as given (for malformed answers)."""
    return {"status": status, "raw": body, "headers": {"content-type": content_type}, "delay_s": 0.0}


def non_json_reply() -> Step:
    """200 with an HTML page (e.g. a proxy's), not JSON."""
    return raw_reply("<html><body>Service temporarily unavailable</body></html>", content_type="text/html")


def truncated_json_reply() -> Step:
    """200 with a Messages response cut in the middle (a complete HTTP body of broken JSON)."""
    full = json.dumps(message_body([{"type": "text", "text": "这是一个被截断的回答"}], stop_reason="end_turn",
                                   model=DEFAULT_MODEL, usage=_usage(10, 5)), ensure_ascii=False)
    return raw_reply(full[: len(full) // 2])


def not_a_message_reply() -> Step:
    """200 with JSON that is not a Messages response."""
    return step(200, {"status": "ok", "items": []})


def bad_block_reply() -> Step:
    """200 with a Messages response whose text block has no ``text``."""
    return step(200, message_body([{"type": "text"}], stop_reason="end_turn", usage=_usage(10, 5)))


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


def authentication_failed() -> Step:
    """401 ``authentication_error`` (a wrong or revoked key)."""
    return step(401, error_body("authentication_error", "invalid x-api-key"))


def permission_denied() -> Step:
    """403 ``permission_error``."""
    message = "Your API key does not have permission to use the specified resource."
    return step(403, error_body("permission_error", message))


def model_not_found(model: str = "claude-sonnet-4-5") -> Step:
    """404 ``not_found_error`` for a model id."""
    return step(404, error_body("not_found_error", f"model: {model}"))


def api_error(status: int = 500) -> Step:
    """A 5xx ``api_error``."""
    return step(status, error_body("api_error", "Internal server error"))


def slow(base: Step, delay_s: float) -> Step:
    """``base`` answered after ``delay_s`` seconds."""
    return {**copy.deepcopy(base), "delay_s": delay_s}


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# --- the current API's rules ---------------------------------------------------------------


def is_current_model(model: str) -> bool:
    """A model of generation 5 or later that is not deprecated: it thinks by default and rejects
    forced tool choice, sampling parameters, thinking budgets, ``disabled`` thinking and prefill."""
    match = _GENERATION.match(model.lower())
    return match is not None and int(match.group(1)) >= 5 and not is_deprecated(model)


def is_deprecated(model: str) -> bool:
    """In the installed SDK's ``DEPRECATED_MODELS`` (a Bedrock id's ``[region.]anthropic.`` prefix and
    ``-v1:0`` suffix are ignored)."""
    bare = re.sub(r"-v\d+(?::\d+)?$", "", re.sub(r"^(?:[a-z]{2,6}\.)?anthropic\.", "", model))
    return model in DEPRECATED_MODELS or bare in DEPRECATED_MODELS


class _Rejected(Exception):
    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.step = step(status, error_body(error_type, message))


def _invalid(message: str) -> _Rejected:
    return _Rejected(400, "invalid_request_error", message)


def _check_parameters(body: dict[str, Any], *, paused: set[str] | frozenset[str] = frozenset()) -> None:
    for name in _SAMPLING:
        if name in body:
            raise _invalid(f"`{name}` is not supported for this model; remove it (sampling is fixed).")
    thinking = body.get("thinking")
    if isinstance(thinking, dict):
        if thinking.get("type") == "disabled":
            raise _invalid("thinking.type: `disabled` is not supported for this model; use `adaptive` or "
                           "`between_tools`.")
        if thinking.get("type") == "enabled" or "budget_tokens" in thinking:
            raise _invalid("thinking.budget_tokens: thinking budgets are not supported for this model; use "
                           "`thinking: {\"type\": \"adaptive\"}` and `output_config.effort`.")
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("tool", "any"):
        raise _invalid(f"tool_choice.type: `{choice['type']}` (forced tool use) is not supported for this model; "
                       "use `auto` or structured outputs (`output_config.format`).")
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict) \
            and messages[-1].get("role") == "assistant" and _canonical(messages[-1].get("content")) not in paused:
        raise _invalid("This model does not support assistant message prefill. The conversation must end with a "
                       "user message.")


def _check_output_config(body: dict[str, Any]) -> None:
    config = body.get("output_config")
    if config is None:
        return
    if not isinstance(config, dict):
        raise _invalid("output_config: Input should be an object")
    effort = config.get("effort")
    if effort is not None and effort not in _EFFORTS:
        raise _invalid(f"output_config.effort: Input should be {', '.join(repr(e) for e in _EFFORTS)}")
    fmt = config.get("format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "json_schema"
                            or not isinstance(fmt.get("schema"), dict)):
        raise _invalid("output_config.format: expected {\"type\": \"json_schema\", \"schema\": {...}}")


def _is_tool_results_only(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _current_loop_start(messages: list[Any]) -> int:
    """Index after the last user message that is not only tool results (the current tool loop)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user" and not _is_tool_results_only(m):
            return i + 1
    return 0


# --- usage and the prompt cache --------------------------------------------------------------


def _canonical(value: Any) -> str:
    """A value as canonical JSON (key order and spacing do not matter)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _block_tokens(block: Any) -> int:
    if isinstance(block, str):
        return estimate_tokens(block)
    if not isinstance(block, dict):
        return estimate_tokens(_canonical(block))
    kind = block.get("type")
    if kind == "text":
        return estimate_tokens(str(block.get("text", "")))
    if kind == "thinking":
        return estimate_tokens(str(block.get("thinking", "")))
    if kind == "tool_result":
        inner = block.get("content")
        if isinstance(inner, list):
            return sum(_block_tokens(b) for b in inner) + 4
        return estimate_tokens(str(inner or "")) + 4
    return estimate_tokens(_canonical({k: v for k, v in block.items() if k != "cache_control"}))


def _segments(body: dict[str, Any]) -> list[tuple[str, int, bool]]:
    """The prompt as ordered blocks: (identity, tokens, carries a breakpoint)."""
    segments: list[tuple[str, int, bool]] = []

    def add(where: str, block: Any) -> None:
        marked = isinstance(block, dict) and "cache_control" in block
        stripped = {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
        segments.append((where + _canonical(stripped), _block_tokens(block), marked))

    for tool in body.get("tools") or []:
        add("tool:", tool)
    system = body.get("system")
    for block in [system] if isinstance(system, str) else (system or []):
        add("system:", block)
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        role = str(message.get("role"))
        for block in [content] if isinstance(content, str) else (content or []):
            add(f"{role}:", block)
    if isinstance(body.get("cache_control"), dict) and segments:  # automatic caching: the last block
        identity, tokens, _ = segments[-1]
        segments[-1] = (identity, tokens, True)
    return segments


def _reply_tokens(content: list[Any]) -> int:
    return max(1, sum(_block_tokens(b) for b in content))


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
        path = self.path.split("?")[0]
        bedrock = _BEDROCK_PATH.match(path)
        if bedrock:
            model, route = urllib.parse.unquote(bedrock["model"]), "bedrock"
        else:
            model, route = str(body.get("model", "")) if isinstance(body, dict) else "", "messages"
        record = RecordedRequest(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            arrived=time.monotonic(),
            model=model,
            route=route,
        )
        with state.lock:
            state.requests.append(record)
            current = self.server.answer(path, route, model, body)
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
        headers = dict(current.get("headers") or {})
        if "raw" in current:
            payload = str(current["raw"]).encode("utf-8")
        else:
            payload = json.dumps(current.get("json") or {}, ensure_ascii=False).encode("utf-8")
        content_type = headers.pop("content-type", "application/json")
        try:
            self.send_response(int(current.get("status", 200)))
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", f"req_stub_{next(_ids):04d}")
            for name, value in headers.items():
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

    # Everything below runs under state.lock.
    def answer(self, path: str, route: str, model: str, body: Any) -> Step:
        if route == "messages" and path != "/v1/messages":
            return step(404, error_body("not_found_error", f"no route {path}"))
        request = body if isinstance(body, dict) else {}
        try:
            self._check(model, request)
        except _Rejected as rejected:
            return rejected.step
        state = self.state
        if state.steps:
            current = state.steps.popleft()
            state.last = current
        elif state.last is not None:
            current = state.last
        else:
            structured = isinstance(request.get("output_config"), dict) and "format" in request["output_config"]
            current = text_reply("{}" if structured else "ok")
        return self._complete(copy.deepcopy(current), model, request)

    def _check(self, model: str, body: dict[str, Any]) -> None:
        if not self.state.strict:
            return
        if is_deprecated(model):
            raise _Rejected(404, "not_found_error", f"model: {model}")
        if not is_current_model(model):
            return
        _check_parameters(body, paused=self.state.paused)
        _check_output_config(body)
        self._check_thinking(model, body.get("messages"))

    def _check_thinking(self, model: str, messages: Any) -> None:
        if not isinstance(messages, list):
            return
        loop_start = _current_loop_start(messages)
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for j, block in enumerate(content):
                self._check_thinking_block(model, i, j, block)
            if i >= loop_start:
                self._check_thinking_present(i, content)

    def _check_thinking_block(self, model: str, i: int, j: int, block: Any) -> None:
        if not isinstance(block, dict):
            return
        if block.get("type") == "thinking":
            issued = self.state.thinking.get(str(block.get("signature")))
            if issued is None or issued[1] != block:
                raise _invalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
            if issued[0] != model:
                raise _invalid(f"messages.{i}.content.{j}: this `thinking` block was produced by another model "
                               "and cannot be sent to this one")
        elif block.get("type") == "redacted_thinking" and self.state.redacted.get(str(block.get("data"))) is None:
            raise _invalid(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block")

    def _check_thinking_present(self, i: int, content: list[Any]) -> None:
        uses = [b.get("id") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        expected = next((self.state.tool_thinking[u] for u in uses if u in self.state.tool_thinking), None)
        if not expected:
            return
        leading: list[Any] = []
        for block in content:
            if not (isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking")):
                break
            leading.append(block)
        if leading != expected:
            found = content[0].get("type") if content and isinstance(content[0], dict) else "nothing"
            raise _invalid(
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
                "When thinking is enabled, a final `assistant` message must start with a thinking block "
                "(preceding the lastmost set of `tool_use` and `tool_result` blocks), exactly as it was "
                "returned. To avoid this requirement, disable thinking."
            )

    def _complete(self, current: Step, model: str, body: dict[str, Any]) -> Step:
        """Fill in a scripted message: its model, signed thinking blocks, computed usage."""
        message = current.get("json")
        if "raw" in current or not isinstance(message, dict) or message.get("type") != "message":
            return current
        if message.get("model") is None:
            message["model"] = model or DEFAULT_MODEL
        content = message.get("content")
        if isinstance(content, list):
            self._sign_thinking(model, content)
        if message.get("usage") is None:
            message["usage"] = self._usage(model, body, content if isinstance(content, list) else [])
        if message.get("stop_reason") == "pause_turn":
            # A continuation of a continuation: the client sends the paused parts back as ONE
            # assistant turn (earlier parts, then this one), which is what may end the next request.
            messages = body.get("messages")
            prior: list[Any] = []
            if isinstance(messages, list) and messages and isinstance(messages[-1], dict) \
                    and messages[-1].get("role") == "assistant" and isinstance(messages[-1].get("content"), list):
                prior = list(messages[-1]["content"])
            self.state.paused.add(_canonical([*prior, *(content if isinstance(content, list) else [])]))
        return current

    def _sign_thinking(self, model: str, content: list[Any]) -> None:
        has_tool_use = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
        has_thinking = any(isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
                           for b in content)
        if self.state.strict and is_current_model(model) and has_tool_use and not has_thinking:
            content.insert(0, thinking_block())
        thinking: list[dict[str, Any]] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "thinking":
                if not block.get("signature"):
                    seed = f"{model}|{block.get('thinking')}|{next(_ids)}".encode()
                    block["signature"] = "sig_" + hashlib.sha256(seed).hexdigest()
                self.state.thinking[str(block["signature"])] = (model, copy.deepcopy(block))
                thinking.append(copy.deepcopy(block))
            elif block.get("type") == "redacted_thinking":
                self.state.redacted[str(block.get("data"))] = model
                thinking.append(copy.deepcopy(block))
            elif block.get("type") == "tool_use" and thinking:
                self.state.tool_thinking[str(block.get("id"))] = list(thinking)

    def _usage(self, model: str, body: dict[str, Any], reply: list[Any]) -> dict[str, int]:
        segments = _segments(body)
        total, cumulative, hashes = 0, [], []
        digest = hashlib.sha256(model.encode())
        for identity, tokens, _ in segments:
            total += tokens
            cumulative.append(total)
            digest.update(identity.encode())
            hashes.append(digest.copy().hexdigest())
        breakpoints = [i for i, (_, _, marked) in enumerate(segments) if marked]
        cache = self.state.cache
        read_at = -1
        for i in breakpoints:
            for j in range(i, max(-1, i - CACHE_LOOKBACK_BLOCKS), -1):
                if (model, hashes[j]) in cache:
                    read_at = max(read_at, j)
                    break
        read = cumulative[read_at] if read_at >= 0 else 0
        minimum = min_cacheable_tokens(model)
        writes = [i for i in breakpoints if i > read_at and cumulative[i] >= minimum]
        creation = cumulative[writes[-1]] - read if writes else 0
        for i in writes:
            cache.add((model, hashes[i]))
        return {
            "input_tokens": max(0, total - read - creation),
            "output_tokens": _reply_tokens(reply),
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
        }


class MessagesAPIServer:
    """A scripted Messages-API server on ``127.0.0.1`` in a background thread (strict by default)."""

    def __init__(self, *, strict: bool = True) -> None:
        self._state = _State(strict=strict)
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

    @property
    def strict(self) -> bool:
        """Whether the current API's rules are enforced (see the module docstring)."""
        return self._state.strict

    @strict.setter
    def strict(self, value: bool) -> None:
        with self._state.lock:
            self._state.strict = value

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

    def reset_cache(self) -> None:
        """Forget every prompt-cache entry (as if the 5-minute TTL had passed)."""
        with self._state.lock:
            self._state.cache.clear()

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
