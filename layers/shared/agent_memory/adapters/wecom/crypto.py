"""WeCom's callback protocol (回调加解密), through ``wechatpy``'s enterprise crypto.

What WeCom sends (docs/architecture.md, "WeCom"):

- URL verification: ``GET ?msg_signature=&timestamp=&nonce=&echostr=``; the answer is the decrypted
  ``echostr``;
- a message: ``POST ?msg_signature=&timestamp=&nonce=`` with ``<xml><ToUserName/><AgentID/>
  <Encrypt/></xml>``;
- ``msg_signature`` = SHA-1 (hex) over the sorted, concatenated token, timestamp, nonce and
  ciphertext; the ciphertext is Base64 of AES-256-CBC (key = Base64-decode(EncodingAESKey + "="),
  IV = the key's first 16 bytes, PKCS#7 padding to 32 bytes) of 16 random bytes, the message's
  length (4 bytes, big-endian), the message and the ``receiveid`` (the corp id).

``wechatpy.enterprise.crypto.WeChatCrypto`` does the signature, the cipher and the ``receiveid``
check, ``wechatpy.enterprise.parse_message`` reads the message XML. This module adds what the
library leaves to its caller: the signature compared in constant time before the library's own
comparison, the timestamp window, the size and form of the request, the application check, and
one typed domain error per refusal (HTTP status in the error map):

- :class:`~agent_memory.domain.errors.WeComSignatureInvalid` (401): the signature does not match;
- :class:`~agent_memory.domain.errors.WeComCallbackStale` (401): signed, but the timestamp is more
  than :data:`MAX_SKEW_S` from now;
- :class:`~agent_memory.domain.errors.WeComReceiverMismatch` (403): another corp id or application;
- :class:`~agent_memory.domain.errors.WeComMalformedCallback` (400): anything not in WeCom's form;
- :class:`~agent_memory.domain.errors.PayloadTooLarge` (413): a body over :data:`MAX_BODY_BYTES`.

Refusal reasons never quote the request, the token or the key.
"""

from __future__ import annotations

import hmac
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC
from typing import Any
from xml.parsers.expat import ExpatError

import xmltodict
from wechatpy.enterprise import parse_message
from wechatpy.enterprise.crypto import WeChatCrypto
from wechatpy.enterprise.exceptions import InvalidCorpIdException
from wechatpy.exceptions import InvalidSignatureException
from wechatpy.utils import WeChatSigner

from agent_memory.domain.errors import (
    PayloadTooLarge,
    WeComCallbackStale,
    WeComMalformedCallback,
    WeComReceiverMismatch,
    WeComSignatureInvalid,
)
from agent_memory.domain.wecom import WeComCallbackParams, WeComChannelSettings, WeComInboundMessage

#: WeCom refuses callbacks older than 5 minutes; we refuse a timestamp that far in either direction
#: (seconds), so a captured callback cannot be replayed later.
MAX_SKEW_S = 300
#: Largest callback body read (bytes): a text message carries at most 2,048 bytes of content, its
#: ciphertext in Base64 about 4/3 of the plaintext; 64 KiB leaves room for every message type.
MAX_BODY_BYTES = 65_536
#: Longest ``nonce`` accepted (characters; WeCom's are short decimal strings).
MAX_NONCE_CHARS = 64
#: Longest ``echostr`` accepted (characters of Base64).
MAX_ECHOSTR_CHARS = 1_024

_DECRYPT_FAULTS = (ValueError, TypeError, IndexError, KeyError, struct.error)


