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

``apply()`` also reads those operations' requests as plain JSON (:func:`_parse_item_request_as_json`:
moto's request parser walks the body through the same botocore model; a body with a binary value
still goes through it), parses each distinct condition expression once (:class:`_CachedConditionParser`:
moto parses a transaction's conditions once to validate and once to evaluate them, on every request)
and builds an item with one size check instead of one per attribute (:func:`_item_init_checked_once`).
The same test runs a sequence of calls with and without these fast paths and compares the answers.

``python -m infra.local.moto_patches -H HOST -p PORT`` runs moto's server with the patch applied
(what ``LocalStack`` uses for ``moto_mode="process"``).
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

from moto.core.common_models import BaseModel
from moto.core.model_instances import model_data
from moto.core.responses import ActionContext
from moto.dynamodb import comparisons as dynamodb_comparisons
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb import responses as dynamodb_responses
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    ItemSizeTooLarge,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models import table as dynamodb_table
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table
from moto.dynamodb.models.utilities import bytesize
from moto.dynamodb.responses import DynamoHandler, DynamoResult

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
        errors: list[tuple[str | None, str | None, dict[str, Any] | None]] = []
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
                    condition_op = cached_filter_expression(
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
                errors.append(("ConditionalCheckFailed", str(e.message), original_item))
            except Exception as e:  # noqa: BLE001 - moto reports any other failure as a cancellation reason
                errors.append((type(e).__name__, str(e), original_item))

        if any(code is not None for code, _, _ in errors):
            _restore(saved)
            raise TransactionCanceledException(errors)


def _untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``BaseModel.__new__`` without appending the instance to ``cls.instances_tracked``."""
    return object.__new__(cls)


def stop_instance_tracking() -> None:
    """moto no longer keeps a reference to every model object it creates; the lists kept so far are emptied."""
    BaseModel.__new__ = staticmethod(_untracked_new)  # type: ignore[method-assign]  # moto's class patched in place
    for models in model_data.values():
        for model in models.values():
            model.instances_tracked = []  # type: ignore[attr-defined]  # moto sets it in BaseModel.__new__


_moto_item_init = Item.__init__
_moto_condition_parser = dynamodb_comparisons.create_condition_expression_parser
_moto_filter_expression = dynamodb_comparisons.get_filter_expression

#: Parsed condition expressions kept (:func:`_parsed_condition`).
CONDITION_CACHE_SIZE = 1024


@functools.lru_cache(maxsize=CONDITION_CACHE_SIZE)
def _parsed_condition(expr: str, names_json: str, values_json: str) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
    """moto's parse of one condition expression with its names and values (as JSON, the cache key):
    (the operation tree, the names and the values it used). An invalid expression raises, and is
    not cached."""
    parser = ConditionExpressionParser(expr, json.loads(names_json), json.loads(values_json))
    op = parser.parse()
    return op, tuple(parser.expr_attr_names_found), tuple(parser.expr_attr_values_found)


class _CachedConditionParser(ConditionExpressionParser):
    """``ConditionExpressionParser`` whose ``parse`` is looked up in :func:`_parsed_condition`.

    moto parses a transaction's conditions twice (once to validate the request, once to evaluate
    them; about 0.1 ms for ``attribute_not_exists(#0)``, 0.3 ms for a version check), and a chat
    turn's conditions are the same few expressions every time. The tree is only evaluated, never
    changed, so one parse per distinct (expression, names, values) serves every request; the
    ``*_found`` lists are fresh per parser (moto's callers extend them). Upstream-style, this would
    be a memo inside ``ConditionExpressionParser``. Values that are not plain JSON (binary) are
    parsed as moto does.
    """

    def parse(self) -> Any:
        expr = self.condition_expression
        if expr is None:
            return super().parse()
        try:
            key = (json.dumps(self.expression_attribute_names, sort_keys=True),
                   json.dumps(self.expression_attribute_values, sort_keys=True))
        except (TypeError, ValueError):
            return super().parse()
        op, names, values = _parsed_condition(expr, *key)
        self.expr_attr_names_found = list(names)
        self.expr_attr_values_found = list(values)
        return op


def _cached_condition_parser(
    expr: str | None, names: dict[str, str] | None, values: dict[str, Any] | None
) -> ConditionExpressionParser:
    """``create_condition_expression_parser`` returning a :class:`_CachedConditionParser`."""
    return _CachedConditionParser(expr, names, values)


def cached_filter_expression(expr: str | None, names: dict[str, str] | None, values: dict[str, Any] | None) -> Any:
    """``get_filter_expression`` through :class:`_CachedConditionParser`."""
    return _CachedConditionParser(expr, names, values).parse()


def cache_condition_parses() -> None:
    """moto's DynamoDB modules parse condition expressions through :class:`_CachedConditionParser`."""
    for module in (dynamodb_comparisons, dynamodb_models, dynamodb_responses):
        module.create_condition_expression_parser = _cached_condition_parser  # type: ignore[attr-defined]  # moto's, replaced
    for module in (dynamodb_comparisons, dynamodb_models, dynamodb_table):
        module.get_filter_expression = cached_filter_expression  # type: ignore[attr-defined]  # moto's, replaced


#: moto's item size limit (``LimitedSizeDict``): DynamoDB's 400 KB, measured between 409 and 410 KB.
ITEM_SIZE_LIMIT_BYTES = 405_000


def _item_init_checked_once(
    self: Item, hash_key: DynamoType, range_key: DynamoType | None, attrs: dict[str, Any]
) -> None:
    """``Item.__init__`` that checks the item's size once, after all attributes are set.

    moto's ``LimitedSizeDict.__setitem__`` re-sums the size of every attribute already set on each
    insert, so building an item of n attributes costs O(n²) size computations (the chat turn's
    transaction builds a dozen items). The size only grows as attributes are added, so checking the
    total once raises ``ItemSizeTooLarge`` for exactly the items moto's per-insert check rejects.
    Upstream-style, this would be a bulk constructor of ``LimitedSizeDict``; later single-attribute
    writes (``UpdateItem``) keep moto's per-insert check.
    """
    self.hash_key = hash_key
    self.range_key = range_key
    checked = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.__init__(checked)
    total = 0
    for key, value in attrs.items():
        typed = DynamoType(value)
        total += bytesize(key) + typed.size()
        dict.__setitem__(checked, key, typed)
    if total > ITEM_SIZE_LIMIT_BYTES:
        raise ItemSizeTooLarge
    self.attrs = checked


def check_item_size_once() -> None:
    """Build moto's DynamoDB items with one size check each (:func:`_item_init_checked_once`)."""
    Item.__init__ = _item_init_checked_once  # type: ignore[method-assign]  # moto's method patched in place


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


#: A binary attribute value (``B`` / ``BS``) in a request body: moto's parser base64-decodes them,
#: so such a request is left to it (as is one with an attribute *named* ``B``: slower, not wrong).
_BINARY_VALUE = re.compile(rb'"BS?"\s*:')

_moto_parse_parameters = DynamoHandler.parse_parameters


def _parse_item_request_as_json(self: DynamoHandler, request: Any) -> None:
    """``DynamoHandler.parse_parameters`` for :data:`JSON_ITEM_OPERATIONS`: the request's JSON body
    as it is. moto's parser walks the body through the botocore input shapes to turn blobs and
    timestamps into Python values and to drop unknown keys and nulls; the item operations' inputs
    hold no timestamp, a client sends no unknown key or null, and a body with a binary value goes
    to moto's parser, so the result is the same document (a test compares both, call by call)."""
    body = request.data
    if body and self._get_action() in JSON_ITEM_OPERATIONS and not _BINARY_VALUE.search(body):
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            self.params = parsed
            return
    _moto_parse_parameters(self, request)


def serve_item_responses_as_json() -> None:
    """DynamoDB item operations read their request and answer with their result document as JSON
    (module docstring)."""
    DynamoResult.execute_result = _item_response_as_json  # type: ignore[method-assign,assignment]  # moto's, replaced
    DynamoHandler.parse_parameters = _parse_item_request_as_json  # type: ignore[method-assign,assignment]  # replaced


def apply() -> None:
    """Patch ``DynamoDBBackend`` in this process (idempotent; affects existing backends too), stop
    moto's instance tracking (:func:`stop_instance_tracking`) and answer item operations as JSON
    (:func:`serve_item_responses_as_json`)."""
    with DYNAMODB_LOCK:
        if getattr(DynamoDBBackend, _PATCHED_ATTR, False):
            return
        stop_instance_tracking()
        serve_item_responses_as_json()
        check_item_size_once()
        cache_condition_parses()
        for name in _LOCKED_METHODS:
            setattr(DynamoDBBackend, name, _locked(getattr(DynamoDBBackend, name)))
        DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]  # patched in place
        setattr(DynamoDBBackend, _PATCHED_ATTR, True)


#: ``main`` exits with this code when ``MOTO_DATA_DIR`` cannot be used (in use by another server,
#: or a log it cannot read); the reason is the last line on stderr.
EXIT_DATA_DIR_UNUSABLE = 3
#: With this variable set to ``1``, ``main`` exits as soon as its standard input reaches end of file:
#: the parent holds the write end of a pipe, and the operating system closes it when the parent
#: ends, however it ends (``kill -9`` included), so the server never outlives its parent.
EXIT_WITH_STDIN_ENV = "MOTO_EXIT_WITH_STDIN"


#: Set once the data is restored and the server is about to take requests.
_serving = threading.Event()


def _exit_when_stdin_closes() -> None:
    """Block until standard input is closed, then end the process: at once while the data is still
    being restored (the restore's compaction replaces the log atomically, so nothing is lost), else
    under :data:`DYNAMODB_LOCK`, so no write is half-applied or half-logged (what it acknowledged
    is already in the log)."""
    # os.read on the descriptor, not sys.stdin.buffer: a daemon thread blocked in a buffered read
    # holds the BufferedReader's lock, and an interpreter shutdown (say, main returning
    # EXIT_DATA_DIR_UNUSABLE) that then flushes stdin aborts with "Fatal Python error:
    # _enter_buffered_busy" (SIGABRT, exit -6) instead of the exit code and reason.
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    if not _serving.is_set():
        os._exit(0)
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

    if os.environ.get(EXIT_WITH_STDIN_ENV) == "1":  # from the start: a parent killed while this restores
        threading.Thread(target=_exit_when_stdin_closes, name="exit-with-parent", daemon=True).start()
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
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    _serving.set()
    from moto.server import main as moto_main

    moto_main(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
