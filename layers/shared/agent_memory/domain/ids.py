"""Identifier helpers."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from datetime import UTC, datetime

#: Every id a client names (project, session, patient, message, diagnosis, reminder ids): letters,
#: digits, ``.``, ``_``, ``-``; 1..128 characters, starting with a letter or digit (anchored; the
#: path gate of the HTTP functions applies the same rule to every path parameter).
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"

#: Ids carry the epoch milliseconds in 13 digits: 1970-01-01 up to (not including) 2286-11-20.
_EPOCH_MS_LIMIT = 10**13


def epoch_ms(at: datetime) -> int:
    """Milliseconds since 1970-01-01 UTC of the aware ``at``, as the 13 digits of a sortable id.

    Raises:
        ValueError: ``at`` is before 1970 (a negative number would give an id like ``m-62…``
            that sorts before every other) or not representable in 13 digits.
    """
    ms = int(at.timestamp() * 1000)
    if not 0 <= ms < _EPOCH_MS_LIMIT:
        raise ValueError(f"{at.isoformat()} is outside the range of sortable ids (1970-01-01 .. 2286-11-20)")
    return ms


def new_message_id(now: datetime) -> str:
    """A message id that sorts by creation time: ``m{epoch ms, 13 digits}{8 random hex}``.

    Raises:
        ValueError: ``now`` is before 1970 or after 2286 (see :func:`epoch_ms`).
    """
    return f"m{epoch_ms(now):013d}{secrets.token_hex(4)}"


#: A message id as :func:`new_message_id` (and the transcript import) make it: ``m``, the epoch
#: milliseconds in 13 digits, then hex.
_MESSAGE_ID = re.compile(r"m([0-9]{13})[0-9a-f]+")


def message_time(message_id: str) -> datetime | None:
    """The instant (UTC, millisecond precision) a message id carries, or None for an id of another
    shape (seed data, ids written by hand)."""
    match = _MESSAGE_ID.fullmatch(message_id)
    if match is None:
        return None
    return datetime.fromtimestamp(int(match.group(1)) / 1000, tz=UTC)


def idempotency_hash(*parts: str) -> str:
    """Stable SHA-256 (hex, 32 chars) of the parts that identify a client retry."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


#: Key prefix of the chat function's idempotency records (Powertools ``key_prefix``): the record of
#: a turn is ``chat-turn#{md5 of the JSON of its key hash}``, so an erasure finds it from the
#: message's ``idempotency_hash`` without knowing the function's deployed name.
CHAT_IDEMPOTENCY_PREFIX = "chat-turn"


def chat_idempotency_record_id(key_hash: str) -> str:
    """The Powertools idempotency record id of the chat turn whose Idempotency-Key hashed to
    ``key_hash`` (Powertools hashes the JSON of the ``event_key_jmespath`` result with MD5)."""
    digest = hashlib.md5(json.dumps(key_hash, sort_keys=True).encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"{CHAT_IDEMPOTENCY_PREFIX}#{digest}"
