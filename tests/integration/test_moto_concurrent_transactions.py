"""Concurrent TransactWriteItems on moto as the local stack runs it keep every acknowledged write and
nothing of a failed one.

Unpatched moto (5.2.x) snapshots each touched table with ``copy.deepcopy`` and, when a condition
fails, restores the whole snapshot: under concurrent requests, writes committed in between vanish
although they returned 200. The local stack's moto server (``infra.local.moto_server``) handles one
request at a time, and ``infra.local.moto_patches`` rolls back only the items a failed transaction
touched (no copy of the tables).

The scenario mirrors the local stack's hot spot: many writers on ONE session's key range, each
transaction bumping the session's counter item and adding a message item, some transactions
cancelled by a failing condition check.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from infra.local.moto_server import MotoServer

TABLE = "concurrency"
SESSION = "SESSION#s1"
THREADS = 8
TRANSACTIONS_PER_THREAD = 3
BACKGROUND_ITEMS = 1500  # other sessions' items: unpatched moto deep-copies them on every transaction


def _create_table(client: Any) -> None:
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    resource_table = boto3.resource("dynamodb", region_name="us-east-1", endpoint_url=client.meta.endpoint_url,
                                    aws_access_key_id="x", aws_secret_access_key="x").Table(TABLE)
    with resource_table.batch_writer() as batch:
        for n in range(BACKGROUND_ITEMS):
            batch.put_item(Item={"pk": f"SESSION#other{n % 50}", "sk": f"MSG#{n:05d}", "body": "x" * 200})
    client.put_item(TableName=TABLE, Item={"pk": {"S": SESSION}, "sk": {"S": "META"}, "count": {"N": "0"}})


def _transaction(client: Any, thread: int, n: int, fail: bool) -> list[dict[str, Any]]:
    """Bump the counter, add one message; a failing one also checks a condition that is false."""
    message_sk = f"{'FAIL' if fail else 'MSG'}#{thread:02d}#{n}"
    items: list[dict[str, Any]] = [
        {"Update": {"TableName": TABLE, "Key": {"pk": {"S": SESSION}, "sk": {"S": "META"}},
                    "UpdateExpression": "ADD #c :one", "ExpressionAttributeNames": {"#c": "count"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}}}},
        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": SESSION}, "sk": {"S": message_sk}},
                 "ConditionExpression": "attribute_not_exists(sk)"}},
    ]
    if fail:  # the counter item exists, so this check fails and the whole transaction is cancelled
        items.append({"ConditionCheck": {"TableName": TABLE, "Key": {"pk": {"S": SESSION}, "sk": {"S": "LOCK"}},
                                         "ConditionExpression": "attribute_exists(sk)"}})
    return items


def run_contending_transactions(client: Any) -> tuple[set[str], set[str], list[str]]:
    """THREADS x TRANSACTIONS_PER_THREAD transactions at once; (acknowledged, cancelled, unexpected)."""
    acknowledged: set[str] = set()
    cancelled: set[str] = set()
    unexpected: list[str] = []
    guard = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(thread: int) -> None:
        start.wait()
        for n in range(TRANSACTIONS_PER_THREAD):
            fail = (thread + n) % 3 == 0
            label = f"{'FAIL' if fail else 'MSG'}#{thread:02d}#{n}"
            try:
                client.transact_write_items(TransactItems=_transaction(client, thread, n, fail))
            except ClientError as exc:
                error = exc.response["Error"]
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                with guard:
                    if fail and error["Code"] == "TransactionCanceledException" and reasons[-1:] == [
                        "ConditionalCheckFailed"
                    ]:
                        cancelled.add(label)
                    else:
                        unexpected.append(f"{label}: {error['Code']} {reasons}")
                continue
            with guard:
                if fail:
                    unexpected.append(f"{label}: a transaction with a false condition check succeeded")
                else:
                    acknowledged.add(label)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    return acknowledged, cancelled, unexpected


def session_state(client: Any) -> tuple[int, list[str]]:
    """(the counter, the message sort keys) of the session."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": TABLE, "KeyConditionExpression": "pk = :pk",
                              "ExpressionAttributeValues": {":pk": {"S": SESSION}}, "ConsistentRead": True}
    while True:
        page = client.query(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    count = next(int(i["count"]["N"]) for i in items if i["sk"]["S"] == "META")
    return count, sorted(i["sk"]["S"] for i in items if i["sk"]["S"] != "META")


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    server = MotoServer("127.0.0.1", 0)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def dynamodb(moto_server: str) -> Iterator[Any]:
    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=moto_server,
                          aws_access_key_id="x", aws_secret_access_key="x")
    _create_table(client)
    yield client
    client.delete_table(TableName=TABLE)


def test_concurrent_transactions_keep_every_acknowledged_write_and_nothing_of_a_cancelled_one(dynamodb: Any) -> None:
    acknowledged, cancelled, unexpected = run_contending_transactions(dynamodb)

    assert unexpected == []
    total = THREADS * TRANSACTIONS_PER_THREAD
    assert len(acknowledged) + len(cancelled) == total and cancelled and acknowledged
    count, messages = session_state(dynamodb)
    assert messages == sorted(acknowledged)  # each acknowledged message once; no FAIL# item survives
    assert count == len(acknowledged)  # each acknowledged counter bump once; no cancelled one


def test_cancelled_transaction_reports_moto_cancellation_reasons_and_keeps_the_table(dynamodb: Any) -> None:
    before = session_state(dynamodb)
    with pytest.raises(ClientError) as caught:
        dynamodb.transact_write_items(TransactItems=_transaction(dynamodb, 99, 0, fail=True))
    assert caught.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in caught.value.response["CancellationReasons"]] == [
        "None", "None", "ConditionalCheckFailed"
    ]
    assert session_state(dynamodb) == before
