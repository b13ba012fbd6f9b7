"""The local stack's moto keeps a bounded footprint: it keeps no reference to the item versions it
created (``infra.local.moto_server`` empties moto's instance lists after each request), and a
transaction copies no table (``infra.local.moto_patches``: moto deep-copies every table a
transaction touches, so each chat turn would cost time and memory in proportion to the data)."""

from __future__ import annotations

import boto3
import pytest
import requests
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models.table import Table

from infra.local import moto_patches
from infra.local.moto_server import MotoServer

KEY_SCHEMA = {"KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
              "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST"}


def test_items_written_and_overwritten_are_not_kept_alive_by_moto() -> None:
    # Given moto as the local stack runs it
    server = MotoServer("127.0.0.1", 0)
    server.start()
    try:
        client = boto3.client("dynamodb", endpoint_url=server.url, region_name="eu-west-1",
                              aws_access_key_id="x", aws_secret_access_key="x")
        client.create_table(TableName="t", **KEY_SCHEMA)
        # When one item is written 200 times (each write creates new Item objects in moto)
        for i in range(200):
            client.put_item(TableName="t", Item={"pk": {"S": "a"}, "n": {"N": str(i)}})
        # Then moto's instance registry (what its dashboard lists) holds none of them
        tracked = requests.get(f"{server.url}/moto-api/data.json", timeout=30).json()
        assert tracked["dynamodb"]["Item"] == []
        assert client.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"]["n"] == {"N": "199"}
    finally:
        server.stop()


def test_a_transaction_copies_no_table_and_a_cancelled_one_restores_only_its_items(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    moto_patches.apply()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        client.create_table(TableName="t", **KEY_SCHEMA)
        client.put_item(TableName="t", Item={"pk": {"S": "kept"}, "v": {"N": "1"}})

        def no_copy(self: Table, memo: object) -> Table:
            raise AssertionError("a transaction deep-copied a table")

        monkeypatch.setattr(Table, "__deepcopy__", no_copy, raising=False)
        # A transaction that succeeds, then one cancelled after its first write was applied
        client.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": {"pk": {"S": "new"}}}}])
        with pytest.raises(ClientError) as cancelled:
            client.transact_write_items(TransactItems=[
                {"Update": {"TableName": "t", "Key": {"pk": {"S": "kept"}}, "UpdateExpression": "SET v = :two",
                            "ExpressionAttributeValues": {":two": {"N": "2"}}}},
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "new"}},
                         "ConditionExpression": "attribute_not_exists(pk)"}},
            ])
        reasons = [r["Code"] for r in cancelled.value.response["CancellationReasons"]]
        assert reasons == ["None", "ConditionalCheckFailed"]
        # the first write of the cancelled one is undone; the earlier transaction's item stays
        items = {i["pk"]["S"]: i for i in client.scan(TableName="t")["Items"]}
        assert set(items) == {"kept", "new"} and items["kept"]["v"] == {"N": "1"}
