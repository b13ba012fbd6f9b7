"""Patches to moto's DynamoDB backend that the local stack (and tests) need under concurrency.

moto 5.x ``DynamoDBBackend.transact_write_items`` deep-copies every table a transaction touches
and, when any operation fails, puts the whole copy back. With ``ThreadedMotoServer`` serving
requests on several threads that is wrong twice over: writes other threads committed between
the copy and the restore are erased (a 200 that later disappears), and the copy costs memory and
time proportional to the table size.

``apply()`` replaces it with:

* one process-wide re-entrant lock that serialises transactions against each other and against
  single-item writes (``put_item`` / ``update_item`` / ``delete_item``, which BatchWriteItem also
  goes through) and item reads (``get_item`` / ``query`` / ``scan``, so nobody reads a write that
  is about to be rolled back) — moto's backend lives in this process, so a lock is enough;
* a rollback that restores only the items the transaction touched: each item's previous state
  (a deep copy of that one item, or its absence) is saved before the operation is applied.

Validation and errors are moto's own: the same checks in the same order, the same
``TransactionCanceledException`` with one cancellation reason per operation, and
``MultipleTransactionsException`` / ``MockValidationException`` re-raised after the rollback.

``apply()`` also stops moto's instance tracking: ``BaseModel.__new__`` appends every model object
it ever creates (every DynamoDB ``Item``, including the copies made for each write) to a
class-level list that only moto's ``/moto-api/data.json`` introspection reads, so a long-running
server's memory grows with every request. Upstream-style, this would be an opt-out of the
tracking; here ``BaseModel.__new__`` simply no longer records instances.

``apply()`` also answers DynamoDB's item operations without moto's generic response serializer
(:func:`serve_item_responses_as_json`). moto 5.2 walks every result through a botocore-model-driven
serializer that costs about 0.1 ms per attribute value (measured: 7.6 ms for the chat turn's
BatchGetItem of four items, 1.4 ms for one GetItem); DynamoDB's JSON protocol body IS the result
document, so for these operations ``json.dumps`` of moto's own result gives the same response.
Upstream-style, this would be a fast path in ``DynamoResult``; here the patch falls back to moto's
serializer for anything that is not plain JSON (timestamps) and for errors, and a test compares the
parsed responses of both paths operation by operation.

``python -m infra.local.moto_patches -H HOST -p PORT`` runs moto's server with the patch applied
(what ``LocalStack`` uses for ``moto_mode="process"``).
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from moto.core.common_models import BaseModel
from moto.core.model_instances import model_data
from moto.core.responses import ActionContext
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
from moto.dynamodb.responses import DynamoResult

#: Serialises DynamoDB writes (and reads) of every patched backend in this process.
DYNAMODB_LOCK = threading.RLock()

_PATCHED_ATTR = "_agent_memory_transact_patch"
_LOCKED_METHODS = ("put_item", "update_item", "delete_item", "get_item", "query", "scan")

# (table, hash key, range key or None, the item before the transaction or None if absent)
_Saved = tuple[Table, Any, Any, Any]


def _locked(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with DYNAMODB_LOCK:
            return method(*args, **kwargs)

    return wrapper


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
    """Apply one operation of a transaction whose condition :func:`transact_write_items` has
    already evaluated under ``DYNAMODB_LOCK``: the condition is not passed on (moto would parse and
    evaluate it a second time against the same, locked, item); the names and values are, for an
    update expression."""
    table_name = op["TableName"]
    condition_kwargs: dict[str, Any] = {
        "condition_expression": None,
        "expression_attribute_names": op.get("ExpressionAttributeNames"),
        "expression_attribute_values": op.get("ExpressionAttributeValues"),
    }
    if op_type == "Put":
        backend.put_item(table_name, op["Item"], **condition_kwargs)
    elif op_type == "Delete":
        backend.delete_item(table_name, key, **condition_kwargs)
    elif op_type == "Update":
        backend.update_item(table_name, key, update_expression=op["UpdateExpression"], **condition_kwargs)


def _op_key(backend: DynamoDBBackend, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    if op_type != "Put":
        return dict(op["Key"])
    attrs = op["Item"]
    table = backend.get_table(op["TableName"])
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """moto's ``transact_write_items`` with a per-item rollback, run under ``DYNAMODB_LOCK``."""
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    with DYNAMODB_LOCK:
        saved: list[_Saved] = []
        target_items: set[tuple[str, str]] = set()
        errors: list[tuple[str, str, dict[str, Any]] | tuple[None, None, None]] = []
        for item in transact_items:
            original_item: dict[str, Any] | None = None
            if len(list(item.keys())) > 1:
                _restore(saved)
                raise TransactWriteSingleOpException
            try:
                op_type, op = next(iter(item.items()))
                if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                    raise ValueError("Unsupported transaction operation")
                table_name = op["TableName"]
                key = _op_key(self, op_type, op)
                unique = (str(table_name), str(dict(sorted(key.items()))))
                if unique in target_items:
                    raise MultipleTransactionsException()
                target_items.add(unique)

                current = self.get_item(table_name, key)
                condition_expression = op.get("ConditionExpression")
                if condition_expression is not None:
                    condition_op = get_filter_expression(
                        condition_expression, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
                    )
                    if not condition_op.expr(current):
                        if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                            original_item = current.to_json()["Attributes"]
                        raise ConditionalCheckFailed(item=original_item)

                if op_type != "ConditionCheck":
                    saved.append(_save(self, table_name, key, current))
                    _apply_op(self, op_type, op, key)
                errors.append((None, None, None))
            except (MultipleTransactionsException, MockValidationException):
                _restore(saved)
                raise
            except ConditionalCheckFailed as e:
                errors.append(("ConditionalCheckFailed", str(e.message), original_item))  # type: ignore[arg-type]
            except Exception as e:  # noqa: BLE001 - moto reports any other failure as a cancellation reason
                errors.append((type(e).__name__, str(e), original_item))  # type: ignore[arg-type]

        if any(code is not None for code, _, _ in errors):
            _restore(saved)
            raise TransactionCanceledException(errors)


