"""A member's WeCom message as their chat turn (docs/architecture.md, "WeCom").

The inbound queue's consumer runs :func:`answer_wecom_message` once per delivery (Powertools
idempotency on the project and ``MsgId`` around it, in ``agent_memory.events.wecom``):

1. the project's channel must still be set (a message queued before a DELETE is dropped);
2. the sender is looked up (``WECOMUSER#``: one GetItem), then the turn's one read decides: the
   member must still be a member and still have that WeCom user id. Anyone else gets one polite
   refusal (bilingual), and nothing is stored: no session, no message, no flow log;
3. a text message becomes the member's chat turn in their WeCom session (``wecom-{hash}``, one per
   member and project), exactly as ``POST .../messages`` runs it, with an idempotency hash of the
   ``MsgId``: a redelivery after the turn was recorded replays its answer without calling the LLM;
4. the answer goes onto the WeCom outbox (split at WeCom's limits; deduplicated on the ``MsgId``).

Other message types (image, voice, ...) get one sentence saying only text is read. Message text is
never logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_memory.chat.read import read_turn
from agent_memory.chat.turn import ChatDeps, handle_message
from agent_memory.domain.errors import IdentifiersRejected, InvalidInput, PayloadTooLarge
from agent_memory.domain.ids import idempotency_hash
from agent_memory.domain.wecom import WeComInbound, WeComOutbound, wecom_session_id, wecom_userid_key

if TYPE_CHECKING:
    from agent_memory.chat.read import TurnRead
    from agent_memory.ports import WeComChannelStore, WeComDirectory, WeComOutbox

#: To a WeCom user who is not (or no longer) a member of the project with that WeCom id.
NOT_A_MEMBER = (
    "您好！您的企业微信账号尚未关联本项目的成员，项目助手无法回答。如需使用，请联系项目管理员添加。\n"
    "Hello! Your WeCom account is not linked to a member of this project, so the project assistant "
    "cannot answer you. Please ask the project's admin to add you."
)
#: To a member who sent something other than text.
ONLY_TEXT = "目前只能阅读文字消息，请用文字提问。\nI can read text messages only; please ask in text."
#: To a member whose text the turn refuses for its form (control characters, nothing visible, too long).
UNREADABLE = "这条消息无法处理（为空、含控制字符或过长），请换种方式再发一次。\nI could not read this message " \
             "(empty, control characters or too long); please send it again in other words."

#: To a member whose text holds identifiers in a project whose policy is ``reject`` (nothing stored);
#: ``{kinds}``: the kinds found (never the values).
IDENTIFIERS_REFUSED = "这条消息含有身份信息（{kinds}），本项目不接受，已丢弃；请删除后再发一次。\nThis message " \
                      "holds identifiers ({kinds}) this project does not accept; it was not kept. Please remove " \
                      "them and send it again."


@dataclass(frozen=True)
class WeComTurnDeps:
    """The chat turn's collaborators, the channel records, the WeCom directory and the outbox."""

    chat: ChatDeps
    channels: WeComChannelStore
    directory: WeComDirectory
    outbox: WeComOutbox


def answer_wecom_message(deps: WeComTurnDeps, inbound: WeComInbound, *, deadline: float | None) -> dict[str, Any]:
    """Answer one inbound message (see the module docstring).

    Args:
        deadline: ``time.monotonic()`` instant by which the LLM must have answered.

    Returns:
        ``{"outcome": ..., "parts": n}`` (no text, no id of the sender): ``answered``,
        ``not_a_member``, ``not_text``, ``unreadable``, ``identifiers_rejected`` or ``no_channel``;
        ``parts``: the messages queued for WeCom.

    Raises:
        LLMError: the turn failed (its user message is recorded as failed, once; the queue
            delivers the message again, which reuses it).
        ExternalServiceError: a table or the outbox failed.
    """
    project_id, message = inbound.project_id, inbound.message
    if deps.channels.get_channel(project_id) is None:
        return {"outcome": "no_channel", "parts": 0}
    dedupe = f"answer#{inbound.idempotency_key}"
    session_id = wecom_session_id(message.from_userid)
    user_id = deps.directory.wecom_member(project_id, message.from_userid)
    read = _member_read(deps.chat, project_id, session_id, user_id, message.from_userid)
    if user_id is None or read is None:
        return _reply(deps, inbound, NOT_A_MEMBER, dedupe, "not_a_member")
    if message.msg_type != "text" or not message.content:
        return _reply(deps, inbound, ONLY_TEXT, dedupe, "not_text")
    try:
        result = handle_message(
            deps.chat, project_id=project_id, session_id=session_id, user_id=user_id, content=message.content,
            patient_id=None, deadline=deadline, prefetched=read,
            idempotency_hash=idempotency_hash(project_id, session_id, user_id, dedupe),
        )
    except IdentifiersRejected as refused:
        text = IDENTIFIERS_REFUSED.format(kinds=", ".join(refused.kinds))
        return _reply(deps, inbound, text, dedupe, "identifiers_rejected")
    except (InvalidInput, PayloadTooLarge):
        return _reply(deps, inbound, UNREADABLE, dedupe, "unreadable")
    return _reply(deps, inbound, result.reply, dedupe, "answered")


def _member_read(
    chat: ChatDeps, project_id: str, session_id: str, user_id: str | None, wecom_userid: str
) -> TurnRead | None:
    """The turn's one read for ``user_id`` when they are still a member with this WeCom user id,
    else None (a mapping that changed since the lookup, a member removed)."""
    if user_id is None:
        return None
    read = read_turn(chat.store, chat.cache, project_id, session_id, user_id=user_id, patient_id=None, now=chat.now())
    asker = read.context.asker
    if asker is None or wecom_userid_key(asker.wecom_userid or "") != wecom_userid_key(wecom_userid):
        return None
    return read


def _reply(deps: WeComTurnDeps, inbound: WeComInbound, text: str, dedupe: str, outcome: str) -> dict[str, Any]:
    parts = deps.outbox.send([WeComOutbound(project_id=inbound.project_id, to_userid=inbound.message.from_userid,
                                            text=text, dedupe_key=dedupe)])
    return {"outcome": outcome, "parts": parts}


__all__ = ["NOT_A_MEMBER", "ONLY_TEXT", "UNREADABLE", "WeComTurnDeps", "answer_wecom_message"]
