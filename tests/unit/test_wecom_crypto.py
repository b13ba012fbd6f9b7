"""WeCom's callback protocol as WeCom publishes it: URL verification, an encrypted message, and every
refusal (bad signature, stale or future timestamp, another corp id or application, a malformed
request) as its typed domain error and HTTP status.

The protocol is also written out here with hashlib and ``cryptography``'s AES
(:func:`_seal_independently`, :func:`_open_independently`), so the tests do not merely trust
wechatpy: msg_signature = SHA-1 over the sorted [token, timestamp, nonce, ciphertext]; AES-256-CBC
with key = Base64-decode(EncodingAESKey + "="), IV = key[:16], PKCS#7 padding to 32 bytes;
plaintext = 16 random bytes + 4-byte big-endian length + message + receiveid (the corp id).
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from agent_memory.adapters.wecom.crypto import MAX_BODY_BYTES, MAX_SKEW_S, WeComCallbackCrypto
from agent_memory.domain.errors import (
    PayloadTooLarge,
    WeComCallbackStale,
    WeComMalformedCallback,
    WeComReceiverMismatch,
    WeComSignatureInvalid,
)
from agent_memory.http.errors import register_error_handlers
from agent_memory.http.powertools import APIGatewayHttpResolver
from infra.local.events import build_http_api_event

# WeCom's published sample (its WXBizMsgCrypt samples): token, EncodingAESKey, corp id, a URL
# verification and a message, with the plaintexts WeCom documents for them.
SAMPLE_TOKEN = "QDG6eK"
SAMPLE_AES_KEY = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
SAMPLE_CORP_ID = "wx5823bf96d3bd56c7"
SAMPLE_VERIFY = ("5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3", "1409659589", "263014780",
                 "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ==")
SAMPLE_ECHO_PLAINTEXT = "1616140317555161061"
SAMPLE_MSG_SIGNATURE, SAMPLE_MSG_TIMESTAMP, SAMPLE_MSG_NONCE = (
    "477715d11cdb4164915debcba66cb864d751f3e6", "1409659813", "1372623149")
SAMPLE_ENCRYPT = (
    "RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYY"
    "vuJTs3TUUkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+"
    "LtwGc2hgf5gsijff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw"
    "8V2t9EL4EhzJWrQUax5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1p"
    "tDAVe0lXdQ2YoyyH2uyPIGHBZZIs2pDBS8R07+qN+E7Q=="
)
SAMPLE_BODY = (f"<xml><ToUserName><![CDATA[{SAMPLE_CORP_ID}]]></ToUserName><Encrypt><![CDATA[{SAMPLE_ENCRYPT}]]>"
               "</Encrypt><AgentID><![CDATA[218]]></AgentID></xml>")

# A project's own channel for the other tests (values made up for the test).
TOKEN = "Tk7pQ2mZ9x"
AES_KEY = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456"
CORP_ID = "ww1234567890abcdef"
AGENT_ID = 1000002
NOW = 1_767_225_600  # 2026-01-01T00:00:00Z


def _crypto(*, corp_id: str = CORP_ID, agent_id: int = AGENT_ID, now: float = NOW) -> WeComCallbackCrypto:
    return WeComCallbackCrypto(corp_id=corp_id, agent_id=agent_id, token=TOKEN, encoding_aes_key=AES_KEY,
                               clock=lambda: now)


def _signature(token: str, timestamp: str, nonce: str, ciphertext: str) -> str:
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, ciphertext])).encode()).hexdigest()


def _aes(key_text: str) -> Cipher[modes.CBC]:
    key = base64.b64decode(key_text + "=")
    return Cipher(algorithms.AES(key), modes.CBC(key[:16]))


def _seal_independently(message: str, *, receiveid: str = CORP_ID, key_text: str = AES_KEY) -> str:
    """WeCom's encryption, written from the protocol (no wechatpy)."""
    msg = message.encode("utf-8")
    plain = os.urandom(16) + struct.pack(">I", len(msg)) + msg + receiveid.encode()
    pad = 32 - len(plain) % 32
    encryptor = _aes(key_text).encryptor()
    return base64.b64encode(encryptor.update(plain + bytes([pad]) * pad) + encryptor.finalize()).decode()


