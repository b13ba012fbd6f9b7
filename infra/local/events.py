"""API Gateway HTTP API events (payload format 2.0) and a Lambda context, as AWS builds them.

Reference: "Working with AWS Lambda proxy integrations for HTTP APIs" (API Gateway developer
guide), payload format 2.0. Reproduced because handlers depend on it: header names lower-cased,
repeated headers and query parameters joined with ``,``; ``Cookie`` moved into ``cookies``;
``cookies``, ``queryStringParameters``, ``pathParameters``, ``body`` and
``requestContext.authorizer`` absent (not empty) when there is nothing to put there; JWT claims all
strings (an array claim such as ``cognito:groups`` as ``"[admin demo-iit]"``, as the authorizer
flattens it); a body that is not UTF-8 base64-encoded with ``isBase64Encoded: true``.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

LOCAL_ACCOUNT_ID = "123456789012"
LOCAL_API_ID = "local"
LOCAL_REGION = "eu-west-1"

HeaderInput = Mapping[str, str] | Iterable[tuple[str, str]]


def new_request_id() -> str:
    """An API Gateway style request id (base64-ish, like ``JKJaXmPLvHcESHA=``)."""
    return base64.b64encode(uuid.uuid4().bytes[:10]).decode("ascii")


def stringify_claim(value: Any) -> str:
    """A claim value as the HTTP API JWT authorizer passes it to Lambda (always a string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + " ".join(stringify_claim(v) for v in value) + "]"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _headers_and_cookies(headers: HeaderInput, source_ip: str,
                         domain_name: str | None) -> tuple[dict[str, str], list[str]]:
    """Lower-cased headers (repeats joined with ``,``, the forwarding headers API Gateway adds) and
    the cookies taken out of them."""
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers.items() if isinstance(headers, Mapping) else headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        merged[key] = f"{merged[key]},{value}" if key in merged else value
    domain = domain_name or merged.get("host") or "localhost"
    merged.setdefault("host", domain)
    merged.setdefault("x-forwarded-for", source_ip)
    merged.setdefault("x-forwarded-proto", "http")
    if ":" in domain:
        merged.setdefault("x-forwarded-port", domain.rsplit(":", 1)[1])
    return merged, cookies


def _request_context(method: str, path: str, headers: Mapping[str, str], route_key: str, request_id: str,
                     source_ip: str, claims: Mapping[str, Any] | None, now: datetime) -> dict[str, Any]:
    domain = headers["host"]
    context: dict[str, Any] = {
        "accountId": LOCAL_ACCOUNT_ID, "apiId": LOCAL_API_ID, "domainName": domain,
        "domainPrefix": domain.split(".", 1)[0].split(":", 1)[0],
        "http": {"method": method.upper(), "path": path, "protocol": "HTTP/1.1", "sourceIp": source_ip,
                 "userAgent": headers.get("user-agent", "")},
        "requestId": request_id, "routeKey": route_key, "stage": "$default",
        "time": now.astimezone(UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"), "timeEpoch": int(now.timestamp() * 1000),
    }
    if claims is not None:
        scope = claims.get("scope")
        context["authorizer"] = {"jwt": {"claims": {str(k): stringify_claim(v) for k, v in claims.items()},
                                         "scopes": str(scope).split() if scope else None}}
    return context


def build_http_api_event(
    method: str, path: str, headers: HeaderInput, query_string: str, body: bytes, route_key: str,
    path_parameters: Mapping[str, str] | None, claims: Mapping[str, Any] | None, request_id: str | None = None,
    *, source_ip: str = "127.0.0.1", domain_name: str | None = None, now: datetime | None = None,
) -> dict[str, Any]:
    """Build the event API Gateway (HTTP API, payload format 2.0) sends to a Lambda integration.

    Args:
        method: HTTP method (any case). path: the raw (still percent-encoded) request path.
        headers: request headers, a mapping or ``(name, value)`` pairs (repeats allowed).
        query_string: the raw query string without ``?`` (``""`` when none).
        body: the raw request body (``b""`` when none).
        route_key: the matched route, e.g. ``POST /v1/projects/{project_id}/sessions``.
        path_parameters: values of the route's ``{name}`` parts (None or empty: none).
        claims: verified JWT claims (None: the route has no authorizer).
        request_id: API Gateway request id (a new one when None).
        source_ip: the client address. domain_name: the ``Host`` used (default: the ``host`` header).
        now: request time (default: the current time).
    """
    merged, cookies = _headers_and_cookies(headers, source_ip, domain_name)
    event: dict[str, Any] = {"version": "2.0", "routeKey": route_key, "rawPath": path, "rawQueryString": query_string}
    if cookies:
        event["cookies"] = cookies
    event["headers"] = merged
    query: dict[str, str] = {}
    for key, value in parse_qsl(query_string, keep_blank_values=True):
        query[key] = f"{query[key]},{value}" if key in query else value
    if query:
        event["queryStringParameters"] = query
    event["requestContext"] = _request_context(method, path, merged, route_key, request_id or new_request_id(),
                                               source_ip, claims, now or datetime.now(UTC))
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    event["isBase64Encoded"] = False
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode("ascii"), True
    return event


class LocalLambdaContext:
    """The Lambda context object: same attributes and the remaining-time countdown.

    ``get_remaining_time_in_millis()`` counts down to ``deadline_ms`` (epoch milliseconds, as
    Lambda's runtime API hands it over in ``Lambda-Runtime-Deadline-Ms``) or, without it, from
    ``timeout_s`` starting at creation (an invocation creates its own context); never below 0.
    """

    def __init__(self, function_name: str, timeout_s: float, memory_mb: int, request_id: str | None = None, *,
                 region: str = LOCAL_REGION, account_id: str = LOCAL_ACCOUNT_ID,
                 deadline_ms: int | None = None) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = request_id or str(uuid.uuid4())
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{account_id}:function:{function_name}"
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"{datetime.now(UTC):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"
        self.identity = self.client_context = self.tenant_id = None
        left_s = float(timeout_s) if deadline_ms is None else deadline_ms / 1000 - time.time()
        self._deadline = time.monotonic() + left_s

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function would time out (>= 0)."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))
