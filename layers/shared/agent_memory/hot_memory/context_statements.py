"""Active Context and Lessons Learned said in everyday wording: the statement finder's kinds for
what the team works on, worries about, has closed and is living with, and for a lesson told
with its rule (:mod:`agent_memory.hot_memory.statement_finder` applies its traps to the cue each
finder here reports).

Kinds (README "What the daily distillation keeps"; the word families are in
:mod:`agent_memory.hot_memory.statement_lexicon`):

- a new focus said without 重点 (``FOCUS_SAID``: "接下来一个月全力盯…", "这个月的首要任务是…",
  "focus 接下来是…", "For the next six weeks the whole team is heads-down on …") -> "当前重点：…" /
  "Current focus: …", a ``change`` (the project has one focus: it replaces the focus line);
- a risk under a label (``RISK_LABEL``: "隐患：…", "risk：…", "New worry: …") or flagged to watch
  (``WATCH``: "…可能会拖，这个要盯着", "… could slip. Worth keeping an eye on.") with a worry in it
  (``WORRY``) -> "风险：…" / "Risk: …" (it joins the other risks; a watched note with no worry in it
  is a state note);
- a risk closed (``RISK_CLOSED``: "之前担心的…不存在了", "so that risk is closed") -> "风险解除：…" /
  "Risk closed: …", with the sentence before it when the closing one points back ("that risk"):
  the merge puts it in place of the risk line it shares its subject with;
- a temporary state of a site, a system or a supply (``STATE_NOW`` with a ``STATE_SUBJECT`` before
  it: "Heads up: site 03 is paused for new enrolment …", "07中心入组暂停了") — not a past story
  (``PAST_STORY``), someone else's report (``SAID_BY_OTHER``) nor a subject's state;
- a lesson opening its message (``LESSON_OPENING``: "Lesson learned: …", "教训：…") or told "the
  hard way" with a rule (``LESSON_RULE``), when no sentence of it states anything else: the whole
  message, in Lessons Learned.

Deterministic and offline; nothing is logged.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from agent_memory.hot_memory.analysis import SUBJECT_ID, language_of, nfkc
from agent_memory.hot_memory.sentences import fragments, note_body, sentence_spans
from agent_memory.hot_memory.statement_lexicon import (
    BACK_REFERENCE,
    FOCUS_SAID,
    HEADS_UP,
    LESSON_OPENING,
    LESSON_RULE,
    PAST_STORY,
    RISK_CLOSED,
    RISK_LABEL,
    SAID_BY_OTHER,
    STATE_NOW,
    STATE_SUBJECT,
    WATCH,
    WORRY,
)

#: Active Context lines name their kind (the merge reads the labels: :mod:`agent_memory.hot_memory.merge`)
LABELS = {"focus": ("当前重点：", "Current focus: "), "risk": ("风险：", "Risk: "),
          "closed": ("风险解除：", "Risk closed: ")}
#: a clause putting everything else aside after a focus ("其他的可以先放放", "别的事往后放")
_ASIDE = re.compile(r"^(?:别的|其他|其它|其余|剩下的|everything else|other (?:things|stuff|work))", re.IGNORECASE)


class ContextSaid(NamedTuple):
    """A context statement found in one sentence.

    Attributes:
        text: the line before cleaning, labelled ("风险：…").
        kind: ``change`` (a new focus: it replaces the focus line) or ``durable``.
        start: where the cue starts in the sentence's NFKC text (offsets equal the sentence's).
        end: where the cue ends.
    """

    text: str
    kind: str
    start: int
    end: int


def _labelled(kind: str, body: str) -> str:
    zh, en = LABELS[kind]
    return (zh if language_of(body) == "zh" else en) + body.strip(" ，,:：;；")


def _words(text: str) -> int:
    return len(re.sub(r"\W", "", text))


def early_context(sentence: str, norm: str, message: str) -> ContextSaid | None:
    """A new focus, a labelled risk or a risk closed in ``sentence`` (``norm``: its NFKC text of the
    same length), found before any standing cue ("…，别的事往后放" holds 往后); None when none."""
    focus = FOCUS_SAID.search(norm)
    if focus is not None:
        frags = fragments(sentence[focus.end():])
        kept = [f for f in frags[: next((i for i, f in enumerate(frags) if i and _ASIDE.match(f)), len(frags))]]
        body = "，".join(kept) if language_of(" ".join(kept)) == "zh" else ", ".join(kept)
        if _words(body) >= 4:
            return ContextSaid(_labelled("focus", body), "change", focus.start(), focus.end())
    label = RISK_LABEL.match(norm)
    if label is not None and _words(sentence[label.end():]) >= 6:
        return ContextSaid(_labelled("risk", sentence[label.end():]), "durable", label.start(), label.end())
    closed = RISK_CLOSED.search(norm)
    if closed is not None:
        body = sentence
        if BACK_REFERENCE.search(norm[: closed.end()]) or _words(norm[: closed.start()]) < 4:
            body = f"{_previous_sentence(sentence, message)}{'；' if language_of(sentence) == 'zh' else '; '}{sentence}"
        return ContextSaid(_labelled("closed", body), "durable", closed.start(), closed.end())
    return None


def late_context(sentence: str, norm: str, message: str) -> ContextSaid | None:
    """A risk flagged to watch, or a temporary state of a site or a system, in a sentence no
    standing instruction was found in; None when none."""
    watched = _watched(sentence, norm, message)
    if watched is not None:
        return watched
    state = STATE_NOW.search(norm)
    if state is None or SUBJECT_ID.search(norm) or PAST_STORY.search(norm):
        return None
    heads_up = HEADS_UP.match(norm)
    start = heads_up.end() if heads_up else 0
    before = norm[start: state.start()]
    if not STATE_SUBJECT.search(before) or SAID_BY_OTHER.search(before):
        return None
    return ContextSaid(sentence[start:], "durable", state.start(), state.end())


def _watched(sentence: str, norm: str, message: str) -> ContextSaid | None:
    """What ``sentence`` says, when it closes by asking to keep watching it (or the message's next
    sentence only asks that): a risk when it holds a worry, else a state note. A mark that does not
    close its sentence asks for a task ("帮我记着催一下信息科")."""
    mark = WATCH.search(norm)
    if mark is not None and _words(re.sub(r"[吧啊哈呀哦了啦]", "", norm[mark.end():])) == 0:
        body = sentence[: mark.start()]
        span = (mark.start(), mark.end())
    elif _watch_alone(_next_sentence(sentence, message)):
        body, span = sentence, (0, len(norm))
    else:
        return None
    body = body.strip(" ，,。.;；")
    if _words(body) < 6:
        return None
    if WORRY.search(nfkc(body)):
        return ContextSaid(_labelled("risk", body), "durable", *span)
    return ContextSaid(body, "durable", *span)


def _watch_alone(text: str) -> bool:
    """``text`` only asks to keep watching ("Worth keeping an eye on.", "这个要盯着")."""
    mark = WATCH.search(nfkc(text))
    return mark is not None and _words(nfkc(text)[: mark.start()] + nfkc(text)[mark.end():]) <= 4


def _neighbours(sentence: str, message: str) -> tuple[str, str]:
    """The sentences of ``message`` before and after ``sentence`` ("" when none)."""
    at = message.find(sentence)
    if at < 0:
        return "", ""
    spans = [(a, b) for a, b, _ in sentence_spans(message) if message[a:b].strip()]
    before = [message[a:b].strip() for a, b in spans if b <= at]
    after = [message[a:b].strip() for a, b in spans if a >= at + len(sentence)]
    return (before[-1] if before else ""), (after[0] if after else "")


def _previous_sentence(sentence: str, message: str) -> str:
    return _neighbours(sentence, message)[0]


def _next_sentence(sentence: str, message: str) -> str:
    return _neighbours(sentence, message)[1]


def lesson_told(message: str, *, question: bool) -> str | None:
    """The lesson a message tells with its rule (the text after its opening label, sentences joined
    with ；/ ;), or None: not opened by a lesson label nor told "the hard way" with a rule in it, or a
    question."""
    norm = nfkc(message)
    opening = LESSON_OPENING.match(norm) if len(norm) == len(message) else LESSON_OPENING.match(message)
    if opening is None or question or SAID_BY_OTHER.search(norm[: opening.start()]):
        return None
    hard_way = not re.search(r"[:：]\s*$", opening.group())
    if hard_way and not LESSON_RULE.search(norm):
        return None
    rest = message[opening.end():]
    return note_body(rest) if _words(rest) >= 8 else None
