"""The pure rules of the erasure: naming and redacting an id in text, adding counts."""

from __future__ import annotations

from agent_memory.domain.governance import add_counts, names_id, redact_id
from agent_memory.domain.ids import chat_idempotency_record_id


def test_an_id_is_named_only_as_a_whole_id() -> None:
    assert names_id("P001 reported fever", "P001")
    assert names_id("随访 P001。", "P001")
    assert not names_id("P0011 reported fever", "P001")
    assert not names_id("XP001 reported fever", "P001")
    assert not names_id("pt-P001-b", "P001")


def test_redaction_replaces_every_standalone_occurrence_and_nothing_else() -> None:
    assert redact_id("P001 and P001, not P0012", "P001") == "[erased] and [erased], not P0012"
    assert redact_id("no id here", "P001") == "no id here"


def test_counts_add_per_kind_without_changing_the_total_given() -> None:
    total = {"message": 2}
    assert add_counts(total, {"message": 3, "session": 1}) == {"message": 5, "session": 1}
    assert total == {"message": 2}


def test_the_chat_idempotency_record_id_is_the_powertools_key_of_the_key_hash() -> None:
    import hashlib
    import json

    expected = hashlib.md5(json.dumps("abc").encode(), usedforsecurity=False).hexdigest()
    assert chat_idempotency_record_id("abc") == f"chat-turn#{expected}"