def _open_independently(ciphertext: str, *, key_text: str = AES_KEY) -> tuple[bytes, str, str]:
    """(random prefix, message, receiveid) of a ciphertext, checking the PKCS#7 padding to 32."""
    decryptor = _aes(key_text).decryptor()
    plain = decryptor.update(base64.b64decode(ciphertext)) + decryptor.finalize()
    pad = plain[-1]
    assert 1 <= pad <= 32 and plain[-pad:] == bytes([pad]) * pad and len(plain) % 32 == 0
    body = plain[:-pad]
    (length,) = struct.unpack(">I", body[16:20])
    return body[:16], body[20:20 + length].decode("utf-8"), body[20 + length:].decode("utf-8")


def _text_xml(content: str, *, user: str = "crc.li", msg_id: str = "7311992846155431937",
              agent_id: int = AGENT_ID, corp_id: str = CORP_ID, created: int = NOW) -> str:
    return (f"<xml><ToUserName><![CDATA[{corp_id}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>"
            f"<CreateTime>{created}</CreateTime><MsgType><![CDATA[text]]></MsgType>"
            f"<Content><![CDATA[{content}]]></Content><MsgId>{msg_id}</MsgId><AgentID>{agent_id}</AgentID></xml>")


def _callback(message_xml: str, *, timestamp: str = str(NOW), nonce: str = "1372623149",
              receiveid: str = CORP_ID) -> tuple[str, str, str, str]:
    """(msg_signature, timestamp, nonce, body) of a POST as WeCom sends it, built independently."""
    encrypt = _seal_independently(message_xml, receiveid=receiveid)
    body = f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><AgentID><![CDATA[{AGENT_ID}]]></AgentID>" \
           f"<Encrypt><![CDATA[{encrypt}]]></Encrypt></xml>"
    return _signature(TOKEN, timestamp, nonce, encrypt), timestamp, nonce, body


# ------------------------------------------------------------------ WeCom's published sample


def test_wecom_sample_url_verification_answers_the_documented_echostr() -> None:
    # Given: WeCom's sample channel at the time of its sample verification request
    crypto = WeComCallbackCrypto(corp_id=SAMPLE_CORP_ID, agent_id=218, token=SAMPLE_TOKEN,
                                 encoding_aes_key=SAMPLE_AES_KEY, clock=lambda: int(SAMPLE_VERIFY[1]))
    # When / Then: the echostr decrypts to the plaintext WeCom documents
    assert crypto.verify_url(*SAMPLE_VERIFY) == SAMPLE_ECHO_PLAINTEXT


def test_wecom_sample_message_opens_to_the_documented_text_message() -> None:
    # Given: WeCom's sample channel and its sample message POST
    crypto = WeComCallbackCrypto(corp_id=SAMPLE_CORP_ID, agent_id=218, token=SAMPLE_TOKEN,
                                 encoding_aes_key=SAMPLE_AES_KEY, clock=lambda: int(SAMPLE_MSG_TIMESTAMP))
    # When: it is opened
    message = crypto.open_message(SAMPLE_MSG_SIGNATURE, SAMPLE_MSG_TIMESTAMP, SAMPLE_MSG_NONCE, SAMPLE_BODY)
    # Then: the fields of the documented plaintext
    assert (message.msg_id, message.from_userid, message.corp_id, message.agent_id) == (
        "4561255354251345929", "mycreate", SAMPLE_CORP_ID, 218)
    assert (message.msg_type, message.content, message.event) == ("text", "hello", None)
    assert message.created_at == datetime(2014, 9, 2, 12, 10, 13, tzinfo=UTC)


def test_wecom_sample_ciphertext_opens_independently_of_wechatpy() -> None:
    # Given / When: the sample's signature and ciphertext checked with hashlib and cryptography alone
    _, message, receiveid = _open_independently(SAMPLE_ENCRYPT, key_text=SAMPLE_AES_KEY)
    # Then: the documented signature, receiveid and message
    assert _signature(SAMPLE_TOKEN, SAMPLE_MSG_TIMESTAMP, SAMPLE_MSG_NONCE, SAMPLE_ENCRYPT) == SAMPLE_MSG_SIGNATURE
    assert receiveid == SAMPLE_CORP_ID
    assert "<Content><![CDATA[hello]]></Content>" in message and "<MsgId>4561255354251345929</MsgId>" in message


# ------------------------------------------------------------------------- round trips


def test_message_sealed_from_the_protocol_opens_with_its_chinese_text() -> None:
    # Given: a CRC's question sealed as WeCom would, without wechatpy
    signature, timestamp, nonce, body = _callback(_text_xml("P001 入组了吗？"))
    # When
    message = _crypto().open_message(signature, timestamp, nonce, body)
    # Then
    assert message.content == "P001 入组了吗？"
    assert (message.from_userid, message.msg_id, message.agent_id) == ("crc.li", "7311992846155431937", AGENT_ID)
    assert message.dedupe_key == "msg#7311992846155431937"
    assert "入组" not in repr(message)


