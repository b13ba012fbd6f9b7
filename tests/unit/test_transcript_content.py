"""A transcript turn with nothing visible (zero-width or format characters only) or with control
characters is refused with 422 naming the turn, and nothing of the transcript is written."""

from __future__ import annotations

import pytest

from agent_memory.consultation import sessions
from agent_memory.domain.errors import InvalidInput
from agent_memory.domain.session_models import TranscriptTurn
from tests.fakes import InMemoryStore
from tests.unit.sessions_support import CLINIC, seed_clinic, sessions_deps


@pytest.mark.parametrize(("content", "reason"), [
    ("\u200b\u200d\ufeff", "turns[1].content must not be empty"),
    ("没有\x00", "turns[1].content must not contain control characters"),
])
def test_an_invisible_or_control_turn_is_refused_and_nothing_is_written(content: str, reason: str) -> None:
    # Given a clinic project and a transcript whose second turn is invisible or holds a NUL
    store = InMemoryStore()
    seed_clinic(store)
    before = store.snapshot(CLINIC)
    turns = [TranscriptTurn(role="patient", content="孩子头痛两天了"), TranscriptTurn(role="patient", content=content)]

    # When it is imported
    with pytest.raises(InvalidInput) as refused:
        sessions.import_transcript(sessions_deps(store), project_id=CLINIC, session_id="t1", user_id="clinic",
                                   turns=turns)

    # Then the reason names the turn, and the store is unchanged
    assert refused.value.reason == reason
    assert store.snapshot(CLINIC) == before