def _untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``BaseModel.__new__`` without appending the instance to ``cls.instances_tracked``."""
    return object.__new__(cls)


def stop_instance_tracking() -> None:
    """moto no longer keeps a reference to every model object it creates; the lists kept so far are emptied."""
    BaseModel.__new__ = staticmethod(_untracked_new)  # type: ignore[assignment]
    for models in model_data.values():
        for model in models.values():
            model.instances_tracked = []  # type: ignore[attr-defined]


#: DynamoDB operations whose responses are item documents (the JSON protocol body is the result
#: itself): answered by :func:`_item_response_as_json`.
JSON_ITEM_OPERATIONS = frozenset({
    "GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "PutItem", "UpdateItem", "DeleteItem",
    "BatchWriteItem", "TransactWriteItems", "ExecuteStatement", "BatchExecuteStatement",
})


def _json_value(value: Any) -> Any:
    """``json.dumps`` default: binary attribute values (``B``, ``BS``) go out base64-encoded, as
    DynamoDB sends them; anything else is not plain JSON (TypeError: moto's serializer answers)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(type(value).__name__)


_moto_execute_result = DynamoResult.execute_result


def _item_response_as_json(self: DynamoResult, context: ActionContext) -> Any:
    """``DynamoResult.execute_result`` for :data:`JSON_ITEM_OPERATIONS`: (200, headers, the result
    as compact JSON); moto's own serializer for other operations, errors and non-JSON values."""
    result = self.result
    if context.operation_model.name not in JSON_ITEM_OPERATIONS or not isinstance(result, dict):
        return _moto_execute_result(self, context)
    try:
        body = json.dumps(result, default=_json_value, separators=(",", ":"))
    except (TypeError, ValueError):
        return _moto_execute_result(self, context)
    return 200, {"Content-Type": "application/x-amz-json-1.0"}, body


def serve_item_responses_as_json() -> None:
    """DynamoDB item operations answer with their result document as JSON (module docstring)."""
    DynamoResult.execute_result = _item_response_as_json  # type: ignore[method-assign,assignment]


def apply() -> None:
    """Patch ``DynamoDBBackend`` in this process (idempotent; affects existing backends too), stop
    moto's instance tracking (:func:`stop_instance_tracking`) and answer item operations as JSON
    (:func:`serve_item_responses_as_json`)."""
    with DYNAMODB_LOCK:
        if getattr(DynamoDBBackend, _PATCHED_ATTR, False):
            return
        stop_instance_tracking()
        serve_item_responses_as_json()
        for name in _LOCKED_METHODS:
            setattr(DynamoDBBackend, name, _locked(getattr(DynamoDBBackend, name)))
        DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
        setattr(DynamoDBBackend, _PATCHED_ATTR, True)


#: ``main`` exits with this code when ``MOTO_DATA_DIR`` cannot be used (in use by another server,
#: or a log it cannot read); the reason is the last line on stderr.
EXIT_DATA_DIR_UNUSABLE = 3
#: With this variable set to ``1``, ``main`` exits as soon as its standard input reaches end of file:
#: the parent holds the write end of a pipe, and the operating system closes it when the parent
#: ends, however it ends (``kill -9`` included), so the server never outlives its parent.
EXIT_WITH_STDIN_ENV = "MOTO_EXIT_WITH_STDIN"


def _exit_when_stdin_closes() -> None:
    """Block until standard input is closed, then end the process under :data:`DYNAMODB_LOCK`, so
    no write is half-applied or half-logged (what it acknowledged is already in the log)."""
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except (OSError, ValueError):
        pass
    with DYNAMODB_LOCK:
        os._exit(0)


def main(argv: list[str] | None = None) -> int:
    """moto's server (same arguments as ``python -m moto.server``) with the patch applied.

    With ``MOTO_DATA_DIR`` set, DynamoDB is restored from and logged to that directory
    (:mod:`infra.local.moto_persistence`) before the server listens; when the directory cannot be
    used the process prints why on stderr and returns :data:`EXIT_DATA_DIR_UNUSABLE`. With
    :data:`EXIT_WITH_STDIN_ENV` set it ends when its standard input closes. werkzeug's per-request
    access log is off (warnings and errors still go to stderr).
    """
    import logging

    apply()
    data_dir = os.environ.get("MOTO_DATA_DIR")
    if data_dir:
        from pathlib import Path

        from infra.local import moto_persistence

        try:
            moto_persistence.enable(Path(data_dir))
        except (moto_persistence.DataDirInUse, ValueError) as exc:
            print(str(exc).replace("\n", " "), file=sys.stderr, flush=True)
            return EXIT_DATA_DIR_UNUSABLE
    if os.environ.get(EXIT_WITH_STDIN_ENV) == "1":
        threading.Thread(target=_exit_when_stdin_closes, name="exit-with-parent", daemon=True).start()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from moto.server import main as moto_main

    moto_main(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
