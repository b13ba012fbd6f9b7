"""How the repositories talk to DynamoDB beyond a model's own get/query/save.

- :func:`batch_get`: ONE ``BatchGetItem`` across tables (unprocessed keys fetched again);
- :func:`query_pages` / :func:`query_items`: a low-level ``Query`` page by page (raw items), for
  the reads that need only keys or a few attributes; :func:`delete_keys`: ``BatchWriteItem``
  deletes of at most 25 keys per call (unprocessed keys sent again);
- :func:`transaction`: ONE ``TransactWriteItems`` (:func:`cancellation_codes` / :func:`is_conflict`
  read why it was cancelled);
- :func:`put_if_absent`: a ``PutItem`` that never overwrites;
- :func:`sdk_errors_as_domain`: the class decorator every repository wears, which turns any
  other PynamoDB or botocore exception into :class:`~agent_memory.domain.errors.ExternalServiceError`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.connection import Connection
from pynamodb.exceptions import PutError, PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo.pynamodb_internals import model_connection
from agent_memory.adapters.dynamo.tables import BaseItem, ProjectItem
from agent_memory.adapters.errors import coded_error, service_error
from agent_memory.domain.errors import ExternalServiceError

#: Cancellation codes that mean "a condition of ours failed or a concurrent writer won".
CONFLICT_CODES = frozenset({"ConditionalCheckFailed", "TransactionConflict"})
#: Most keys of one ``BatchWriteItem`` call (the AWS limit).
BATCH_WRITE_MAX = 25


def connection() -> Connection:
    """The low-level connection of the bound tables (shared by every table: transactions and
    batch reads span tables)."""
    return model_connection(ProjectItem)


def batch_get(request: dict[str, Any]) -> list[dict[str, Any]]:
    """``BatchGetItem`` of ``request`` (``{table: {"Keys": [...], ...}}``); raw items of every
    table. Unprocessed keys are fetched again until none remain (the AWS contract)."""
    conn = connection()
    items: list[dict[str, Any]] = []
    pending = request
    while pending:
        response = conn.dispatch("BatchGetItem", {"RequestItems": pending})
        for table_items in response.get("Responses", {}).values():
            items.extend(table_items)
        pending = response.get("UnprocessedKeys") or {}
    return items


def query_pages(table: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The pages (raw responses) of a low-level ``Query`` of ``table``, every page in turn."""
    conn = connection()
    start: dict[str, Any] | None = None
    while True:
        paging = {"ExclusiveStartKey": start} if start else {}
        page = conn.dispatch("Query", {"TableName": table, **request, **paging})
        yield page
        start = page.get("LastEvaluatedKey")
        if not start:
            return


def query_items(table: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The raw items of a low-level ``Query`` of ``table``, every page."""
    for page in query_pages(table, request):
        yield from page.get("Items", [])


def delete_keys(table: str, item_keys: list[dict[str, Any]]) -> int:
    """Delete the keys (raw ``{"pk": ..., "sk": ...}``) in ``BatchWriteItem`` calls of
    :data:`BATCH_WRITE_MAX` (unprocessed keys sent again); returns how many keys were sent (a
    missing key deletes nothing and is no error)."""
    conn = connection()
    for start in range(0, len(item_keys), BATCH_WRITE_MAX):
        chunk = item_keys[start:start + BATCH_WRITE_MAX]
        pending: dict[str, Any] = {table: [{"DeleteRequest": {"Key": k}} for k in chunk]}
        while pending:
            response = conn.dispatch("BatchWriteItem", {"RequestItems": pending})
            pending = response.get("UnprocessedItems") or {}
    return len(item_keys)


def transaction(client_request_token: str | None = None) -> TransactWrite:
    """A ``TransactWriteItems`` of the items added in its ``with`` block (sent on exit)."""
    return TransactWrite(connection=connection(), client_request_token=client_request_token)


def cancellation_codes(exc: TransactWriteError) -> list[str | None]:
    """Why each item of a cancelled transaction failed, in the order the items were added
    (None: that item was fine)."""
    return [r.code if r is not None else None for r in exc.cancellation_reasons or []]


def is_conflict(exc: TransactWriteError) -> bool:
    """The transaction was cancelled by a condition or a concurrent transaction."""
    return not CONFLICT_CODES.isdisjoint(cancellation_codes(exc))


def put_if_absent(item: BaseItem) -> bool:
    """Write ``item`` unless an item with its key exists; False (nothing written) when one does."""
    try:
        item.save(condition=type(item).sk.does_not_exist())
    except PutError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return False
        raise
    return True


def external_error(exc: Exception) -> ExternalServiceError:
    """The domain exception for an SDK exception (named by the service's error code)."""
    if isinstance(exc, TransactWriteError):
        code = next((c for c in cancellation_codes(exc) if c), None) or exc.cause_response_code
        return coded_error("dynamodb", code)
    if isinstance(exc, PynamoDBException):
        return coded_error("dynamodb", exc.cause_response_code)
    return service_error("dynamodb", exc)


_SDK_ERRORS = (PynamoDBException, BotoCoreError, ClientError)


def _translating(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except _SDK_ERRORS as exc:
            raise external_error(exc) from exc

    return call


def sdk_errors_as_domain[C: type](cls: C) -> C:
    """Class decorator: every public method of ``cls`` (those defined in its own body) raises
    :class:`ExternalServiceError` where PynamoDB or botocore would have raised.

    The expected outcomes (a missing item, a failed condition) are handled inside the methods
    and become the domain's own exceptions or return values; this catches the rest.
    """
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(cls, name, _translating(member))
    return cls


__all__ = [
    "BATCH_WRITE_MAX",
    "CONFLICT_CODES",
    "batch_get",
    "cancellation_codes",
    "connection",
    "delete_keys",
    "external_error",
    "is_conflict",
    "put_if_absent",
    "query_items",
    "query_pages",
    "sdk_errors_as_domain",
    "transaction",
]
