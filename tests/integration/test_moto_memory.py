"""moto keeps no reference to the model objects it creates once the local runtime's patches are applied."""

from __future__ import annotations

import boto3
from moto import mock_aws
from moto.dynamodb.models.dynamo_type import Item

from infra.local import moto_patches


def test_items_written_and_overwritten_are_not_kept_alive_by_moto() -> None:
    # Given moto with the local runtime's patches
    moto_patches.apply()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        client.create_table(TableName="t", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                            BillingMode="PAY_PER_REQUEST")
        # When one item is written 200 times (each write creates new Item objects in moto)
        for i in range(200):
            client.put_item(TableName="t", Item={"pk": {"S": "a"}, "n": {"N": str(i)}})
        # Then moto's instance registry holds none of them (it used to hold every one ever created)
        assert Item.instances_tracked == []  # type: ignore[attr-defined]  # set by moto's BaseModel.__new__
        assert client.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"]["n"] == {"N": "199"}