class WeComCallbackCrypto:
    """Opens (and, for the local say-script and tests, seals) one project's WeCom callbacks.

    Args:
        corp_id: the project's corp id (the plaintext's ``receiveid`` must equal it).
        agent_id: the project's application id (a message naming another is refused).
        token: the callback Token.
        encoding_aes_key: the 43-character EncodingAESKey.
        clock: UTC epoch seconds now (tests pass a fixed clock).
        max_skew_s: the timestamp window, seconds each way.
    """

    def __init__(
        self,
        *,
        corp_id: str,
        agent_id: int,
        token: str,
        encoding_aes_key: str,
        clock: Callable[[], float] = time.time,
        max_skew_s: int = MAX_SKEW_S,
    ) -> None:
        self._corp_id = corp_id
        self._agent_id = agent_id
        self._token = token
        self._crypto = WeChatCrypto(token, encoding_aes_key, corp_id)
        self._clock = clock
        self._max_skew_s = max_skew_s

    @classmethod
    def from_settings(
        cls, settings: WeComChannelSettings, *, clock: Callable[[], float] = time.time
    ) -> WeComCallbackCrypto:
        """The crypto of a project's validated channel settings."""
        return cls(
            corp_id=settings.corp_id,
            agent_id=settings.agent_id,
            token=settings.token.get_secret_value(),
            encoding_aes_key=settings.encoding_aes_key.get_secret_value(),
            clock=clock,
        )

    # ---------------------------------------------------------------- inbound
    def verify_url(self, msg_signature: str, timestamp: str, nonce: str, echostr: str) -> str:
        """The plaintext of ``echostr`` (what the callback URL answers WeCom's verification with).

        ``echostr`` is Base64, which never holds a space: a ``+`` that reached us as a space (a
        query string decoded as a form) is put back before the signature is checked.

        Raises:
            WeComMalformedCallback, WeComSignatureInvalid, WeComCallbackStale, WeComReceiverMismatch.
        """
        echostr = echostr.replace(" ", "+")
        if not echostr or len(echostr) > MAX_ECHOSTR_CHARS:
            raise WeComMalformedCallback("echostr is missing or too long")
        self._authenticate(msg_signature, timestamp, nonce, echostr)
        with _decrypting("echostr"):
            return str(self._crypto.check_signature(msg_signature, timestamp, nonce, echostr))

    def open_message(self, msg_signature: str, timestamp: str, nonce: str, body: str | bytes) -> WeComInboundMessage:
        """Check, decrypt and read one callback ``POST``.

        Returns:
            The message; its ``corp_id`` is this project's and ``agent_id`` this project's (or None).

        Raises:
            PayloadTooLarge, WeComMalformedCallback, WeComSignatureInvalid, WeComCallbackStale,
            WeComReceiverMismatch.
        """
        encrypt = _envelope_ciphertext(body)
        self._authenticate(msg_signature, timestamp, nonce, encrypt)
        with _decrypting("the callback body"):
            plaintext = self._crypto.decrypt_message({"Encrypt": encrypt}, msg_signature, timestamp, nonce)
        message = _read_message(plaintext)
        if message.agent_id is not None and message.agent_id != self._agent_id:
            raise WeComReceiverMismatch("the callback is for another application")
        if message.corp_id != self._corp_id:
            raise WeComReceiverMismatch("the callback is for another corp id")
        return message

    def _authenticate(self, msg_signature: str, timestamp: str, nonce: str, ciphertext: str) -> None:
        """The parameters' form, then the signature (constant time), then the timestamp window: a
        forged request learns only that its signature is wrong."""
        if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
            raise WeComMalformedCallback("timestamp must be decimal epoch seconds")
        if not nonce or len(nonce) > MAX_NONCE_CHARS:
            raise WeComMalformedCallback("nonce is missing or too long")
        if not hmac.compare_digest(msg_signature.lower().encode("ascii", "replace"),
                                   self._signature(timestamp, nonce, ciphertext).encode("ascii")):
            raise WeComSignatureInvalid("the callback signature does not match")
        if abs(self._clock() - int(timestamp)) > self._max_skew_s:
            raise WeComCallbackStale(f"the callback timestamp is more than {self._max_skew_s} s from now")

    def _signature(self, timestamp: str, nonce: str, ciphertext: str) -> str:
        signer = WeChatSigner()
        signer.add_data(self._token, timestamp, nonce, ciphertext)
        return str(signer.signature)

    # --------------------------------------------------------------- outbound
    def seal_callback(self, message_xml: str, *, timestamp: str, nonce: str) -> tuple[str, str]:
        """What WeCom would POST for ``message_xml``: ``(msg_signature, body)`` where ``body`` is
        ``<xml><ToUserName/><AgentID/><Encrypt/></xml>`` (the local say-script and tests)."""
        sealed = xmltodict.parse(self._crypto.encrypt_message(message_xml, nonce, timestamp))["xml"]
        body = xmltodict.unparse(
            {"xml": {"ToUserName": self._corp_id, "AgentID": str(self._agent_id), "Encrypt": sealed["Encrypt"]}},
            full_document=False,
        )
        return str(sealed["MsgSignature"]), body


