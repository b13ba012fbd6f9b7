"""Domain exceptions. Handlers map them to HTTP in one place (``agent_memory.http.errors``)."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Base class; ``reason`` is safe to show a client (never patient text)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ProjectNotFound(DomainError):
    """The project id is unknown (HTTP 404)."""


class Unauthorized(DomainError):
    """No valid credentials (HTTP 401)."""


class Forbidden(DomainError):
    """Authenticated but not allowed: another project, or an admin route (HTTP 403)."""


class SessionNotFound(DomainError):
    """The session does not exist in this project (HTTP 404)."""


class MessageNotFound(DomainError):
    """The message does not exist in this session (HTTP 404)."""


class PayloadTooLarge(DomainError):
    """A field is over its UTF-8 byte limit (HTTP 413)."""

    def __init__(self, reason: str, limit_bytes: int, actual_bytes: int) -> None:
        super().__init__(reason)
        self.limit_bytes = limit_bytes
        self.actual_bytes = actual_bytes


class InvalidInput(DomainError):
    """Input is well-formed JSON but semantically invalid (HTTP 422)."""


class NotFound(DomainError):
    """Base of the admin API's "no such thing in this project" errors (HTTP 404)."""


class LineNotFound(NotFound):
    """No hot-memory line with that id in the current version (HTTP 404)."""


class RevisionNotFound(NotFound):
    """No stored hot-memory revision with that version (HTTP 404)."""


class ReviewItemNotFound(NotFound):
    """No review-queue item with that id (HTTP 404)."""


class ReportNotFound(NotFound):
    """No weekly report for that ISO week (HTTP 404)."""


class PreconditionRequired(DomainError):
    """A write that needs ``If-Match`` (the version it is based on) came without it (HTTP 428)."""


class OverTokenCap(DomainError):
    """A hot-memory write would exceed the token cap; nothing is stored, nothing clipped
    (HTTP 422 ``over_token_cap`` with ``tokens`` and ``cap``)."""

    def __init__(self, reason: str, tokens: int, cap: int) -> None:
        super().__init__(reason)
        self.tokens = tokens
        self.cap = cap


class AlreadyDecided(DomainError):
    """A review-queue item was already approved or rejected (HTTP 409)."""

    def __init__(self, reason: str, status: str) -> None:
        super().__init__(reason)
        self.status = status


class VersionConflict(DomainError):
    """An optimistic-lock condition failed (HTTP 409 with the current version)."""

    def __init__(self, reason: str, current_version: int | None = None) -> None:
        super().__init__(reason)
        self.current_version = current_version


class ItemTooLarge(DomainError):
    """An item would exceed its byte budget (DynamoDB's 400 KB item limit)."""


class LLMError(DomainError):
    """Base for LLM failures."""

    retryable = False
    retry_after_s: float | None = None


class LLMUnavailable(LLMError):
    """Overloaded / rate limited / unreachable after the SDK's retries (HTTP 503, retryable)."""

    retryable = True

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after_s = retry_after_s


class LLMDeadlineExceeded(LLMError):
    """No reply before our own deadline, which is kept under API Gateway's 30 s
    integration timeout (HTTP 504, retryable)."""

    retryable = True


class LLMBadRequest(LLMError):
    """The provider rejected our request (4xx other than 429): a bug on our side, not
    retryable (HTTP 502)."""


class LLMTruncated(LLMError):
    """A structured (tool) output was cut by max_tokens; nothing may be applied."""


class AlreadyExists(DomainError):
    """A create with an id that is already taken (HTTP 409)."""


class JobsRunning(DomainError):
    """A job for the project is still running (an erasure in progress), so the project cannot be
    removed yet (HTTP 409; docs/architecture.md, "Data governance")."""


class LastAdmin(DomainError):
    """Removing or demoting the project's last admin (HTTP 409): a project always keeps one."""


class DiagnosisNotFound(DomainError):
    """The diagnosis does not exist for this session / patient (HTTP 404)."""


class InvalidContinuationToken(DomainError):
    """A listing's ``next_token`` is not one this service issued for this listing (HTTP 400)."""


class EnqueueFailed(DomainError):
    """Some job requests could not be enqueued (after the queue adapter's retries).

    The dispatcher lets it propagate: the invocation fails, Lambda's asynchronous retries run
    the dispatch again (idempotent downstream), then its on-failure destination (the schedule
    DLQ, which alarms) receives the event.
    """

    def __init__(self, reason: str, failed: int) -> None:
        super().__init__(reason)
        self.failed = failed


class ExternalServiceError(DomainError):
    """A call to an outside service failed for a reason other than one of our conditions
    (HTTP 503 when ``retryable``, else 502; the adapters decide ``retryable`` from the error code).

    Attributes:
        service: ``dynamodb``, ``sns``, ``sqs``.
        code: the service's error code, or None when no answer came (connection, timeout).
        retryable: the same call may succeed later (throttling, a service fault, no answer).
    """

    def __init__(self, service: str, code: str | None, *, retryable: bool) -> None:
        super().__init__(f"{service} call failed ({code or 'no response'})")
        self.service = service
        self.code = code
        self.retryable = retryable


