"""A hot-memory document or reason with a control character is refused before anything is stored
(the prompt must never carry NUL or escape characters an admin pasted)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_memory.http.admin_requests import MemoryPutRequest


@pytest.mark.parametrize("control", ["\x00", "\x1b", "\x7f", "\x08"])
def test_a_document_or_reason_with_a_control_character_is_refused(control: str) -> None:
    with pytest.raises(ValidationError, match="control characters"):
        MemoryPutRequest(markdown=f"# System Rules\n- {control}ctl\n")
    with pytest.raises(ValidationError, match="control characters"):
        MemoryPutRequest(markdown="# System Rules\n- ok\n", reason=f"why{control}")


def test_tabs_newlines_and_carriage_returns_are_kept() -> None:
    body = MemoryPutRequest(markdown="# System Rules\r\n- a\tb\n", reason="line one\nline two")
    assert (body.markdown, body.reason) == ("# System Rules\r\n- a\tb\n", "line one\nline two")
