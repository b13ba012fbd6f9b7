"""Domain exceptions -> HTTP responses, in ONE place (STYLE.md "Errors").

Error bodies: ``{"error": code, "reason": str, "retryable": bool, "request_id": str}``;
reasons never contain message text, prompts or secrets.
"""

from __future__ import annotations

import math
import re
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from agent_memory.domain import errors as e
from agent_memory.observability import logger, metrics


def _request_id(app: ApiGatewayResolver) -> str:
    try:
        return str(app.current_event.request_context.request_id)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - no event (unit tests): no id
        return ""


def error_response(
    app: ApiGatewayResolver,
    status: int,
    code: str,
    reason: str,
    *,
    retryable: bool = False,
    retry_after_s: float | None = None,
    extra: dict[str, Any] | None = None,
) -> Response:
    """A JSON error response with the request id (and ``Retry-After`` in whole seconds)."""
    headers: dict[str, str] = {}
    if retry_after_s is not None:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after_s)))
    body: dict[str, Any] = {"error": code, "reason": reason, "retryable": retryable, "request_id": _request_id(app)}
    if extra:
        body.update(extra)
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body, headers=headers)


_SAFE_LOC = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def _safe_loc(part: object) -> str:
    """A location element of a validation error, or ``<value>`` when it is not a plain field
    name or index (it could be request content, e.g. a form key made of the whole body)."""
    text = str(part)
    return text if _SAFE_LOC.match(text) else "<value>"


def register_error_handlers(app: ApiGatewayResolver) -> None:
    """Attach the mapping of every domain exception to ``app``."""

    @app.exception_handler(RequestValidationError)
    def _validation(exc: RequestValidationError) -> Response:
        details = [
            {"loc": [_safe_loc(x) for x in err.get("loc", ())], "msg": str(err.get("msg", ""))[:200],
             "type": err.get("type")}
            for err in exc.errors()
        ]
        reason = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details) or "invalid request"
        return error_response(app, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error", reason, extra={"detail": details})

    @app.exception_handler(e.Unauthorized)
    def _unauthorized(exc: e.Unauthorized) -> Response:
        return error_response(app, HTTPStatus.UNAUTHORIZED, "unauthorized", exc.reason)

    @app.exception_handler(e.Forbidden)
    def _forbidden(exc: e.Forbidden) -> Response:
        return error_response(app, HTTPStatus.FORBIDDEN, "forbidden", exc.reason)

    @app.exception_handler(e.InvalidInput)
    def _invalid(exc: e.InvalidInput) -> Response:
        return error_response(app, HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_input", exc.reason)

    @app.exception_handler(e.PayloadTooLarge)
    def _too_large(exc: e.PayloadTooLarge) -> Response:
        return error_response(
            app, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large", exc.reason,
            extra={"limit_bytes": exc.limit_bytes, "actual_bytes": exc.actual_bytes},
        )

    @app.exception_handler(e.ItemTooLarge)
    def _item_too_large(exc: e.ItemTooLarge) -> Response:
        return error_response(app, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "item_too_large", exc.reason)

    @app.exception_handler(e.ProjectNotFound)
    @app.exception_handler(e.SessionNotFound)
    @app.exception_handler(e.MessageNotFound)
    @app.exception_handler(e.DiagnosisNotFound)
    def _not_found(exc: e.DomainError) -> Response:
        return error_response(app, HTTPStatus.NOT_FOUND, "not_found", exc.reason)

    @app.exception_handler(e.AlreadyExists)
    def _exists(exc: e.AlreadyExists) -> Response:
        return error_response(app, HTTPStatus.CONFLICT, "already_exists", exc.reason)

    @app.exception_handler(e.InvalidContinuationToken)
    def _bad_token(exc: e.InvalidContinuationToken) -> Response:
        return error_response(app, HTTPStatus.BAD_REQUEST, "invalid_next_token", exc.reason)

    @app.exception_handler(e.VersionConflict)
    def _conflict(exc: e.VersionConflict) -> Response:
        return error_response(
            app, HTTPStatus.CONFLICT, "version_conflict", exc.reason, retryable=True,
            extra={"current_version": exc.current_version},
        )

    @app.exception_handler(e.NotFound)
    def _admin_not_found(exc: e.NotFound) -> Response:
        return error_response(app, HTTPStatus.NOT_FOUND, "not_found", exc.reason)

    @app.exception_handler(e.PreconditionRequired)
    def _precondition_required(exc: e.PreconditionRequired) -> Response:
        return error_response(app, HTTPStatus.PRECONDITION_REQUIRED, "precondition_required", exc.reason)

    @app.exception_handler(e.OverTokenCap)
    def _over_cap(exc: e.OverTokenCap) -> Response:
        metrics.add_metric(name="HotMemoryOverCapRejected", unit="Count", value=1)
        return error_response(
            app, HTTPStatus.UNPROCESSABLE_ENTITY, "over_token_cap", exc.reason,
            extra={"tokens": exc.tokens, "cap": exc.cap},
        )

    @app.exception_handler(e.AlreadyDecided)
    def _already_decided(exc: e.AlreadyDecided) -> Response:
        return error_response(app, HTTPStatus.CONFLICT, "already_decided", exc.reason, extra={"status": exc.status})

    @app.exception_handler(e.LLMUnavailable)
    def _unavailable(exc: e.LLMUnavailable) -> Response:
        metrics.add_metric(name="LLMUnavailable", unit="Count", value=1)
        logger.warning("llm unavailable", extra={"reason": exc.reason})
        return error_response(
            app, HTTPStatus.SERVICE_UNAVAILABLE, "llm_unavailable", exc.reason, retryable=True,
            retry_after_s=exc.retry_after_s or 5,
        )

    @app.exception_handler(e.LLMDeadlineExceeded)
    def _deadline(exc: e.LLMDeadlineExceeded) -> Response:
        metrics.add_metric(name="LLMDeadlineExceeded", unit="Count", value=1)
        logger.warning("llm deadline exceeded")
        return error_response(
            app, HTTPStatus.GATEWAY_TIMEOUT, "llm_timeout", exc.reason, retryable=True, retry_after_s=5
        )

    @app.exception_handler(e.LLMBadRequest)
    def _bad_upstream(exc: e.LLMBadRequest) -> Response:
        metrics.add_metric(name="LLMBadRequest", unit="Count", value=1)
        logger.error("llm rejected the request", extra={"reason": exc.reason})
        return error_response(app, HTTPStatus.BAD_GATEWAY, "llm_bad_request", "the LLM provider rejected the request")
