"""What a withdrawal takes back ("那个算了，不用了", "scratch the cc thing", "disregard what I asked this
morning about the mobile numbers"): the line it names or, naming nothing, the line just said. Used by
:mod:`agent_memory.hot_memory.merge`. Deterministic; nothing is logged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_memory.domain.models import HotMemoryLine
from agent_memory.hot_memory.analysis import shared_grams


def bare_withdrawal(text: str) -> bool:
    """A withdrawal naming nothing but what was just said ("那个算了，不用了", "scratch that, 还是照旧吧",
    "Actually forget that, the site prints it"): its first clause has fewer than two content words once
    its cue words are out (a reason may follow)."""
    first = re.split(r"[，,;；。.—]", text.strip(), maxsplit=1)[0]
    rest = re.sub(r"那个|这个|那条|算了|不用了|不要了|取消|撤回|还是照旧|照旧|就这样|吧|了|啊|哈|"
                  r"\b(?:actually|scratch|forget|never ?mind|drop|cancel|that|this|it|please|sorry|ok|okay)\b",
                  " ", first, flags=re.IGNORECASE)
    return len(re.findall(r"[A-Za-z]{3,}|[\u4e00-\u9fff]{2,}", rest)) < 2


#: what an English withdrawal names ("scratch the cc thing", "drop the SFTP idea"): its word(s) find the line
_WITHDRAWN_THING = re.compile(r"\b(?:never mind|scratch|forget(?: about)?|drop|cancel)\s+the ([\w-]{2,}(?:[\w-]+)?)|"
                              r"\bthe ([\w-]+(?: [\w-]+)?) (?:thing|bit|idea|request|part)\b|"
                              # "disregard what I asked this morning about the mobile numbers"
                              r"\b(?:said|asked|wrote|request(?:ed)?)\b[^.;]{0,30}?\babout (?:the )?([\w-]{3,}?)s?\b",
                              re.IGNORECASE)


def withdrawn_line(lines: Sequence[HotMemoryLine], text: str, scopes: tuple[str | None, str | None], section: str,
                   *, added: Sequence[str] = ()) -> HotMemoryLine | None:
    """The line a withdrawal takes back: the newest AI line of the same scope (``scopes``: the
    statement's role tag and the speaker's user id — their own lines, also those they stated for a
    colleague) sharing at least two content words / bigrams with it, or containing what an English
    withdrawal names ("the cc thing"); a statement made earlier the same day (``added``: line ids
    written by this merge) first. None when no line qualifies."""
    role, speaker = scopes
    scoped = [ln for ln in lines if ln.source != "admin" and (
        ln.section == section or ln.line_id in added) and (
        ln.section != "User Preferences" or not role or ln.role_tag in (None, role, speaker)
        or (speaker is not None and ln.stated_by == speaker))]  # their own line for a colleague ("抄送何主任那个撤回")
    named = _WITHDRAWN_THING.search(text)
    thing = named and (named.group(1) or named.group(2) or named.group(3))
    term = re.compile(rf"\b{re.escape(thing)}\b", re.IGNORECASE) if thing else None
    scored = sorted(((max(shared_grams(text, ln.text), 2 * bool(term and term.search(ln.text))),
                      ln.line_id in added, i, ln) for i, ln in enumerate(scoped)),
                    key=lambda t: (t[1], t[0], t[2]), reverse=True)
    return next((t[3] for t in scored if t[0] >= 2), None)


__all__ = ["bare_withdrawal", "withdrawn_line"]
