"""API Gateway HTTP API on this machine: routes, the JWT authorizer, payload 2.0 events, quotas.

:class:`LocalGateway` answers as the deployed HTTP API does for the template's routes: no route
404, a method the route does not declare 405 (``HEAD`` only where declared), no usable token 401,
a body over the 10 MB quota 413 before it is read (also when only its ``Content-Length`` claims
it), a malformed or cut-short chunked body 400 (API Gateway's JSON bodies, an ``apigw-requestid``
header); otherwise the function's pool is invoked with the payload-2.0 event and its proxy result
becomes the response. No answer within the integration timeout (30 s) is 503; a container that died
holding the request (:class:`~infra.local.functions.ContainerDied`) 502, as API Gateway answers a
function that failed without a response. An unhandled function error is 500 here (API Gateway: 502):
the test suite's status log flags every 500 as a defect, apart from the functions' own 502s.

:meth:`LocalGateway.stop` refuses new requests with 503 + ``Retry-After`` from the moment the stop
flag is set, waits for the invocations in flight, keeps answering 503 until the listener has been
quiet for a moment, then answers the connections still queued before it closes. Each answer is
logged (method, raw path, status, duration, function; never a query string, header or body) and,
with ``LOCAL_STACK_STATUS_LOG`` set, appended to that file.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import socketserver
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_for_futures
from typing import Any

from werkzeug.exceptions import BadRequest, MethodNotAllowed, NotFound, RequestEntityTooLarge
from werkzeug.routing import Map, RequestRedirect, Rule
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from infra.local.events import build_http_api_event, new_request_id
from infra.local.functions import ContainerDied, LocalFunction

log = logging.getLogger("infra.local")

#: API Gateway HTTP API quotas: the integration timeout (past it: 503) and the payload (10 MB).
GATEWAY_TIMEOUT_S = 30.0
MAX_REQUEST_BODY_BYTES = 10 * 1024 * 1024
#: While stopping, the listener closes once no request has come for STOP_QUIET_S seconds
#: (answering 503 + ``Retry-After`` meanwhile), or after STOP_503_MAX_S seconds of arrivals.
STOP_QUIET_S, STOP_503_MAX_S = 0.25, 3.0
#: A file every gateway appends ``{status} {method} {raw path} [{function}]`` to, per answer.
STATUS_LOG_ENV = "LOCAL_STACK_STATUS_LOG"
_UNAUTHORIZED_HEADERS = {"www-authenticate": 'Bearer error="invalid_token"'}


class Unauthorized(Exception):
    """The request's token is unusable: API Gateway answers 401 without invoking the function."""


class _Answer(Exception):
    """An answer the gateway gives itself (``response``), naming the function it was for."""

    def __init__(self, status: int, message: str, function: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.response = _json_response(status, {"message": message}, headers)
        self.function = function


def claims_for_request(headers: Mapping[str, str]) -> dict[str, Any]:
    """The JWT claims the HTTP API's JWT authorizer would hand the function for this request:
    ``Authorization`` (``Bearer <jwt>`` or the bare JWT) verified by :func:`infra.local.token.verify_token`
    (RS256 by the local key, issuer, audience, ``exp``). Raises Unauthorized: no header, or a refused token.
    """
    from infra.local.token import InvalidToken, verify_token

    lowered = {k.lower(): v for k, v in headers.items()}
    authorization = (lowered.get("authorization") or "").strip()
    if not authorization:
        raise Unauthorized("no Authorization header")
    scheme, _, rest = authorization.partition(" ")
    token = rest.strip() if scheme.lower() == "bearer" and rest.strip() else authorization
    try:
        return verify_token(token)
    except InvalidToken as exc:
        raise Unauthorized(str(exc)) from None


def _json_response(status: int, payload: dict[str, Any], headers: Mapping[str, str] | None = None) -> Response:
    return Response(json.dumps(payload), status=status, headers=dict(headers or {}), mimetype="application/json")


def lambda_result_to_response(result: Any) -> Response:
    """A Lambda proxy result (payload 2.0) as API Gateway answers it: a dict with ``statusCode`` as
    is (``headers``, ``cookies``, ``body``, ``isBase64Encoded``), any other JSON value 200 with it
    as the JSON body, a malformed result 500 ``{"message": "Internal Server Error"}``."""
    if not (isinstance(result, dict) and "statusCode" in result):
        body = result if isinstance(result, str) else json.dumps(result)
        return Response(body, status=200, mimetype="application/json")
    try:
        status = int(result["statusCode"])
        raw_body = result.get("body") or ""
        data = base64.b64decode(raw_body) if result.get("isBase64Encoded") else str(raw_body).encode("utf-8")
        headers = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
        headers += [("Set-Cookie", str(c)) for c in result.get("cookies") or []]
    except (TypeError, ValueError) as exc:
        log.error("malformed Lambda proxy result: %s", type(exc).__name__)
        return _json_response(500, {"message": "Internal Server Error"})
    has_type = any(k.lower() == "content-type" for k, _ in headers)
    return Response(data, status=status, headers=headers, mimetype=None if has_type else "application/json")


def _route_rule_path(path: str) -> str:
    """``/a/{id}/b/{proxy+}`` -> ``/a/<id>/b/<path:proxy>`` (werkzeug rule syntax)."""
    path = re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\+\}", r"<path:\1>", path)
    return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", r"<\1>", path)


