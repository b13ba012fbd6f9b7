"""The one domain exception the AWS adapters raise for a failed service call.

Adapters turn the outcomes they expect into the domain's own exceptions (a failed condition is a
``VersionConflict``, ``AlreadyExists``, ...). Anything else the SDK raises (throttling after the
SDK's retries, an outage, a timeout, a request the service rejects) becomes
:class:`ExternalServiceError`, so no botocore or PynamoDB exception reaches the features. The SDK
exception stays attached as ``__cause__`` for the logs.
"""

from __future__ import annotations

from agent_memory.domain.errors import ExternalServiceError

#: Error codes after which the same call may succeed later: the services' exception codes and the
#: per-item cancellation codes of ``TransactWriteItems`` (``ThrottlingError``,
#: ``ProvisionedThroughputExceeded``: the DynamoDB API reference, TransactWriteItems, "Cancellation
#: reasons").
RETRYABLE_CODES = frozenset({
    "InternalServerError",
    "InternalFailure",
    "InternalServiceError",  # Secrets Manager's service fault
    "LimitExceededException",
    "ProvisionedThroughputExceeded",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "ServiceUnavailable",
    "Throttling",
    "ThrottlingError",
    "ThrottlingException",
    "TransactionCanceledException",
    "TransactionConflict",
    "TransactionInProgressException",
})


def service_error(service: str, exc: Exception) -> ExternalServiceError:
    """The domain exception for a botocore exception of ``service``: the error code of a
    ``ClientError``'s response, None for a ``BotoCoreError`` (no answer came)."""
    response = getattr(exc, "response", None) or {}
    return coded_error(service, response.get("Error", {}).get("Code"))


def coded_error(service: str, code: str | None) -> ExternalServiceError:
    """The domain exception for ``service``'s error ``code`` (None: no answer came, retryable)."""
    return ExternalServiceError(service, code, retryable=code is None or code in RETRYABLE_CODES)


__all__ = ["RETRYABLE_CODES", "coded_error", "service_error"]
