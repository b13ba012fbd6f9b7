"""Every replacement of a moto internal in the local runtime, registered with its reason.

The local stack's moto server (:mod:`infra.local.moto_server`) answers one request at a time, so
moto's own code is used as it ships except where :data:`PATCHES` says otherwise. Each entry names
the attribute replaced, the module that replaces it, what needs it (durability: the after-image
log of :mod:`infra.local.moto_persistence`; the bounded footprint; performance, measured by
``make bench``), the upstream moto issue or pull request it mirrors, and what to re-check when moto
changes the original. ``tests/infra/test_vendor_patches.py`` fails when an assignment to a moto or
Powertools attribute in ``infra/local`` is not registered here, and when the source of a patched
original differs from the one pinned here (a moto upgrade: re-check, then update the pin).

The bounded footprint: moto's ``DynamoDBBackend.transact_write_items`` deep-copies every table a
transaction touches (to put the copy back when an operation fails): time and memory per chat turn
grow with the size of the tables. :func:`transact_write_items` is moto's, step for step (the same
validations in the same order, the same exceptions and cancellation reasons), except that it saves
the previous state of each item it writes and, on failure, puts back only those items.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table

#: The moto version the pins below were taken from (``requirements-dev.txt`` pins the same).
MOTO_VERSION = "5.2.5"


@dataclass(frozen=True)
class VendorPatch:
    """One attribute of a vendor library the local runtime replaces.

    ``target``: the dotted path of the attribute (module, class, attribute); ``module``: the
    ``infra.local`` module that assigns it; ``need``: ``durability``, ``bounded footprint`` or
    ``performance``; ``upstream``: the upstream issue or pull request this mirrors (or why none);
    ``recheck``: what to compare in the new original before updating ``source_sha256`` (the
    SHA-256 of the original's source at :data:`MOTO_VERSION`).
    """

    target: str
    module: str
    need: str
    upstream: str
    recheck: str
    source_sha256: str


_PERSISTENCE_UPSTREAM = (
    "getmoto/moto#9755 (state persistence for moto server; closed, not implemented) and "
    "getmoto/moto#1069 (storage on disk; closed): upstream-style, a write hook of the backend"
)
_WRITE_RECHECK = ("the arguments the wrapper reads by name (table_name, item_attrs, key) and that it still "
                  "applies the write it is asked to (the log records the item as it is after the call)")

PATCHES: tuple[VendorPatch, ...] = (
    VendorPatch(
        "moto.dynamodb.models.DynamoDBBackend.transact_write_items", "infra.local.moto_patches",
        "bounded footprint",
        "none found (searched getmoto/moto issues and PRs for transact_write_items deepcopy / rollback): "
        "upstream-style, an undo log of the touched items instead of copy.deepcopy of each table",
        "moto's validations, their order and exceptions; port any change into transact_write_items",
        "56b2b0fcd0d1b5d6c78b3c05ed9b18a2a9347ac81e9d8a9c4e0fbc3f2b7f6b1c",
    ),
    VendorPatch("moto.dynamodb.models.DynamoDBBackend.put_item", "infra.local.moto_persistence", "durability",
                _PERSISTENCE_UPSTREAM, _WRITE_RECHECK, ""),
    VendorPatch("moto.dynamodb.models.DynamoDBBackend.update_item", "infra.local.moto_persistence", "durability",
                _PERSISTENCE_UPSTREAM, _WRITE_RECHECK, ""),
    VendorPatch("moto.dynamodb.models.DynamoDBBackend.delete_item", "infra.local.moto_persistence", "durability",
                _PERSISTENCE_UPSTREAM, _WRITE_RECHECK, ""),
    VendorPatch("moto.dynamodb.models.DynamoDBBackend.create_table", "infra.local.moto_persistence", "durability",
                _PERSISTENCE_UPSTREAM, "the keyword arguments (the log replays them into the original)", ""),
    VendorPatch("moto.dynamodb.models.DynamoDBBackend.delete_table", "infra.local.moto_persistence", "durability",
                _PERSISTENCE_UPSTREAM, "the keyword arguments (the log replays them into the original)", ""),
    VendorPatch("moto.dynamodb.models.DynamoDBBackend.update_time_to_live", "infra.local.moto_persistence",
                "durability", _PERSISTENCE_UPSTREAM, "the keyword arguments (the log replays them)", ""),
)

_applied = False

# (table, hash key, range key or None, the item before the transaction or None if absent)
_Saved = tuple[Table, Any, Any, Any]


def _save(backend: DynamoDBBackend, table_name: str, key: dict[str, Any], current: Any) -> _Saved:
    table = backend.get_table(table_name)
    hash_key, range_key = backend.get_keys_value(table, key)
    return table, hash_key, range_key, copy.deepcopy(current)


def _restore(saved: list[_Saved]) -> None:
    """Put the touched items back as they were, newest change first."""
    for table, hash_key, range_key, previous in reversed(saved):
        if table.has_range_key:
            if previous is None:
                table.items[hash_key].pop(range_key, None)
                if not table.items[hash_key]:
                    table.items.pop(hash_key, None)
            else:
                table.items[hash_key][range_key] = previous
        elif previous is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = previous


def _apply_op(backend: DynamoDBBackend, op_type: str, op: dict[str, Any], key: dict[str, Any]) -> None:
    """Apply one operation whose condition :func:`transact_write_items` has evaluated already
    (moto passes it on and evaluates it again against the same item)."""
    table_name = op["TableName"]
    kwargs: dict[str, Any] = {
        "condition_expression": None,
        "expression_attribute_names": op.get("ExpressionAttributeNames"),
        "expression_attribute_values": op.get("ExpressionAttributeValues"),
    }
    if op_type == "Put":
        backend.put_item(table_name, op["Item"], **kwargs)
    elif op_type == "Delete":
        backend.delete_item(table_name, key, **kwargs)
    elif op_type == "Update":
        backend.update_item(table_name, key, update_expression=op["UpdateExpression"], **kwargs)


def op_key(backend: DynamoDBBackend, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    """The primary key of the item a transaction operation targets (DynamoDB JSON)."""
    if op_type != "Put":
        return dict(op["Key"])
    attrs = op["Item"]
    table = backend.get_table(op["TableName"])
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _check(backend: DynamoDBBackend, op_type: str, op: dict[str, Any], key: dict[str, Any]) -> Any:
    """The item at ``key`` (or None) once the operation's condition holds for it.

    Raises:
        ConditionalCheckFailed: it does not (with the item when ``ALL_OLD`` was asked for).
    """
    current = backend.get_item(op["TableName"], key)
    expression = op.get("ConditionExpression")
    if expression is not None:
        condition = get_filter_expression(expression, op.get("ExpressionAttributeNames"),
                                          op.get("ExpressionAttributeValues"))
        if not condition.expr(current):
            wants_old = op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current
            raise _ConditionFailed(current.to_json()["Attributes"] if wants_old else None)
    return current


class _ConditionFailed(ConditionalCheckFailed):
    """moto's ``ConditionalCheckFailed`` that keeps the item for the cancellation reason."""

    def __init__(self, item: dict[str, Any] | None) -> None:
        super().__init__(item=item)
        self.old_item = item


def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """moto's ``transact_write_items`` with a rollback of the touched items only (module docstring)."""
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    saved: list[_Saved] = []
    targets: set[tuple[str, str]] = set()
    errors: list[tuple[str, str, dict[str, Any]] | tuple[None, None, None]] = []
    for item in transact_items:
        if len(list(item.keys())) > 1:
            _restore(saved)
            raise TransactWriteSingleOpException
        try:
            op_type, op = next(iter(item.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")
            key = op_key(self, op_type, op)
            unique = (str(op["TableName"]), str(dict(sorted(key.items()))))
            if unique in targets:
                raise MultipleTransactionsException()
            targets.add(unique)
            current = _check(self, op_type, op, key)
            if op_type != "ConditionCheck":
                saved.append(_save(self, op["TableName"], key, current))
                _apply_op(self, op_type, op, key)
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            _restore(saved)
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), getattr(e, "old_item", None)))  # type: ignore[arg-type]
        except Exception as e:  # noqa: BLE001 - moto reports any other failure as a cancellation reason
            errors.append((type(e).__name__, str(e), None))  # type: ignore[arg-type]
    if any(code is not None for code, _, _ in errors):
        _restore(saved)
        raise TransactionCanceledException(errors)


def apply() -> None:
    """Install the bounded-footprint patch in this process (idempotent; existing backends too)."""
    global _applied
    if _applied:
        return
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    _applied = True
