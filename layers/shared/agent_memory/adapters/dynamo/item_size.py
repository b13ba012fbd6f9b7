"""The size of a DynamoDB item as DynamoDB counts it, and the check every item budget goes through
(so a write never meets DynamoDB's 400 KB item limit)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_memory.domain.errors import ItemTooLarge
from agent_memory.domain.text import utf8_len

if TYPE_CHECKING:
    from pynamodb.models import Model

#: DynamoDB's item size limit (400 KB = 409,600 bytes; AWS DynamoDB service quotas).
DYNAMODB_ITEM_LIMIT_BYTES = 409_600


def dynamodb_item_size(item: dict[str, Any]) -> int:
    """Size of a raw (wire-format) DynamoDB item in bytes, as DynamoDB counts it.

    Attribute names and string values count their UTF-8 bytes; numbers about
    ``len(digits) / 2 + 1``; binary its length; lists and maps add 3 bytes plus one byte
    per element; booleans and nulls 1 byte. The limit is 400 KB (AWS DynamoDB item size
    limit, 409,600 bytes).
    """
    return sum(utf8_len(name) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, inner), = value.items()
    if kind == "S":
        return utf8_len(inner)
    if kind == "N":
        return len(str(inner).lstrip("-").replace(".", "")) // 2 + 2
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(utf8_len(v) for v in inner)
    if kind == "NS":
        return sum(len(str(v)) // 2 + 2 for v in inner)
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(utf8_len(k) + 1 + _value_size(v) for k, v in inner.items())
    raise ValueError(f"unknown DynamoDB type {kind}")


def check_size(item: Model, budget: int, what: str) -> None:
    """Raise :class:`ItemTooLarge` when ``item`` serialised is over ``budget`` bytes."""
    size = dynamodb_item_size(item.serialize())
    if size > budget:
        raise ItemTooLarge(f"{what} item would be {size} bytes (budget {budget})")


__all__ = ["DYNAMODB_ITEM_LIMIT_BYTES", "check_size", "dynamodb_item_size"]
