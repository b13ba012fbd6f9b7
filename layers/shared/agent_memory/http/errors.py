"""Exceptions -> HTTP responses: the ONE error map of every HTTP function.

Every error answers with one body shape: ``{"error": code, "reason": str, "retryable": bool,
"request_id": str}``, plus the fields a particular error adds (``current_version``, ``limit_bytes``,
...). Reasons never contain message text, prompts or secrets. The route guard's refusals (401, 403,
400, 415), request validation (422), the domain errors and, in the chat function, the Powertools
idempotency errors all answer through this map.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from agent_memory.domain import errors as e
from agent_memory.http.powertools import ApiGatewayResolver, RequestValidationError, Response, content_types
from agent_memory.observability import logger, metrics


class RequestRejected(Exception):
    """A request refused for its form, never for its content: a malformed path parameter, a body
    that is not UTF-8 or not declared JSON, an over-long ``Idempotency-Key``.

    ``status`` is the HTTP status (400 or 415), ``code`` the body's ``error``, ``reason`` is safe to
    show (it never quotes the request).
    """

    def __init__(self, status: int, code: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.code = code
        self.reason = reason


def _request_id(app: ApiGatewayResolver) -> str:
    try:
        return str(app.current_event.request_context.request_id)  # type: ignore[attr-defined]  # HTTP API v2 event
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
    headers: Mapping[str, str] | None = None,
) -> Response:
    """A JSON error response with the request id (and ``Retry-After`` in whole seconds)."""
    all_headers = dict(headers or {})
    if retry_after_s is not None:
        all_headers["Retry-After"] = str(max(1, math.ceil(retry_after_s)))
    body: dict[str, Any] = {"error": code, "reason": reason, "retryable": retryable, "request_id": _request_id(app)}
    if extra:
        body.update(extra)
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body, headers=all_headers)


#: ``Retry-After`` of a retryable conflict (a concurrent writer won; another request with the same
#: ``Idempotency-Key`` is running) and of a busy storage service: whole seconds drawn at random from
#: this inclusive range, so that clients that collided do not retry in step and collide again.
RETRY_AFTER_JITTER_S = (1, 3)


def jittered_retry_after_s() -> int:
    """Seconds for a retryable conflict's ``Retry-After``: a random integer in
    :data:`RETRY_AFTER_JITTER_S` (never below 1)."""
    low, high = RETRY_AFTER_JITTER_S
    return random.randint(low, high)  # noqa: S311 - jitter, not a secret


_SAFE_LOC = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def _safe_loc(part: object) -> str:
    """A location element of a validation error, or ``<value>`` when it is not a plain field
    name or index (it could be request content, e.g. a form key made of the whole body)."""
    text = str(part)
    return text if _SAFE_LOC.match(text) else "<value>"


#: Domain errors answered with their reason alone: exception -> (status, code). A subclass
#: answers as its nearest mapped base (``LineNotFound`` as ``NotFound``).
PLAIN_ERRORS: Mapping[type[e.DomainError], tuple[HTTPStatus, str]] = {
    e.Forbidden: (HTTPStatus.FORBIDDEN, "forbidden"),
    e.InvalidInput: (HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_input"),
    e.ItemTooLarge: (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "item_too_large"),
    e.ProjectNotFound: (HTTPStatus.NOT_FOUND, "not_found"),
    e.SessionNotFound: (HTTPStatus.NOT_FOUND, "not_found"),
    e.MessageNotFound: (HTTPStatus.NOT_FOUND, "not_found"),
    e.DiagnosisNotFound: (HTTPStatus.NOT_FOUND, "not_found"),
    e.NotFound: (HTTPStatus.NOT_FOUND, "not_found"),
    e.AlreadyExists: (HTTPStatus.CONFLICT, "already_exists"),
    e.LastAdmin: (HTTPStatus.CONFLICT, "last_admin"),
    e.JobsRunning: (HTTPStatus.CONFLICT, "jobs_running"),
    e.InvalidContinuationToken: (HTTPStatus.BAD_REQUEST, "invalid_next_token"),
    e.PreconditionRequired: (HTTPStatus.PRECONDITION_REQUIRED, "precondition_required"),
    e.MalformedRequest: (HTTPStatus.BAD_REQUEST, "malformed_request"),
    # WeCom's callback protocol (docs/architecture.md, "WeCom"): no bearer token is involved, so
    # these answer without the Bearer challenge of a missing token.
    e.WeComSignatureInvalid: (HTTPStatus.UNAUTHORIZED, "signature_invalid"),
    e.WeComCallbackStale: (HTTPStatus.UNAUTHORIZED, "callback_stale"),
    e.WeComReceiverMismatch: (HTTPStatus.FORBIDDEN, "receiver_mismatch"),
}


def register_error_handlers(app: ApiGatewayResolver, *, idempotency: bool = False) -> None:
    """Attach the error map to ``app``; ``idempotency`` adds the answers to the Powertools
    idempotency errors (for the function that serves ``Idempotency-Key``)."""

    def plain(status: HTTPStatus, code: str) -> Callable[[e.DomainError], Response]:
        return lambda exc: error_response(app, status, code, exc.reason)

    for exc_type, (status, code) in PLAIN_ERRORS.items():
        app.exception_handler(exc_type)(plain(status, code))

    _register_request_errors(app)
    _register_domain_errors(app)
    _register_upstream_errors(app)
    if idempotency:
        _register_idempotency_errors(app)


def _register_request_errors(app: ApiGatewayResolver) -> None:
    """Refusals of the request itself: validation (422), form (400 / 415), authentication (401)."""

    @app.exception_handler(RequestValidationError)
    def _validation(exc: RequestValidationError) -> Response:
        if_match = _if_match_errors(exc.errors())
        if if_match == "missing":
            return error_response(
                app, HTTPStatus.PRECONDITION_REQUIRED, "precondition_required",
                "If-Match with the version you are editing (the ETag) is required",
            )
        if if_match == "invalid":
            return error_response(
                app, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error",
                'If-Match must be a strong ETag of the version you are editing, e.g. "7" (not W/"7", not *)',
            )
        details = [
            {
                "loc": [_safe_loc(x) for x in err.get("loc", ())],
                "msg": str(err.get("msg", ""))[:200],
                "type": err.get("type"),
            }
            for err in exc.errors()
        ]
        reason = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details) or "invalid request"
        return error_response(
            app, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error", reason, extra={"detail": details}
        )

    @app.exception_handler(RequestRejected)
    def _rejected(exc: RequestRejected) -> Response:
        return error_response(app, exc.status, exc.code, exc.reason)

    @app.exception_handler(e.Unauthorized)
    def _unauthorized(exc: e.Unauthorized) -> Response:
        return error_response(
            app, HTTPStatus.UNAUTHORIZED, "unauthorized", exc.reason,
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )


def _if_match_errors(errors: Any) -> str | None:
    """``"missing"`` when the one thing wrong with a request is a missing ``If-Match`` header (a
    write based on a version needs it: 428, RFC 6585), ``"invalid"`` when it is an ``If-Match``
    that names no version (422 saying what it must be), else None."""
    errors = list(errors)
    found = [err for err in errors if [str(x).lower() for x in err.get("loc", ())] == ["header", "if-match"]]
    if not found or len(found) != len(errors):
        return None
    return "missing" if all(err.get("type") == "missing" for err in found) else "invalid"


def _register_domain_errors(app: ApiGatewayResolver) -> None:
    """Domain errors whose answer carries more than the reason (limits, versions, status)."""

    @app.exception_handler(e.PayloadTooLarge)
    def _too_large(exc: e.PayloadTooLarge) -> Response:
        return error_response(
            app, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large", exc.reason,
            extra={"limit_bytes": exc.limit_bytes, "actual_bytes": exc.actual_bytes},
        )

    @app.exception_handler(e.VersionConflict)
    def _conflict(exc: e.VersionConflict) -> Response:
        # ``current_version`` only for what has a version (hot memory, a weekly report): a session
        # or a membership written concurrently has none to show, so the field is left out, not null
        version = exc.current_version
        return error_response(
            app, HTTPStatus.CONFLICT, "version_conflict", exc.reason, retryable=True,
            retry_after_s=jittered_retry_after_s(), extra=None if version is None else {"current_version": version},
        )

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

    @app.exception_handler(e.IdentifiersRejected)
    def _identifiers_rejected(exc: e.IdentifiersRejected) -> Response:
        # The kinds found only; the values are never answered or logged.
        return error_response(
            app, HTTPStatus.UNPROCESSABLE_ENTITY, "identifiers_rejected", exc.reason, extra={"kinds": list(exc.kinds)},
        )

    @app.exception_handler(e.ConfirmationRequired)
    def _confirmation_required(exc: e.ConfirmationRequired) -> Response:
        # The rules are the admin's own lines, shown to the admin; nothing is logged.
        rules = [{"line_id": ln.line_id, "text": ln.text, "role_tag": ln.role_tag} for ln in exc.rules]
        return error_response(
            app, HTTPStatus.UNPROCESSABLE_ENTITY, "confirmation_required", exc.reason,
            extra={"item_id": exc.item_id, "rules": rules, "current_version": exc.current_version},
        )


def _register_upstream_errors(app: ApiGatewayResolver) -> None:
    """Failures of the services behind the function: the LLM provider and the AWS services."""
    _register_llm_errors(app)
    _register_llm_provider_faults(app)

    @app.exception_handler(e.ExternalServiceError)
    def _service(exc: e.ExternalServiceError) -> Response:
        metrics.add_metric(name="ExternalServiceError", unit="Count", value=1)
        logger.error("service call failed", extra={"service": exc.service, "code": exc.code})
        if exc.retryable:
            return error_response(
                app, HTTPStatus.SERVICE_UNAVAILABLE, "service_unavailable", "a storage service is busy; retry",
                retryable=True, retry_after_s=jittered_retry_after_s(),
            )
        return error_response(app, HTTPStatus.BAD_GATEWAY, "service_error", "a storage service call failed")


def _register_llm_errors(app: ApiGatewayResolver) -> None:
    """The LLM call could not be made or finished: overload (503), our deadline (504), a request the
    provider rejected (502)."""

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


#: Faults of the provider's side or of our configuration, each 502 with its own code: exception ->
#: (code, safe reason, retryable, metric). Only an empty reply may go otherwise on a retry; the others
#: need a fix first (credentials, model id). The metrics the alarms watch (``LLMAuthError``,
#: ``LLMModelNotFound``, ``LLMBadResponse``) are counted where the error arises, in the LLM adapter,
#: so that the background jobs count too: ``None`` here, so that a chat turn counts once.
LLM_PROVIDER_FAULTS: Mapping[type[e.LLMError], tuple[str, str, bool, str | None]] = {
    e.LLMAuthError: ("llm_auth", "the LLM provider refused the service's credentials", False, None),
    e.LLMModelNotFound: ("llm_model_not_found", "the configured LLM model is unknown or retired", False, None),
    e.LLMBadResponse: ("llm_bad_response", "the LLM provider's answer was not a valid reply", False, None),
    e.LLMEmptyReply: ("llm_empty_reply", "the LLM gave no answer", True, "LLMEmptyReply"),
    # Any other LLM failure (a subclass mapped nowhere above): still a 502, never a 500.
    e.LLMError: ("llm_error", "the LLM call failed", False, "LLMError"),
}


def _register_llm_provider_faults(app: ApiGatewayResolver) -> None:
    """:data:`LLM_PROVIDER_FAULTS`: 502 with the code, the metric when the map counts it, an error log
    line (the exception's reason, never a prompt or a reply)."""

    def fault(code: str, reason: str, retryable: bool, metric: str | None) -> Callable[[e.LLMError], Response]:
        def answer(exc: e.LLMError) -> Response:
            if metric is not None:
                metrics.add_metric(name=metric, unit="Count", value=1)
            logger.error("llm call failed", extra={"error": code, "reason": exc.reason})
            return error_response(app, HTTPStatus.BAD_GATEWAY, code, reason, retryable=retryable)

        return answer

    for exc_type, (code, reason, retryable, metric) in LLM_PROVIDER_FAULTS.items():
        app.exception_handler(exc_type)(fault(code, reason, retryable, metric))


def _register_idempotency_errors(app: ApiGatewayResolver) -> None:
    """A key reused with another body -> 422; the first request with the key still running -> 409,
    retryable, with ``Retry-After``; the idempotency store failing (throttled, unreachable, a record
    changed between its write and its read) -> 503 ``service_unavailable``, retryable, with
    ``Retry-After``, never a 500 (the turn did not run, or its answer is stored for the retry).

    Imported here: the idempotency package loads boto3 for its DynamoDB store, which the functions
    that serve no ``Idempotency-Key`` must not pay for at cold start.
    """
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyInconsistentStateError,
        IdempotencyPersistenceLayerError,
        IdempotencyValidationError,
    )

    @app.exception_handler(IdempotencyValidationError)
    def _key_reused(exc: IdempotencyValidationError) -> Response:
        return error_response(
            app, HTTPStatus.UNPROCESSABLE_ENTITY, "idempotency_key_reused",
            "this Idempotency-Key was used with a different body",
        )

    @app.exception_handler(IdempotencyAlreadyInProgressError)
    def _in_progress(exc: IdempotencyAlreadyInProgressError) -> Response:
        return error_response(
            app, HTTPStatus.CONFLICT, "request_in_progress", "a request with this Idempotency-Key is in progress",
            retryable=True, retry_after_s=jittered_retry_after_s(),
        )

    def _store_failed(exc: Exception) -> Response:
        metrics.add_metric(name="ExternalServiceError", unit="Count", value=1)
        logger.error("idempotency store failed", extra={"error": type(exc).__name__})
        return error_response(
            app, HTTPStatus.SERVICE_UNAVAILABLE, "service_unavailable", "a storage service is busy; retry",
            retryable=True, retry_after_s=jittered_retry_after_s(),
        )

    app.exception_handler(IdempotencyPersistenceLayerError)(_store_failed)
    app.exception_handler(IdempotencyInconsistentStateError)(_store_failed)
