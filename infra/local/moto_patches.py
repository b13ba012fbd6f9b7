"""The replacements of moto internals the local runtime needs beyond durability, each with its reason.

The moto server (:mod:`infra.local.moto_server`) answers one request at a time and uses moto as it
ships except for what ``tests/infra/test_vendor_patches.py`` registers (``PATCHES``: the attribute,
the module that replaces it, what needs it, the upstream issue it mirrors, what to re-check): the
test fails on an unregistered assignment to a moto or Powertools attribute in ``infra/local``, and
on a moto upgrade that changes a patched original. :mod:`infra.local.moto_persistence` wraps the
backend's write methods for its log (durability). This module's patches:

- bounded footprint: :func:`transact_write_items` is moto's step for step (the same validations,
  order, exceptions and cancellation reasons) but saves each item it writes and, on failure, puts
  back only those (moto deep-copies every table a transaction touches: a chat turn cost time and
  memory in proportion to the data). Upstream: none found; upstream-style, an undo log;
- performance (``make bench``): item operations read their request and write their answer as
  plain JSON (moto walks both through botocore's model since getmoto/moto#9773, about 0.1 ms per
  attribute value; the JSON protocol body IS the document: a test compares both paths call by
  call), an item is built with one size check instead of one per attribute (getmoto/moto#9670
  skips that O(n^2) check when moto copies an item, not when it builds one), and each distinct
  condition expression is parsed once (one patch of the parser, where moto's three modules call it).
"""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import Any

from moto.core.responses import ActionContext
from moto.dynamodb.comparisons import ConditionExpressionParser, get_filter_expression
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
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table
from moto.dynamodb.models.utilities import bytesize
from moto.dynamodb.responses import DynamoHandler, DynamoResult

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
            wants_old = current is not None and op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD"
            raise _ConditionFailed(current.to_json()["Attributes"] if wants_old and current else None)
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
            errors.append(("ConditionalCheckFailed", str(e.message), getattr(e, "old_item", None)))  # type: ignore[arg-type]  # moto's tuple type is narrower
        except Exception as e:  # noqa: BLE001 - moto reports any other failure as a cancellation reason
            errors.append((type(e).__name__, str(e), None))  # type: ignore[arg-type]  # moto's tuple type is narrower
    if any(code is not None for code, _, _ in errors):
        _restore(saved)
        raise TransactionCanceledException(errors)


#: moto's item size limit (``LimitedSizeDict``): DynamoDB's 400 KB, measured between 409 and 410 KB.
ITEM_SIZE_LIMIT_BYTES = 405_000


def _item_init_checked_once(self: Item, hash_key: DynamoType, range_key: DynamoType | None,
                            attrs: dict[str, Any]) -> None:
    """``Item.__init__`` that checks the item's size once, after all attributes are set (the size
    only grows as attributes are added, so this rejects exactly the items moto's per-insert check
    rejects); later single-attribute writes (``UpdateItem``) keep moto's per-insert check."""
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


#: DynamoDB operations whose request and response bodies are the documents themselves.
JSON_ITEM_OPERATIONS = frozenset({
    "GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "PutItem", "UpdateItem", "DeleteItem",
    "BatchWriteItem", "TransactWriteItems", "ExecuteStatement", "BatchExecuteStatement",
})
#: A binary attribute value (``B`` / ``BS``) in a request: moto's parser base64-decodes those, so
#: such a request is left to it (as is one with an attribute *named* ``B``: slower, not wrong).
_BINARY_VALUE = re.compile(rb'"BS?"\s*:')
_moto_execute_result, _moto_parse_parameters = DynamoResult.execute_result, DynamoHandler.parse_parameters
_moto_item_init, _moto_parse_condition = Item.__init__, ConditionExpressionParser.parse
#: (expression, names, values as JSON) -> (the tree, the names and the values it used); at most 1,024.
_PARSED: dict[tuple[str, str, str], tuple[Any, list[str], list[str]]] = {}


def _parse_condition_once(self: ConditionExpressionParser) -> Any:
    """``ConditionExpressionParser.parse`` that parses each distinct (expression, names, values) once:
    moto parses a transaction's conditions to validate and again to evaluate them, and the turn's
    conditions are the same few every time; the tree is only evaluated, never changed. Values that
    are not plain JSON (binary) are parsed as moto does; an invalid expression raises, uncached."""
    try:
        key = (str(self.condition_expression), json.dumps(self.expression_attribute_names, sort_keys=True),
               json.dumps(self.expression_attribute_values, sort_keys=True))
    except (TypeError, ValueError):
        key = ("None", "", "")
    if key[0] == "None":  # no expression, or values that are not plain JSON: as moto parses them
        return _moto_parse_condition(self)
    if key not in _PARSED:
        if len(_PARSED) >= 1024:
            _PARSED.clear()
        tree = _moto_parse_condition(self)
        _PARSED[key] = (tree, list(self.expr_attr_names_found), list(self.expr_attr_values_found))
    tree, names, values = _PARSED[key]
    self.expr_attr_names_found, self.expr_attr_values_found = list(names), list(values)
    return tree


def _json_value(value: Any) -> Any:
    """``json.dumps`` default: binary values go out base64-encoded, as DynamoDB sends them; anything
    else is not plain JSON (TypeError: moto's serializer answers)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(type(value).__name__)


def _item_response_as_json(self: DynamoResult, context: ActionContext) -> Any:
    """``execute_result`` of :data:`JSON_ITEM_OPERATIONS`: (200, headers, the result as compact
    JSON); moto's own serializer for other operations, errors and values that are not plain JSON."""
    result = self.result
    if context.operation_model.name not in JSON_ITEM_OPERATIONS or not isinstance(result, dict):
        return _moto_execute_result(self, context)
    try:
        body = json.dumps(result, default=_json_value, separators=(",", ":"))
    except (TypeError, ValueError):
        return _moto_execute_result(self, context)
    return 200, {"Content-Type": "application/x-amz-json-1.0"}, body


def _parse_item_request_as_json(self: DynamoHandler, request: Any) -> None:
    """``parse_parameters`` of :data:`JSON_ITEM_OPERATIONS`: the JSON body as it is (moto's parser
    turns blobs and timestamps into Python values and drops unknown keys and nulls: the item
    operations' inputs hold no timestamp, a client sends no unknown key or null, and a body with a
    binary value goes to moto's parser)."""
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


def apply() -> None:
    """Install the patches of this module (idempotent; existing backends too)."""
    global _applied
    if _applied:
        return
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]  # moto's method wrapped in place
    DynamoResult.execute_result = _item_response_as_json  # type: ignore[method-assign,assignment]  # moto's method wrapped in place
    DynamoHandler.parse_parameters = _parse_item_request_as_json  # type: ignore[method-assign,assignment]  # moto's method wrapped in place
    Item.__init__ = _item_init_checked_once  # type: ignore[method-assign]  # moto's method wrapped in place
    ConditionExpressionParser.parse = _parse_condition_once  # type: ignore[method-assign]  # moto's method wrapped in place
    _applied = True