def test_sealed_callback_has_the_published_layout() -> None:
    # Given: the adapter sealing a message (as the local say-script does)
    xml = _text_xml("随访窗口是几天？")
    signature, body = _crypto().seal_callback(xml, timestamp=str(NOW), nonce="42")
    encrypt = body.split("<Encrypt>")[1].split("</Encrypt>")[0]
    # When: opened independently
    prefix, message, receiveid = _open_independently(encrypt)
    # Then: 16 random bytes, the length-prefixed message, the corp id; signed over the sorted four
    assert len(prefix) == 16 and message == xml and receiveid == CORP_ID
    assert signature == _signature(TOKEN, str(NOW), "42", encrypt)
    assert f"<ToUserName>{CORP_ID}</ToUserName>" in body and f"<AgentID>{AGENT_ID}</AgentID>" in body


def test_url_verification_of_a_project_channel_returns_the_plaintext() -> None:
    # Given: an echostr sealed for the project's corp id
    echostr = _seal_independently("8842957113051826233")
    signature = _signature(TOKEN, str(NOW), "7", echostr)
    # When / Then
    assert _crypto().verify_url(signature, str(NOW), "7", echostr) == "8842957113051826233"


def test_url_verification_restores_a_plus_decoded_as_a_space() -> None:
    # Given: an echostr holding "+" that reached the handler with a space in its place
    echostr = next(e for e in (_seal_independently(str(n)) for n in range(200)) if "+" in e)
    signature = _signature(TOKEN, str(NOW), "7", echostr)
    # When / Then
    assert _crypto().verify_url(signature, str(NOW), "7", echostr.replace("+", " ")).isdigit()


def test_an_event_has_no_msg_id_and_dedupes_on_sender_time_and_event() -> None:
    # Given: a member opening the application (an event: no MsgId)
    xml = (f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><FromUserName><![CDATA[CRC.Li]]></FromUserName>"
           f"<CreateTime>{NOW}</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[enter_agent]]>"
           f"</Event><EventKey><![CDATA[]]></EventKey><AgentID>{AGENT_ID}</AgentID></xml>")
    # When
    message = _crypto().open_message(*_callback(xml))
    # Then
    assert (message.msg_id, message.msg_type, message.event, message.content) == (None, "event", "enter_agent", None)
    assert message.dedupe_key == f"event#crc.li#{NOW}#enter_agent"


# ---------------------------------------------------------------------------- refusals


def test_bad_signature_is_refused() -> None:
    # Given: a valid callback whose signature was changed in one place
    signature, timestamp, nonce, body = _callback(_text_xml("hi"))
    forged = ("0" if signature[0] != "0" else "1") + signature[1:]
    # When / Then
    with pytest.raises(WeComSignatureInvalid):
        _crypto().open_message(forged, timestamp, nonce, body)


def test_signature_over_another_token_is_refused() -> None:
    # Given: a callback signed with a token that is not the project's
    encrypt = _seal_independently(_text_xml("hi"))
    body = f"<xml><Encrypt><![CDATA[{encrypt}]]></Encrypt></xml>"
    # When / Then
    with pytest.raises(WeComSignatureInvalid):
        _crypto().open_message(_signature("OtherToken1", str(NOW), "5", encrypt), str(NOW), "5", body)


@pytest.mark.parametrize("offset_s", [MAX_SKEW_S + 1, -(MAX_SKEW_S + 1), 86_400])
def test_timestamp_outside_five_minutes_is_refused(offset_s: int) -> None:
    # Given: a correctly signed callback whose timestamp is more than 5 minutes from now
    args = _callback(_text_xml("hi"), timestamp=str(NOW - offset_s))
    # When / Then
    with pytest.raises(WeComCallbackStale):
        _crypto().open_message(*args)


@pytest.mark.parametrize("offset_s", [MAX_SKEW_S, -MAX_SKEW_S, 0])
def test_timestamp_within_five_minutes_is_accepted(offset_s: int) -> None:
    args = _callback(_text_xml("hi"), timestamp=str(NOW - offset_s))
    assert _crypto().open_message(*args).content == "hi"


def test_stale_url_verification_is_refused() -> None:
    echostr = _seal_independently("1")
    signature = _signature(TOKEN, str(NOW - 3600), "7", echostr)
    with pytest.raises(WeComCallbackStale):
        _crypto().verify_url(signature, str(NOW - 3600), "7", echostr)


