"""Identifier helpers."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime


def new_message_id(now: datetime) -> str:
    """A message id that sorts by creation time: ``m{epoch ms, 13 digits}{8 random hex}``."""
    return f"m{int(now.timestamp() * 1000):013d}{secrets.token_hex(4)}"


def idempotency_hash(*parts: str) -> str:
    """Stable SHA-256 (hex, 32 chars) of the parts that identify a client retry."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]
