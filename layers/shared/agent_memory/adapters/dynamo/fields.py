"""Copies between the domain models and the stored items by name: a field of a domain model and an
attribute of an item with the same name hold the same value, so a mapper names only what differs
(keys, conversions, JSON bodies, a ``VersionAttribute`` left to PynamoDB).

The attributes are the item class's own (``Model.get_attributes()``: the declared PynamoDB
attributes), never its methods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from pynamodb.models import Model


def read_fields(item: Model, model: type[BaseModel], **values: Any) -> dict[str, Any]:
    """The fields of ``model`` that ``item``'s class declares as attributes, read from ``item``,
    then ``values`` (conversions and fields named otherwise; they win)."""
    attributes = type(item).get_attributes()
    return {**{name: getattr(item, name) for name in model.model_fields if name in attributes}, **values}


def item_fields(record: BaseModel, item_class: type[Model], *, exclude: Iterable[str] = (),
                **values: Any) -> dict[str, Any]:
    """The attributes of ``item_class`` that ``record``'s model has as fields (but ``exclude``),
    read from ``record``, then ``values`` (they win)."""
    attributes, left_out = item_class.get_attributes(), set(exclude)
    named = {name: getattr(record, name) for name in type(record).model_fields
             if name in attributes and name not in left_out}
    return {**named, **values}


__all__ = ["item_fields", "read_fields"]
