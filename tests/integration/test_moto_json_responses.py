"""moto's item operations answered as plain JSON (``infra.local.moto_patches``) parse to exactly what
moto's own serializer gives.

The same sequence of DynamoDB calls (every attribute type, Chinese text, binary values, missing
items, pagination, return values, a cancelled transaction, a failed condition) runs twice, each
time on fresh moto backends: once with moto's serializer, once with the JSON fast path. The
responses botocore parsed must be equal call by call (apart from request ids).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.responses import DynamoResult

from infra.local import moto_patches

TABLE = "items"

ITEM = {
    "pk": {"S": "p1"}, "sk": {"S": "SESSION"},
    "text": {"S": "患者 P001 第三次访视 — CRF 缺血常规"},
    "count": {"N": "42"}, "ratio": {"N": "-0.125"},
    "blob": {"B": b"\x00\x01\xffbinary"},
    "tags": {"SS": ["CRC", "PI"]}, "weeks": {"NS": ["1", "52"]}, "blobs": {"BS": [b"a", b"\x00b"]},
    "window": {"L": [{"M": {"role": {"S": "user"}, "n": {"N": "1"}}}, {"NULL": True}, {"BOOL": False}]},
    "facts": {"M": {"咳嗽": {"M": {"status": {"S": "present"}}}, "flag": {"BOOL": True}}},
}


def _calls(client: Any) -> list[tuple[str, Callable[[], Any]]]:
    """The calls whose parsed responses are compared (each runs once, in this order)."""
    def put_many() -> Any:
        return client.batch_write_item(RequestItems={TABLE: [
            {"PutRequest": {"Item": {"pk": {"S": "p1"}, "sk": {"S": f"MSG#{n:03d}"}, "n": {"N": str(n)},
                                     "gsi": {"S": "g"}}}}
            for n in range(12)
        ]})

    return [
        ("put", lambda: client.put_item(TableName=TABLE, Item=ITEM, ReturnConsumedCapacity="TOTAL")),
        ("put_many", put_many),
        ("get", lambda: client.get_item(TableName=TABLE, Key={"pk": {"S": "p1"}, "sk": {"S": "SESSION"}},
                                        ConsistentRead=True, ReturnConsumedCapacity="TOTAL")),
        ("get_missing", lambda: client.get_item(TableName=TABLE, Key={"pk": {"S": "p1"}, "sk": {"S": "NONE"}})),
        ("get_projection", lambda: client.get_item(
            TableName=TABLE, Key={"pk": {"S": "p1"}, "sk": {"S": "SESSION"}},
            ProjectionExpression="#t, facts.#c", ExpressionAttributeNames={"#t": "text", "#c": "咳嗽"})),
        ("batch_get", lambda: client.batch_get_item(RequestItems={TABLE: {"Keys": [
            {"pk": {"S": "p1"}, "sk": {"S": "SESSION"}}, {"pk": {"S": "p1"}, "sk": {"S": "MSG#003"}},
            {"pk": {"S": "p1"}, "sk": {"S": "NONE"}}], "ConsistentRead": True}}, ReturnConsumedCapacity="TOTAL")),
        ("query_page", lambda: client.query(
            TableName=TABLE, KeyConditionExpression="pk = :p AND begins_with(sk, :m)",
            ExpressionAttributeValues={":p": {"S": "p1"}, ":m": {"S": "MSG#"}}, ScanIndexForward=False, Limit=5)),
        ("query_index", lambda: client.query(
            TableName=TABLE, IndexName="ByGsi", KeyConditionExpression="gsi = :g",
            ExpressionAttributeValues={":g": {"S": "g"}}, Select="COUNT")),
        ("scan_filter", lambda: client.scan(
            TableName=TABLE, FilterExpression="n > :five", ExpressionAttributeValues={":five": {"N": "5"}})),
        ("update_all_new", lambda: client.update_item(
            TableName=TABLE, Key={"pk": {"S": "p1"}, "sk": {"S": "SESSION"}},
            UpdateExpression="SET #c = #c + :one, note = :note", ExpressionAttributeNames={"#c": "count"},
            ExpressionAttributeValues={":one": {"N": "1"}, ":note": {"S": "已复核"}}, ReturnValues="ALL_NEW")),
        ("update_failed_condition", lambda: client.update_item(
            TableName=TABLE, Key={"pk": {"S": "p1"}, "sk": {"S": "SESSION"}},
            UpdateExpression="SET note = :n", ConditionExpression="attribute_not_exists(pk)",
            ExpressionAttributeValues={":n": {"S": "x"}}, ReturnValuesOnConditionCheckFailure="ALL_OLD")),
        ("transact_get", lambda: client.transact_get_items(TransactItems=[
            {"Get": {"TableName": TABLE, "Key": {"pk": {"S": "p1"}, "sk": {"S": "SESSION"}}}},
            {"Get": {"TableName": TABLE, "Key": {"pk": {"S": "p1"}, "sk": {"S": "NONE"}}}}])),
        ("transact_write", lambda: client.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "p1"}, "sk": {"S": "MSG#100"}},
                     "ConditionExpression": "attribute_not_exists(sk)"}},
            {"Update": {"TableName": TABLE, "Key": {"pk": {"S": "p1"}, "sk": {"S": "SESSION"}},
                        "UpdateExpression": "ADD #c :one", "ExpressionAttributeNames": {"#c": "count"},
                        "ExpressionAttributeValues": {":one": {"N": "1"}}}}], ReturnConsumedCapacity="TOTAL")),
        ("transact_cancelled", lambda: client.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "p1"}, "sk": {"S": "MSG#100"}},
                     "ConditionExpression": "attribute_not_exists(sk)"}}])),
        ("delete_all_old", lambda: client.delete_item(
            TableName=TABLE, Key={"pk": {"S": "p1"}, "sk": {"S": "SESSION"}}, ReturnValues="ALL_OLD")),
        ("execute_statement", lambda: client.execute_statement(
            Statement=f'SELECT * FROM "{TABLE}" WHERE pk = ?', Parameters=[{"S": "p1"}], Limit=3)),
    ]


def _run(execute_result: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    monkeypatch.setattr(DynamoResult, "execute_result", execute_result)
    out: list[tuple[str, Any]] = []
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        client.create_table(
            TableName=TABLE, BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "gsi")],
            GlobalSecondaryIndexes=[{"IndexName": "ByGsi", "KeySchema": [{"AttributeName": "gsi", "KeyType": "HASH"}],
                                     "Projection": {"ProjectionType": "ALL"}}],
        )
        for name, call in _calls(client):
            try:
                response = call()
                response.pop("ResponseMetadata", None)
                out.append((name, response))
            except ClientError as exc:
                error = dict(exc.response)
                error.pop("ResponseMetadata", None)
                out.append((name, ("error", error)))
    return out


def test_item_operations_parse_the_same_with_the_json_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    with_moto = _run(moto_patches._moto_execute_result, monkeypatch)
    with_json = _run(moto_patches._item_response_as_json, monkeypatch)

    assert [name for name, _ in with_json] == [name for name, _ in with_moto]
    for (name, expected), (_, actual) in zip(with_moto, with_json, strict=True):
        assert actual == expected, name
    responses = dict(with_json)
    # the sequence exercised what it claims: binary and Chinese values, a page, errors
    assert responses["get"]["Item"]["blob"] == {"B": b"\x00\x01\xffbinary"}
    assert responses["get"]["Item"]["text"]["S"].startswith("患者 P001")
    assert responses["query_page"]["Count"] == 5 and "LastEvaluatedKey" in responses["query_page"]
    assert responses["update_failed_condition"][0] == "error"
    assert responses["transact_cancelled"][1]["Error"]["Code"] == "TransactionCanceledException"
    assert "Item" not in responses["get_missing"]


def test_apply_installs_the_json_fast_path() -> None:
    moto_patches.apply()

    assert DynamoResult.execute_result is moto_patches._item_response_as_json