def test_plaintext_naming_another_corp_is_refused() -> None:
    # Given: a callback encrypted with the project's key and token but another receiveid
    args = _callback(_text_xml("hi", corp_id="wwaaaaaaaaaaaaaaaa"), receiveid="wwaaaaaaaaaaaaaaaa")
    # When / Then
    with pytest.raises(WeComReceiverMismatch):
        _crypto().open_message(*args)


def test_url_verification_for_another_corp_is_refused() -> None:
    echostr = _seal_independently("1", receiveid="wwaaaaaaaaaaaaaaaa")
    with pytest.raises(WeComReceiverMismatch):
        _crypto().verify_url(_signature(TOKEN, str(NOW), "7", echostr), str(NOW), "7", echostr)


def test_message_for_another_application_is_refused() -> None:
    args = _callback(_text_xml("hi", agent_id=1000099))
    with pytest.raises(WeComReceiverMismatch):
        _crypto().open_message(*args)


def _signed_envelope(encrypt: str) -> tuple[str, str, str, str]:
    body = f"<xml><Encrypt><![CDATA[{encrypt}]]></Encrypt></xml>"
    return _signature(TOKEN, str(NOW), "9", encrypt), str(NOW), "9", body


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("a" * 40, str(NOW), "9", "not xml at all"), id="not-xml"),
        pytest.param(("a" * 40, str(NOW), "9", "<xml><ToUserName>x</ToUserName></xml>"), id="no-encrypt"),
        pytest.param(("a" * 40, str(NOW), "9", '<!DOCTYPE xml [<!ENTITY a "aaaa">]><xml><Encrypt>&a;</Encrypt></xml>'),
                     id="entity-declaration"),
        pytest.param(("a" * 40, "17672256OO", "9", "<xml><Encrypt>abc</Encrypt></xml>"), id="timestamp-not-digits"),
        pytest.param(("a" * 40, str(NOW), "", "<xml><Encrypt>abc</Encrypt></xml>"), id="no-nonce"),
        pytest.param(_signed_envelope("not base64 !!"), id="signed-not-base64"),
        pytest.param(_signed_envelope(base64.b64encode(b"x" * 20).decode()), id="signed-not-blocks"),
        pytest.param(_callback("<xml><MsgType>text</MsgType></xml>"), id="decrypted-without-sender"),
        pytest.param(_callback("plain words, not XML"), id="decrypted-not-xml"),
    ],
)
def test_malformed_callback_is_refused(args: tuple[str, str, str, str]) -> None:
    with pytest.raises(WeComMalformedCallback):
        _crypto().open_message(*args)


def test_oversized_body_is_refused_before_parsing() -> None:
    body = "<xml><Encrypt>" + "A" * MAX_BODY_BYTES + "</Encrypt></xml>"
    with pytest.raises(PayloadTooLarge) as caught:
        _crypto().open_message("a" * 40, str(NOW), "9", body)
    assert caught.value.limit_bytes == MAX_BODY_BYTES


def test_refusal_reasons_never_quote_the_request() -> None:
    # Given: a callback with a wrong signature, and one from another corp
    signature, timestamp, nonce, body = _callback(_text_xml("P001 入组了吗？"))
    reasons = []
    for args in ((signature[::-1], timestamp, nonce, body),
                 _callback(_text_xml("P001", corp_id="wwb"), receiveid="wwb")):
        with pytest.raises((WeComSignatureInvalid, WeComReceiverMismatch)) as caught:
            _crypto().open_message(*args)
        reasons.append(caught.value.reason)
    # Then: no content, token, key or signature in the reasons
    assert not any(s in r for r in reasons for s in ("P001", TOKEN, AES_KEY, signature, "wwb"))


# ------------------------------------------------------------------------- HTTP status


def _status_of(exc: Exception) -> int:
    app = APIGatewayHttpResolver()
    register_error_handlers(app)

    @app.get("/v1/boom")
    def boom() -> dict[str, str]:
        raise exc

    event = build_http_api_event("GET", "/v1/boom", {}, "", b"", "GET /v1/boom", None, None, request_id="r-1")
    response: dict[str, Any] = app.resolve(event, LambdaContext())
    return int(response["statusCode"])


def test_signature_and_stale_refusals_answer_401_and_receiver_mismatch_403() -> None:
    assert _status_of(WeComSignatureInvalid("the callback signature does not match")) == 401
    assert _status_of(WeComCallbackStale("the callback timestamp is more than 300 s from now")) == 401
    assert _status_of(WeComReceiverMismatch("the callback is for another corp id")) == 403