class _QuietRequestHandler(WSGIRequestHandler):
    """werkzeug's handler without its access log (it prints query strings); the gateway logs its own."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class LocalGateway:
    """The HTTP API (module docstring): the socket is bound at construction (a port already taken
    fails before anything else starts), :meth:`serve` starts answering, :meth:`stop` drains.

    Args:
        host / port: where to listen (port 0: a free one; ``port`` says which).
        timeout_s: the integration timeout (seconds).
        stop_requested: read on every request; ``True`` answers 503 + ``Retry-After``.
        status_log: a file to append every answer's status to (``None``: none).
    """

    def __init__(self, host: str, port: int, *, timeout_s: float = GATEWAY_TIMEOUT_S,
                 stop_requested: Callable[[], bool] | None = None, status_log: str | None = None) -> None:
        self.stop_requested = stop_requested
        self._timeout_s = timeout_s
        self._status_log = status_log
        self._server: BaseWSGIServer = make_server(host, port, self._wsgi, threaded=True,
                                                   request_handler=_QuietRequestHandler)
        self.port = int(self._server.server_address[1])
        self._url_map = Map([], merge_slashes=False)  # "/v1/health/" is not "/v1/health", as in API Gateway
        self._routes: dict[str, tuple[LocalFunction, Any]] = {}
        self._thread: threading.Thread | None = None
        self._executor: ThreadPoolExecutor | None = None
        #: Guards ``_executor`` and ``_inflight``: a request is handed to a function before :meth:`stop`
        #: drains (and is waited for) or answered 503, never half handled.
        self._submit_lock = threading.Lock()
        self._inflight: set[Future[Any]] = set()
        self._last_arrival = 0.0

    def add_routes(self, functions: Mapping[str, LocalFunction]) -> None:
        """Route the template's HTTP API events of ``functions`` to them."""
        for logical_id, function in functions.items():
            for route in function.spec.routes:
                key = f"{logical_id} {route.method} {route.path}"
                self._routes[key] = (function, route)
                path = "/<path:proxy>" if route.path == "$default" else _route_rule_path(route.path)
                self._url_map.add(Rule(path, methods=None if route.method == "ANY" else [route.method], endpoint=key))

    def serve(self) -> None:
        """Answer from now on (socketserver's loop, not werkzeug's, which closes the socket as it ends)."""
        self._executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="lambda")
        self._thread = threading.Thread(target=socketserver.BaseServer.serve_forever, args=(self._server,),
                                        name="local-http-api", daemon=True)
        self._thread.start()

    # ----------------------------------------------------------------------------- requests
    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        started = self._last_arrival = time.monotonic()
        request = Request(environ)
        raw_path = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or request.path).split("?", 1)[0]
        gateway_headers = {"apigw-requestid": new_request_id()}
        label = "-"
        try:
            response, label = self._handle(request, raw_path, gateway_headers)
        except _Answer as answer:
            response, label = answer.response, answer.function
        except Exception:  # the gateway itself must always answer
            log.exception("local gateway error")
            response = _json_response(500, {"message": "Internal Server Error"})
        for name, value in gateway_headers.items():
            response.headers.setdefault(name, value)
        log.info("%s %s -> %d (%.0f ms) [%s]", request.method, raw_path, response.status_code,
                 (time.monotonic() - started) * 1000, label)
        if self._status_log:  # one write in append mode: lines of several gateways never interleave
            with open(self._status_log, "a", encoding="utf-8") as status_log:
                status_log.write(f"{response.status_code} {request.method} {raw_path} [{label}]\n")
        return response(environ, start_response)

    def _handle(self, request: Request, raw_path: str, gateway_headers: dict[str, str]) -> tuple[Response, str]:
        function, route, params = self._match(request)
        try:
            claims = claims_for_request(dict(request.headers.items())) if route.auth else None
        except Unauthorized:
            raise _Answer(401, "Unauthorized", function.name, _UNAUTHORIZED_HEADERS) from None
        body = self._body(request, function.name)
        event = build_http_api_event(
            method=request.method, path=raw_path, headers=list(request.headers.items()),
            query_string=request.environ.get("QUERY_STRING", ""), body=body,
            route_key="$default" if route.path == "$default" else f"{route.method} {route.path}",
            path_parameters=params or None, claims=claims, request_id=gateway_headers["apigw-requestid"],
            source_ip=request.remote_addr or "127.0.0.1",
        )
        return lambda_result_to_response(self._invoke(function, event)), function.name

    def _match(self, request: Request) -> tuple[LocalFunction, Any, dict[str, str]]:
        """The function and route a request is for, and its path parameters (raises :class:`_Answer`)."""
        adapter = self._url_map.bind_to_environ(request.environ)
        try:
            key, params = adapter.match()
        except MethodNotAllowed as exc:
            allow = ", ".join(sorted(exc.valid_methods or []))
            raise _Answer(405, "Method Not Allowed", "-", {"Allow": allow}) from None
        except (NotFound, RequestRedirect):
            raise _Answer(404, "Not Found", "-") from None
        function, route = self._routes[str(key)]
        if request.method == "HEAD" and route.method not in ("HEAD", "ANY"):
            # werkzeug lets HEAD match a GET rule; API Gateway serves HEAD only where a route declares it
            head = next((r for k, r in self._routes.items() if k.endswith(f" HEAD {route.path}")), None)
            if head is None:
                raise _Answer(404, "Not Found", function.name)
            function, route = head
        return function, route, {str(k): str(v) for k, v in params.items()}

    @staticmethod
    def _body(request: Request, function: str) -> bytes:
        """The request body within the payload quota (raises :class:`_Answer` 413 / 400)."""
        if (request.content_length or 0) > MAX_REQUEST_BODY_BYTES:
            raise _Answer(413, "Request Entity Too Large", function)
        # A chunked body has no Content-Length: it is read up to one byte past the quota (werkzeug
        # stops a stream at max_content_length without saying whether more was sent).
        request.max_content_length = MAX_REQUEST_BODY_BYTES + 1
        try:
            body = request.get_data(cache=False)
        except RequestEntityTooLarge:
            raise _Answer(413, "Request Entity Too Large", function) from None
        except (BadRequest, OSError, ValueError):  # a malformed chunk, a client gone before its body ended
            raise _Answer(400, "Bad Request", function) from None
        if len(body) > MAX_REQUEST_BODY_BYTES:
            raise _Answer(413, "Request Entity Too Large", function)
        return body

    def _invoke(self, function: LocalFunction, event: dict[str, Any]) -> Any:
        """The function's result; API Gateway's answers when there is none (raises :class:`_Answer`)."""
        with self._submit_lock:
            if self._executor is None or (self.stop_requested is not None and self.stop_requested()):
                raise _Answer(503, "Service Unavailable", function.name, {"Retry-After": "5"})  # nothing ran
            future = self._executor.submit(function.invoke, event, str(uuid.uuid4()))
            self._inflight.add(future)
        future.add_done_callback(self._request_done)
        try:
            return future.result(timeout=self._timeout_s)
        except FutureTimeout:
            log.warning("%s did not answer within %.0f s (gateway timeout)", function.name, self._timeout_s)
            raise _Answer(503, "Service Unavailable", function.name) from None
        except ContainerDied as exc:
            log.error("%s: %s", function.name, exc)
            raise _Answer(502, "Internal Server Error", function.name) from None
        except Exception as exc:  # an unhandled function error (module docstring)
            log.error("%s raised %s (unhandled function error)", function.name, exc)
            raise _Answer(500, "Internal Server Error", function.name) from None

    def _request_done(self, future: Future[Any]) -> None:
        with self._submit_lock:
            self._inflight.discard(future)

    # ------------------------------------------------------------------------------ stopping
    def stop(self) -> None:
        """Drain and close (module docstring). Invocations in flight get up to the integration
        timeout plus 5 s; one still running after that is abandoned (its client gets no answer)."""
        with self._submit_lock:
            executor, self._executor = self._executor, None
            inflight = set(self._inflight)
        if inflight:
            _, pending = wait_for_futures(inflight, timeout=self._timeout_s + 5)
            if pending:
                log.warning("stopping with %d request(s) still running", len(pending))
        quiet_from = time.monotonic()
        while time.monotonic() - self._last_arrival < STOP_QUIET_S and time.monotonic() - quiet_from < STOP_503_MAX_S:
            time.sleep(0.02)
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if self._thread is not None:
            self._server.shutdown()  # serve_forever returns; handler threads of accepted ones go on
            self._answer_listen_backlog()
            self._thread.join(timeout=10)
            self._thread = None
        self._server.server_close()

    def _answer_listen_backlog(self, timeout_s: float = 5.0) -> None:
        """Accept the connections still queued on the listening socket and answer each (503 with
        ``Retry-After``) before the socket closes; ``timeout_s`` seconds in all for those answers."""
        server = self._server
        assert isinstance(server, socketserver.ThreadingMixIn)  # make_server(threaded=True)
        server.socket.setblocking(False)
        answering: list[threading.Thread] = []
        while True:
            try:
                connection, address = server.socket.accept()
            except OSError:  # BlockingIOError: the backlog is empty
                break
            connection.setblocking(True)
            thread = threading.Thread(target=server.process_request_thread, args=(connection, address),
                                      name="local-http-api-stopping", daemon=True)
            thread.start()
            answering.append(thread)
        deadline = time.monotonic() + timeout_s
        for thread in answering:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
