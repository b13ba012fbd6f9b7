"""The chat turn's ONE read (docs/architecture.md, "Request path"): project, hot memory, the
asker's membership, the yearly summaries, the session item and, for a patient's new session, the
patient's earlier-diagnosis references, in one BatchGetItem.

In the chat function the read is made before the turn, by the route guard: it is the function's
membership source (the guard decides on ``TurnRead.context.asker``), and the route hands the read
to :func:`agent_memory.chat.turn.handle_message`, which does not read again. The turn decides no
access itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_memory.conversation.cache import SessionCache
    from agent_memory.domain.turns import TurnContext
    from agent_memory.ports import ChatStore


@dataclass(frozen=True)
class TurnRead:
    """What the turn's read found, and for which patient's references it asked (``refs_of``:
    None when it asked for none)."""

    context: TurnContext
    refs_of: str | None


def refs_to_read(cache: SessionCache, project_id: str, session_id: str, patient_id: str | None) -> str | None:
    """The patient whose earlier-diagnosis references a turn reads: the message's patient, unless
    this container already wrote the session (its first turn, the only one that needs them, is
    over, so their item is not read again)."""
    return patient_id if patient_id and not cache.holds(project_id, session_id) else None


def read_turn(
    store: ChatStore, cache: SessionCache, project_id: str, session_id: str, *, user_id: str,
    patient_id: str | None, now: datetime,
) -> TurnRead:
    """The turn's one read, for ``user_id`` (their membership: ``context.asker``, None when not a
    member) and the message's ``patient_id``.

    Raises:
        ProjectNotFound: no project record.
    """
    refs_of = refs_to_read(cache, project_id, session_id, patient_id)
    context = store.load_turn_context(project_id, session_id, now=now, user_id=user_id, patient_id=refs_of)
    return TurnRead(context=context, refs_of=refs_of)


def context_for_turn(
    store: ChatStore, cache: SessionCache, project_id: str, session_id: str, *, user_id: str,
    patient_id: str | None, now: datetime, prefetched: TurnRead | None,
) -> TurnContext:
    """What the turn works on: ``prefetched`` when it asked for this message's patient references
    (always, for a request whose body the guard read as the route then validated it), else a new
    read (a direct call, as in tests and ``make bench``)."""
    if prefetched is not None and prefetched.refs_of == refs_to_read(cache, project_id, session_id, patient_id):
        return prefetched.context
    return read_turn(store, cache, project_id, session_id, user_id=user_id, patient_id=patient_id, now=now).context


__all__ = ["TurnRead", "read_turn", "refs_to_read", "context_for_turn"]
