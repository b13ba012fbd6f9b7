"""API Gateway HTTP API (payload format 2.0) events for handler tests.

A stand-in for ``infra.local.events.build_http_api_event`` until the local runtime provides
one: the same shape API Gateway sends to a Lambda integration behind a JWT authorizer.
"""

from __future__ import annotations

import base64
import itertools
import json
from datetime import UTC, datetime
from typing import Any

_ids = itertools.count(1)


def build_http_api_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    raw_body: str | bytes | None = None,
    headers: dict[str, str] | None = None,
    claims: dict[str, Any] | None = None,
    route_key: str | None = None,
    path_parameters: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    request_id: str | None = None,
) -> dict[str, Any]:
    """One HTTP API v2 event.

    Args:
        body: JSON-serialised into the body (ignored when ``raw_body`` is given).
        raw_body: the body exactly as sent (``bytes`` are base64-encoded, as API Gateway does).
        headers: request headers (lower-cased, as API Gateway delivers them).
        claims: the JWT claims the authorizer verified (``None`` = no authorizer context).
        request_id: ``requestContext.requestId`` (unique by default).
    """
    now = datetime.now(UTC)
    hdrs = {"content-type": "application/json", "host": "api.local"}
    hdrs.update({k.lower(): v for k, v in (headers or {}).items()})
    is_base64 = False
    text: str | None
    if raw_body is not None:
        if isinstance(raw_body, bytes):
            text, is_base64 = base64.b64encode(raw_body).decode("ascii"), True
        else:
            text = raw_body
    elif body is not None:
        text = json.dumps(body, ensure_ascii=False)
    else:
        text = None
    request_context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "localapi",
        "domainName": "api.local",
        "domainPrefix": "api",
        "http": {
            "method": method.upper(),
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1",
            "userAgent": "pytest",
        },
        "requestId": request_id or f"req-{next(_ids):06d}",
        "routeKey": route_key or f"{method.upper()} {path}",
        "stage": "$default",
        "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
        "timeEpoch": int(now.timestamp() * 1000),
    }
    if claims is not None:
        request_context["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": request_context["routeKey"],
        "rawPath": path,
        "rawQueryString": "&".join(f"{k}={v}" for k, v in (query or {}).items()),
        "headers": hdrs,
        "requestContext": request_context,
        "isBase64Encoded": is_base64,
    }
    if query:
        event["queryStringParameters"] = dict(query)
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if text is not None:
        event["body"] = text
    return event
