"""moto's fast paths in ``infra.local.moto_patches`` answer exactly what moto itself answers.

The fast paths: item operations' requests read and responses written as plain JSON (instead of
moto's botocore-model-driven parser and serializer), items built with one size check, and each
distinct condition expression parsed once. The same
sequence of DynamoDB calls (every attribute type, Chinese text, binary values, missing items,
pagination, return values, a cancelled transaction, failed and passed conditions, invalid
expressions, an unused name, items at and over the size limit) runs twice, each time on fresh moto
backends: once as moto does it, once with the fast paths. The responses botocore parsed must be
equal call by call (apart from request ids).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.responses import DynamoHandler, DynamoResult

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
        # the same condition with other values (a parse kept for one must not answer the other)
        *[(f"versioned_put_{n}", (lambda n=n, v=v: client.put_item(
            TableName=TABLE, Item={"pk": {"S": "p2"}, "sk": {"S": "SESSION"}, "version": {"N": str(n + 1)}},
            ConditionExpression="attribute_not_exists(#v) OR #v = :v",
            ExpressionAttributeNames={"#v": "version"}, ExpressionAttributeValues={":v": {"N": str(v)}})))
          for n, v in ((0, 0), (1, 1), (2, 1), (3, 2), (4, 7))],
        ("versioned_transaction", lambda: client.transact_write_items(TransactItems=[
            {"ConditionCheck": {"TableName": TABLE, "Key": {"pk": {"S": "p2"}, "sk": {"S": "NONE"}},
                                "ConditionExpression": "attribute_not_exists(sk)"}},
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "p2"}, "sk": {"S": "SESSION"}, "version": {"N": "5"}},
                     "ConditionExpression": "#v = :v", "ExpressionAttributeNames": {"#v": "version"},
                     "ExpressionAttributeValues": {":v": {"N": "4"}}}}])),
        ("query_filter_projection_twice", lambda: [client.query(
            TableName=TABLE, KeyConditionExpression="pk = :p", FilterExpression="#n > :five",
            ProjectionExpression="#n, sk", ExpressionAttributeNames={"#n": "n"},
            ExpressionAttributeValues={":p": {"S": "p1"}, ":five": {"N": "5"}}) for _ in range(2)]),
        ("unused_name", lambda: client.put_item(
            TableName=TABLE, Item={"pk": {"S": "p3"}, "sk": {"S": "x"}}, ConditionExpression="attribute_not_exists(sk)",
            ExpressionAttributeNames={"#unused": "x"})),
        ("invalid_condition", lambda: client.put_item(
            TableName=TABLE, Item={"pk": {"S": "p3"}, "sk": {"S": "x"}}, ConditionExpression="attribute_not_exists(")),
        ("binary_condition", lambda: client.put_item(
            TableName=TABLE, Item={"pk": {"S": "p3"}, "sk": {"S": "b"}, "blob": {"B": b"\x00"}},
            ConditionExpression="attribute_not_exists(sk) OR blob = :b",
            ExpressionAttributeValues={":b": {"B": b"\x00"}})),
        ("item_just_under_the_limit", lambda: client.put_item(
            TableName=TABLE, Item={"pk": {"S": "p4"}, "sk": {"S": "big"}, "text": {"S": "x" * 404_000}})),
        ("item_over_the_limit", lambda: client.put_item(
            TableName=TABLE, Item={"pk": {"S": "p4"}, "sk": {"S": "big2"}, "a": {"S": "x" * 300_000},
                                   "b": {"S": "中" * 40_000}})),
        ("transaction_with_an_item_over_the_limit", lambda: client.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE,
                     "Item": {"pk": {"S": "p4"}, "sk": {"S": "big3"}, "a": {"S": "x" * 406_000}}}}])),
    ]


def _set_fast_paths(on: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast paths of ``moto_patches`` on, or moto's own code in their places."""
    monkeypatch.setattr(DynamoResult, "execute_result",
                        moto_patches._item_response_as_json if on else moto_patches._moto_execute_result)
    monkeypatch.setattr(DynamoHandler, "parse_parameters",
                        moto_patches._parse_item_request_as_json if on else moto_patches._moto_parse_parameters)
    monkeypatch.setattr(Item, "__init__", moto_patches._item_init_checked_once if on else moto_patches._moto_item_init)
    monkeypatch.setattr(ConditionExpressionParser, "parse",
                        moto_patches._parse_condition_once if on else moto_patches._moto_parse_condition)
    moto_patches._PARSED.clear()


def _run(fast_paths: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    _set_fast_paths(fast_paths, monkeypatch)
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
                for one in response if isinstance(response, list) else [response]:
                    one.pop("ResponseMetadata", None)
                out.append((name, response))
            except ClientError as exc:
                error = dict(exc.response)
                error.pop("ResponseMetadata", None)
                out.append((name, ("error", error)))
            except ValueError as exc:  # moto raises some parse errors instead of answering them
                out.append((name, ("raised", type(exc).__name__, str(exc))))
    return out


def test_moto_answers_the_same_with_the_fast_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    with_moto = _run(False, monkeypatch)
    with_fast_paths = _run(True, monkeypatch)

    assert [name for name, _ in with_fast_paths] == [name for name, _ in with_moto]
    for (name, expected), (_, actual) in zip(with_moto, with_fast_paths, strict=True):
        assert actual == expected, name
    responses = dict(with_fast_paths)
    # the sequence exercised what it claims: binary and Chinese values, a page, errors
    assert responses["get"]["Item"]["blob"] == {"B": b"\x00\x01\xffbinary"}
    assert responses["get"]["Item"]["text"]["S"].startswith("患者 P001")
    assert responses["query_page"]["Count"] == 5 and "LastEvaluatedKey" in responses["query_page"]
    assert responses["update_failed_condition"][0] == "error"
    assert responses["transact_cancelled"][1]["Error"]["Code"] == "TransactionCanceledException"
    assert "Item" not in responses["get_missing"]
    # the same condition passed and failed with other values: 0 then 1 pass, 1 again fails (now 2)
    assert [responses[f"versioned_put_{n}"] == {} for n in range(5)] == [True, True, False, True, False]
    assert not isinstance(responses["versioned_transaction"], tuple)  # not an error
    assert responses["unused_name"][1]["Error"]["Code"] == "ValidationException"
    assert responses["invalid_condition"][0] in ("error", "raised")
    assert responses["item_just_under_the_limit"] == {}
    assert "Item size has exceeded" in responses["item_over_the_limit"][1]["Error"]["Message"]
    assert responses["transaction_with_an_item_over_the_limit"][0] == "error"
    # the parses were kept: the versioned condition once per distinct value it was given
    versioned = [key for key in moto_patches._PARSED if key[0] == "attribute_not_exists(#v) OR #v = :v"]
    assert len(versioned) == 4  # values 0, 1, 2, 7 (1 twice)


def test_apply_installs_the_json_fast_path() -> None:
    moto_patches.apply()

    assert DynamoResult.execute_result is moto_patches._item_response_as_json
    assert DynamoHandler.parse_parameters is moto_patches._parse_item_request_as_json
