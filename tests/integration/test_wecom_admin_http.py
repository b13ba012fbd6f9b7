"""A project's WeCom channel over HTTP through the local stack: an admin sets it (the credentials
stored write-only in the project's own secret, never answered), a bad value is 422 naming the rule
without echoing it and writes nothing, members get WeCom user ids (one member each, case ignored),
WeCom's URL verification answers with the project's channel, and a DELETE stops the callbacks.
Every test works in a project of its own."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import requests
import xmltodict

from agent_memory.adapters.wecom.crypto import WeComCallbackCrypto
from agent_memory.domain.models import Project
from infra.local.stack import LocalStack
from tests.support.auth import bearer

CHANNEL: dict[str, Any] = {"corp_id": "ww1234567890abcdef", "agent_id": 1000002, "token": "Tk7pQ2mZ9x",
           "encoding_aes_key": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456",
           "secret": "S3cr3t-app_secret-0123456789abcdefghijklmno",
           "robot_webhook_key": "693a91f6-7a1c-4bc4-97a0-0ec2a1fa5aaa"}
SECRET_VALUES: list[str] = [CHANNEL[k] for k in ("token", "encoding_aes_key", "secret", "robot_webhook_key")]


def _project(stack: LocalStack) -> str:
    pid = f"wc-{uuid.uuid4().hex[:8]}"
    stack.repo.projects.put_project(Project(project_id=pid, name=pid, created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    return pid


def _verify(stack: LocalStack, pid: str, token: str = "Tk7pQ2mZ9x") -> requests.Response:
    """WeCom's URL verification GET for ``pid``'s callback, sealed with ``token`` and the channel's key."""
    crypto = WeComCallbackCrypto(corp_id=CHANNEL["corp_id"], agent_id=1000002, token=token,
                                 encoding_aes_key=CHANNEL["encoding_aes_key"])
    now = str(int(time.time()))
    signature, body = crypto.seal_callback("4871538361548493", timestamp=now, nonce="5514")
    echostr = xmltodict.parse(body)["xml"]["Encrypt"]  # WeCom's echostr is such a ciphertext
    return requests.get(f"{stack.base_url}/v1/wecom/{pid}/callback", timeout=30, params={
        "msg_signature": signature, "timestamp": now, "nonce": "5514", "echostr": echostr})


def test_an_admin_sets_the_channel_write_only_and_removes_it(local_stack: LocalStack) -> None:
    pid = _project(local_stack)
    admin, member = bearer(f"{pid}:admin", "pi-1"), bearer(f"{pid}:member", "crc-1")
    url = f"{local_stack.base_url}/v1/projects/{pid}/channels/wecom"
    # Given: no channel yet; a member may not set one
    assert requests.get(url, headers=admin, timeout=30).status_code == 404
    assert requests.put(url, json=CHANNEL, headers=member, timeout=30).status_code == 403
    # When: the admin sets it
    put = requests.put(url, json=CHANNEL, headers=admin, timeout=30)
    # Then: the answer and GET say what is set, never a value; the secret holds them
    assert put.status_code == 200, put.text
    shown = requests.get(url, headers=admin, timeout=30)
    assert shown.json() == put.json() and not [v for v in SECRET_VALUES if v in put.text + shown.text]
    assert put.json()["secrets_set"] == ["token", "encoding_aes_key", "secret", "robot_webhook_key"]
    assert put.json()["callback_path"] == f"/v1/wecom/{pid}/callback"
    name = f"{local_stack.env['CHANNEL_SECRET_PREFIX']}{pid}/wecom"
    stored = local_stack.aws_client("secretsmanager").get_secret_value(SecretId=name)["SecretString"]
    assert json.loads(stored)["secret"] == CHANNEL["secret"]
    # and WeCom's URL verification of this project's callback answers the decrypted echostr
    verified = _verify(local_stack, pid)
    assert (verified.status_code, verified.text) == (200, "4871538361548493")
    assert _verify(local_stack, pid, token="AnotherToken1").status_code == 401
    # When: the admin removes it
    assert requests.delete(url, headers=admin, timeout=30).status_code == 204
    # Then: gone (the callback function's cached credentials lapse within the secret reader's cache
    # window; a message it queues meanwhile is dropped by the consumer: tests/unit/test_wecom_inbound.py)
    assert requests.get(url, headers=admin, timeout=30).status_code == 404
    assert requests.delete(url, headers=admin, timeout=30).status_code == 404
    assert "DeletedDate" in local_stack.aws_client("secretsmanager").describe_secret(SecretId=name)


def test_a_project_without_channel_refuses_the_callback_as_a_bad_signature(local_stack: LocalStack) -> None:
    refused = _verify(local_stack, _project(local_stack))
    assert refused.status_code == 401 and "4871538361548493" not in refused.text


def test_a_bad_credential_is_422_without_its_value_and_nothing_is_written(local_stack: LocalStack) -> None:
    pid = _project(local_stack)
    url = f"{local_stack.base_url}/v1/projects/{pid}/channels/wecom"
    bad_key = "short-" + CHANNEL["encoding_aes_key"][:20]
    refused = requests.put(url, json={**CHANNEL, "encoding_aes_key": bad_key}, headers=bearer(f"{pid}:admin", "pi-1"),
                           timeout=30)
    assert refused.status_code == 422 and "EncodingAESKey is exactly 43 letters and digits" in refused.text
    assert bad_key not in refused.text and not [v for v in SECRET_VALUES if v in refused.text]
    assert requests.get(url, headers=bearer(f"{pid}:admin", "pi-1"), timeout=30).status_code == 404
    name = f"{local_stack.env['CHANNEL_SECRET_PREFIX']}{pid}/wecom"
    listed = local_stack.aws_client("secretsmanager").list_secrets(Filters=[{"Key": "name", "Values": [name]}])
    assert listed["SecretList"] == []


def test_a_wecom_user_id_belongs_to_one_member_ignoring_case(local_stack: LocalStack) -> None:
    pid = _project(local_stack)
    admin = bearer(f"{pid}:admin", "pi-1")
    members = f"{local_stack.base_url}/v1/projects/{pid}/members"
    body = {"project_role": "member", "study_role": "CRC", "display_name": "李协调员", "wecom_userid": "CRC.Li"}
    assert requests.put(f"{members}/crc-li", json=body, headers=admin, timeout=30).status_code == 201
    taken = requests.put(f"{members}/crc-wang", json={**body, "wecom_userid": "crc.li"}, headers=admin, timeout=30)
    assert taken.status_code == 409
    listed = requests.get(members, headers=admin, timeout=30).json()
    rows = listed["items"]
    assert {m["user_id"]: m.get("wecom_userid") for m in rows}.get("crc-li") == "CRC.Li"
    assert "crc-wang" not in {m["user_id"] for m in rows}
    # the id is freed when its member drops it, and another member may take it
    assert requests.put(f"{members}/crc-li", json={**body, "wecom_userid": None}, headers=admin,
                        timeout=30).status_code == 200
    assert requests.put(f"{members}/crc-wang", json={**body, "wecom_userid": "crc.li"}, headers=admin,
                        timeout=30).status_code == 201
