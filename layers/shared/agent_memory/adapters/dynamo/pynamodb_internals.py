"""Every use of PynamoDB's private API, in one module (PynamoDB is pinned in ``requirements.txt``).

PynamoDB offers no public way to reach a model's low-level connection (a transaction and a batch
read across tables need the one connection the models share) or to drop the connection a model
cached (the tables are re-bound at cold start and by the tests). What this module relies on, as
PynamoDB 6.1.0 does it:

- ``Model._get_connection()`` returns the model's cached ``TableConnection``, built on first use
  from ``Model.Meta`` (table name, region, and the endpoint botocore reads from the environment);
- ``TableConnection.connection`` is the low-level ``pynamodb.connection.Connection`` it calls
  through (its ``dispatch(operation, kwargs)`` sends any DynamoDB operation; ``client`` creates
  the botocore client on first use);
- ``Model._connection`` is that cache: set to None, the next call builds a new connection from
  the model's ``Meta`` as it is then.

``tests/unit/test_pynamodb_internals.py`` checks each of these on the installed PynamoDB and
fails, naming what to re-check here, when the installed version is not :data:`CHECKED_VERSION`.
"""

from __future__ import annotations

from pynamodb.connection import Connection
from pynamodb.models import Model

#: The PynamoDB version whose internals this module was checked against.
CHECKED_VERSION = "6.1.0"


def model_connection(model: type[Model]) -> Connection:
    """The low-level connection ``model`` calls DynamoDB through (created on first use; every model
    bound to the same region and endpoint may use it for any table)."""
    return model._get_connection().connection


def forget_connection(model: type[Model]) -> None:
    """Drop ``model``'s cached connection: the next call connects with its ``Meta`` as it is then
    (table name, region, and the endpoint of the environment)."""
    model._connection = None


def create_client(model: type[Model]) -> None:
    """Create ``model``'s botocore client now (it reads ``AWS_ENDPOINT_URL`` and the credentials of
    the environment as it is at this moment)."""
    model_connection(model).client  # noqa: B018 - the property creates the client


__all__ = ["CHECKED_VERSION", "create_client", "forget_connection", "model_connection"]