class WeComCallbacks:
    """WeCom's callback protocol with a project's settings (port ``WeComCallbackProtocol``): a
    :class:`WeComCallbackCrypto` of the settings per call. ``clock``: UTC epoch seconds now."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    def verify_url(self, settings: WeComChannelSettings, params: WeComCallbackParams, echostr: str) -> str:
        """See :meth:`WeComCallbackCrypto.verify_url`."""
        crypto = WeComCallbackCrypto.from_settings(settings, clock=self._clock)
        return crypto.verify_url(params.msg_signature, params.timestamp, params.nonce, echostr)

    def open_message(self, settings: WeComChannelSettings, params: WeComCallbackParams,
                     body: str) -> WeComInboundMessage:
        """See :meth:`WeComCallbackCrypto.open_message`."""
        crypto = WeComCallbackCrypto.from_settings(settings, clock=self._clock)
        return crypto.open_message(params.msg_signature, params.timestamp, params.nonce, body)


@contextmanager
def _decrypting(what: str) -> Iterator[None]:
    """wechatpy's decryption faults as domain errors (no cause kept: nothing of the request)."""
    try:
        yield
    except InvalidCorpIdException:
        raise WeComReceiverMismatch("the callback is for another corp id") from None
    except InvalidSignatureException:
        raise WeComSignatureInvalid("the callback signature does not match") from None
    except _DECRYPT_FAULTS:
        raise WeComMalformedCallback(f"{what} is not a WeCom ciphertext") from None


def _envelope_ciphertext(body: str | bytes) -> str:
    """The ``Encrypt`` text of a callback body (unauthenticated XML: no entities, size capped)."""
    raw = body.encode("utf-8") if isinstance(body, str) else body
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge("the callback body is too large", MAX_BODY_BYTES, len(raw))
    try:
        envelope = xmltodict.parse(raw, disable_entities=True)
    except (ExpatError, ValueError):
        raise WeComMalformedCallback("the callback body is not XML") from None
    root = envelope.get("xml") if isinstance(envelope, dict) else None
    encrypt = root.get("Encrypt") if isinstance(root, dict) else None
    if not isinstance(encrypt, str) or not encrypt.strip():
        raise WeComMalformedCallback("the callback body has no Encrypt element")
    return encrypt.strip()


def _read_message(plaintext: str) -> WeComInboundMessage:
    """The decrypted message XML as a :class:`WeComInboundMessage` (wechatpy's parser; its fields
    convert on access, so a malformed value fails here)."""
    try:
        parsed: Any = parse_message(plaintext)
        is_event = parsed.type == "event"
        return WeComInboundMessage(
            msg_id=str(parsed.id) if parsed.id else None,  # wechatpy reads a missing MsgId as 0
            from_userid=parsed.source,
            corp_id=parsed.target,
            agent_id=getattr(parsed, "agent", None) or None,  # an unknown type has no AgentID field
            msg_type=parsed.type,
            event=parsed.event if is_event else None,
            content=parsed.content if parsed.type == "text" else None,
            created_at=parsed.create_time.astimezone(UTC),
        )
    except (ExpatError, AttributeError, *_DECRYPT_FAULTS):
        raise WeComMalformedCallback("the decrypted callback is not a WeCom message") from None


__all__ = ["MAX_BODY_BYTES", "MAX_SKEW_S", "WeComCallbackCrypto", "WeComCallbacks"]