class LLMAuthError(LLMError):
    """The provider refused our credentials (401/403): a configuration fault, not the request's
    (HTTP 502 ``llm_auth``; metric ``LLMAuthError`` and its alarm)."""


class LLMModelNotFound(LLMError):
    """The configured model id is unknown or retired (404 ``not_found_error``; HTTP 502
    ``llm_model_not_found``; metric ``LLMModelNotFound`` and its alarm)."""


class LLMBadResponse(LLMError):
    """The provider answered 2xx with something that is not a Messages response (HTTP 502
    ``llm_bad_response``); nothing of it is used."""


class LLMEmptyReply(LLMError):
    """The model's final answer had no text, also after one retry (HTTP 502 ``llm_empty_reply``)."""


class ConfirmationRequired(InvalidInput):
    """Approving a review item would relax System Rules and the admin did not confirm it (HTTP 422
    ``confirmation_required``, with the rules and the current version).

    ``rules`` are the System Rules lines it would relax, in document order (``HotMemoryLine``);
    they are the admin's own memory, shown to the admin: never log them.
    """

    def __init__(self, reason: str, *, item_id: str, rules: list[Any], current_version: int) -> None:
        super().__init__(reason)
        self.item_id = item_id
        self.rules = rules
        self.current_version = current_version


class SessionErased(SessionNotFound):
    """The session was erased (HTTP 404, as for a session that never existed): a write to it is
    refused so that no item outlives the erasure (docs/architecture.md, "Data governance")."""


class PatientNotFound(NotFound):
    """No session of this patient in the project, and no erasure of them (HTTP 404)."""


class MalformedRequest(DomainError):
    """A request whose form is broken before its content could be judged: a body that is not the
    XML or the ciphertext its protocol says (HTTP 400 ``malformed_request``)."""


class WeComSignatureInvalid(Unauthorized):
    """A WeCom callback whose ``msg_signature`` is not SHA-1 over the sorted token, timestamp,
    nonce and ciphertext of this project's channel (HTTP 401; nothing is stored)."""


class WeComCallbackStale(Unauthorized):
    """A correctly signed WeCom callback whose ``timestamp`` is more than the allowed skew
    (5 minutes) away from now, past or future: a replay is refused (HTTP 401; nothing is stored)."""


class WeComReceiverMismatch(Forbidden):
    """A WeCom callback that decrypts but names another corp id (``receiveid``) or application
    than this project's channel (HTTP 403; nothing is stored)."""


class WeComMalformedCallback(MalformedRequest):
    """A WeCom callback whose parameters, XML envelope, ciphertext or decrypted message is not
    what WeCom's protocol sends (HTTP 400; nothing is stored)."""


class EgressRefused(InvalidInput):
    """A URL a project admin set (the REDCap ``api_url``, the reminder webhook, a messenger) is
    refused by the egress policy when it is configured (HTTP 422; docs/architecture.md, "Egress
    policy"). ``rule`` names the rule (``scheme``, ``userinfo``, ``host``, ``ipv4_spelling``,
    ``port``, ``fragment``, ``unresolvable``, ``metadata``, ``link_local``, ``loopback``,
    ``multicast``, ``unspecified``, ``reserved``, ``private``, ``plain_http``); ``reason`` never
    quotes an address the host resolved to (a project admin must not map the operator's network)."""

    def __init__(self, reason: str, rule: str) -> None:
        super().__init__(reason)
        self.rule = rule


class EgressBlocked(DomainError):
    """A connection the egress policy refuses at connection time: the host resolved to (or the
    socket reached) an address the policy refuses, e.g. after a DNS rebinding, or the URL was set
    before the policy existed (docs/architecture.md, "Egress policy"). Nothing was sent; never
    retried. ``rule`` as for :class:`EgressRefused`; ``host`` is the URL's host."""

    def __init__(self, reason: str, rule: str, host: str) -> None:
        super().__init__(reason)
        self.rule = rule
        self.host = host


class SecretNotSet(DomainError):
    """A project's service-owned secret (REDCap token, webhook signing key, channel secrets) does
    not exist, or is scheduled for deletion (docs/architecture.md, "Project secrets")."""


class SecretUnreadable(DomainError):
    """A project's secret exists but cannot be used: access denied, its KMS key refused, or a value
    that is not what the service stored. The reason never holds the value."""
class IdentifiersRejected(InvalidInput):
    """The text holds identifiers and the project's policy is ``reject`` (HTTP 422
    ``identifiers_rejected`` with ``kinds``); nothing of the request is stored.

    ``kinds`` are the kinds found (``phone``, ``resident_id``, ...), sorted; the values are never
    carried, logged or answered (docs/architecture.md, "Identifiers").
    """

    def __init__(self, kinds: tuple[str, ...]) -> None:
        super().__init__(
            "the text holds identifiers (" + ", ".join(kinds) + ") and this project does not accept them; "
            "remove them and send it again"
        )
        self.kinds = kinds
