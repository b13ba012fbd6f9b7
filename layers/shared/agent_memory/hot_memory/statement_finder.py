"""Standing statements in a user message: what the offline rule extractor turns into memory, and
how a chat turn tells a standing instruction from what it asks for now.

Only what a user states as a standing instruction, a current state or a lesson becomes memory.
A message is cut into sentences (:mod:`agent_memory.hot_memory.sentences`: sentence ends, line
breaks, dashes; in Chinese chat also a space between two CJK characters separates clauses) with
quoted text masked, and a statement is found wherever it stands in a sentence:

- a durable cue: 以后 / 今后 / 往后 / 从现在起 / 从今往后 ..., "from now on", "going forward",
  "in future" — at the start ("以后汇报别写…"), after a topic ("QC清单以后直接贴…", topic-first)
  or after lead words ("对了 以后…", "also from now on…", "From now on 我的…", code-switched);
- a change of value: "周报还是改到周四", "重点改成…", "风险换成…", "switch to …";
- a memory cue: 记住 / remember (the rest of the sentence), 记一下 / 记下 / note (the rest of the
  message: a state or a lesson told to the assistant);
- a sentence (or the part after a label such as "Lesson:") starting with "Always" / "Never";
- without a cue (:func:`_habitual`, :func:`_implicit`): "X should always / must never …", a
  habitual 都 / 一律 before an instruction, "don't … any more" (别再…), an instruction after a
  recurring occasion (每次…的时候, 不管…都, "for every visit") or about what goes into a recurring
  document (提醒里加一行…, "In the weekly summary, add …"), a standing request put as a question
  (每周的清单能不能都带上…？), a new focus or a risk said without the word (接下来全力…, 现在头疼的
  是…), and a new value said as a wish (周报还是放周三下午吧) — a ``change``, kept by the merge only
  where it replaces a line; a change verb with no subject borrows it from the previous sentence.

Not statements (kinds, not phrases): a cue inside quotes or after a reported-speech verb (someone
else's words), a hypothetical (如果 / 要是 / if … 以后), a question, a postponement (以后再说),
以后 as a time word (V3以后的随访), an acknowledgement (我记住了), a one-off task (a date such as
明天 / tomorrow, or 把这份…; a request to look now, 发我看看), a tentative thought (以后可能得…), a
confirming question (…这个没变吧), a complaint (周一上午发我根本没空看), clinical instructions about a
subject (a subject id with a medical order in the sentence or the message, or a subject id beside
a standing cue), 以后 after an event (入组以后…),
the speaker's own promise (我会…, I'll…), an appointment note (记一下 明天开会), a body that only
points back (这个都这么办), and restatements ("之前说过", "same as before": they add nothing).
A withdrawal ("早上说的那个…先不要了", "never mind the …") is found with kind ``withdraw``.
Active Context and lessons said in everyday wording (a focus without 重点, a risk under a label or
flagged to watch, a risk closed, a temporary state of a site or a system, a lesson opening its
message with its rule) are the kinds of :mod:`agent_memory.hot_memory.context_statements`.

The word families are in :mod:`agent_memory.hot_memory.statement_lexicon`, the traps' judgement in
:mod:`agent_memory.hot_memory.traps`. Lines are clean: cue,
fillers, emoji, complaints and reasons after the instruction are dropped; the statement keeps its
language. Deterministic and offline; nothing is logged.
"""

from __future__ import annotations

import re

from agent_memory.hot_memory.analysis import SUBJECT_ID, VALUE_PATTERNS, language_of, nfkc, values
from agent_memory.hot_memory.context_statements import ContextSaid, early_context, late_context, lesson_told
from agent_memory.hot_memory.sentences import (
    clean_statement,
    fragment_at,
    fragments,
    mask_quotes,
    note_body,
    sentence_spans,
    split_statements,
    statement_body,
    topic_before,
)
from agent_memory.hot_memory.statement_lexicon import (
    ACK,
    ACT_NOW,
    AFTER_EVENT,
    ALWAYS_EN,
    ALWAYS_MODAL,
    ANAPHORA,
    BACK_REFERENCE,
    CHANGE,
    CLINICAL_ORDER,
    CONDITIONAL_HEAD,
    CONTINUE,
    DECISION,
    DOCUMENT,
    DURABLE_EN,
    DURABLE_ZH,
    FOCUS_CHANGE,
    HABITUAL_ZH,
    HEADS_UP,
    HOW_WORD,
    HYPOTHETICAL,
    INSTRUCTION,
    LATER,
    LEAD_FILLER,
    LESSON,
    LESSON_LABEL,
    NEVER_AGAIN,
    NOTE,
    ONE_OFF,
    OUTPUT_OF_ASSISTANT,
    OWN_PROMISE,
    POSTPONE,
    PREFER,
    RECURRING,
    RECURRING_DOCUMENT,
    REMEMBER,
    REMINDER,
    REQUEST,
    RISK_SAID,
    RULE_AFTER_TIME_WORD,
    TIME_WORD,
    TOPIC_FRAGMENT,
    UNTIL,
    WITHDRAW,
)
from agent_memory.hot_memory.statement_lexicon import AS_BEFORE as _AS_BEFORE
from agent_memory.hot_memory.statement_lexicon import ASKS_REMINDER as _ASKS_REMINDER
from agent_memory.hot_memory.statement_lexicon import COMPLAINT as _COMPLAINT
from agent_memory.hot_memory.statement_lexicon import CONDITIONAL_RULE as _CONDITIONAL_RULE
from agent_memory.hot_memory.statement_lexicon import CONFIRMING as _CONFIRMING
from agent_memory.hot_memory.statement_lexicon import DOING_NOW as _DOING_NOW
from agent_memory.hot_memory.statement_lexicon import EN_OUTPUT as _EN_OUTPUT
from agent_memory.hot_memory.statement_lexicon import EVERY_MORNING as _EVERY_MORNING
from agent_memory.hot_memory.statement_lexicon import EXCEPT as _EXCEPT
from agent_memory.hot_memory.statement_lexicon import KEEP_EN as _KEEP
from agent_memory.hot_memory.statement_lexicon import LESSON_IS as _LESSON_IS
from agent_memory.hot_memory.statement_lexicon import LESSON_OPENING as _LESSON_OPENS
from agent_memory.hot_memory.statement_lexicon import NO_MORE as _NO_MORE
from agent_memory.hot_memory.statement_lexicon import NO_SUBJECT as _NO_SUBJECT
from agent_memory.hot_memory.statement_lexicon import NOUN_TOPIC as _NOUN_TOPIC
from agent_memory.hot_memory.statement_lexicon import NOW_IS as _NOW_IS
from agent_memory.hot_memory.statement_lexicon import ON_AN_OCCASION as _ON_AN_OCCASION
from agent_memory.hot_memory.statement_lexicon import OPENS_WITH_DOCUMENT as _OPENS_WITH_DOCUMENT
from agent_memory.hot_memory.statement_lexicon import OPENS_WITH_DOCUMENT_EN as _OPENS_WITH_DOCUMENT_EN
from agent_memory.hot_memory.statement_lexicon import PLEASANTRY as _PLEASANTRY
from agent_memory.hot_memory.statement_lexicon import PURPOSE as _PURPOSE
from agent_memory.hot_memory.statement_lexicon import TASK_NOW as _TASK_NOW
from agent_memory.hot_memory.statement_lexicon import TELL_ME as _TELL_ME
from agent_memory.hot_memory.statement_lexicon import TOO as _TOO
from agent_memory.hot_memory.statement_lexicon import WISH as _WISH
from agent_memory.hot_memory.traps import is_trap as _trap
from agent_memory.hot_memory.traps import standing_request as _standing_request


class FoundStatement:
    """One statement found in a message.

    Attributes:
        text: the statement (cleaned by :func:`find_statements`; a withdrawal keeps its sentence).
        kind: ``durable`` | ``change`` | ``remember`` | ``note`` | ``withdraw``.
        section_hint: ``Lessons Learned`` when the message carries a lesson cue, else None (the
            section is then read from the text by
            :func:`agent_memory.hot_memory.statements.classify_section`).
        sentence: the sentence the statement was found in, before cleaning (its scope words are
            kept for :mod:`agent_memory.hot_memory.scope`).
    """

    def __init__(self, text: str, kind: str, section_hint: str | None = None) -> None:
        self.text = text
        self.kind = kind  # "durable" | "change" | "remember" | "note" | "withdraw"
        self.section_hint = section_hint
        #: the sentence the statement was found in, before cleaning (its scope words are kept)
        self.sentence = text


#: a cue that is not the speaker's standing statement: the sentence holds none
_TRAPPED = FoundStatement("", "trap")


def _durable(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    """A statement led by a durable cue (以后 / from now on …) wherever it stands."""
    for m in sorted([*DURABLE_ZH.finditer(norm), *DURABLE_EN.finditer(norm)], key=lambda x: x.start()):
        after = norm[m.start():]
        time_word = TIME_WORD.match(after) and not (
            after.startswith("以后的") and RULE_AFTER_TIME_WORD.search(fragment_at(norm, m.start(), m.end())))
        if time_word or POSTPONE.match(after) or POSTPONE.search(norm[m.end(): m.end() + 8]):
            continue
        if DURABLE_ZH.match(after) and AFTER_EVENT.search(norm[: m.start()]):
            continue
        if _trap(norm, m.start(), m.end(), message, question=question, durable=True) or LATER.search(
                fragment_at(norm, m.start(), m.end())):
            return _TRAPPED
        rest = sentence[m.end():]
        if DURABLE_EN.match(after) and REQUEST.search(norm):
            # a request with the cue inside ("Can you send me X every other Monday from now on, split by site")
            head = REQUEST.sub("", sentence[: m.start()], count=1).strip()
            return FoundStatement(f"{head} {sentence[m.end():].lstrip(' ,')}".strip(), "durable")
        if DURABLE_EN.match(after):
            rest = topic_before(sentence, m.start()) + rest
            if not re.sub(r"[\W_]|\b(?:instead|please|too|as well|again|then|thanks)\b", "", rest,
                          flags=re.IGNORECASE) and re.sub(r"[\W_]", "", sentence[: m.start()]):
                # the cue closes the statement ("Answer me in English from now on")
                return FoundStatement(sentence[: m.start()], "durable")
            if language_of(rest) == "en":
                return FoundStatement(rest, "durable")
            frags = fragments(rest)
            return FoundStatement(statement_body(frags[0] if frags else "", frags[1:]), "durable")
        frags = fragments(sentence[: m.start()] + "\x01" + sentence[m.end():])
        idx = next(i for i, f in enumerate(frags) if "\x01" in f)
        head = LEAD_FILLER.sub("", frags[idx].strip())
        if head.startswith("\x01") and idx > 0:
            topic = LEAD_FILLER.sub("", frags[idx - 1]).strip()
            if (TOPIC_FRAGMENT.match(topic) or _NOUN_TOPIC.fullmatch(topic)) and not (
                    REMEMBER.search(topic) or LESSON.search(topic)):
                head = f"{topic}，{head}"
        head, rest_frags = head.replace("\x01", "").strip(), frags[idx + 1:]
        if idx > 0 and ANAPHORA.match(head):  # the cue points back ("我看报告喜欢先看表格，以后都这样")
            head = "，".join(LEAD_FILLER.sub("", f).strip() for f in frags[:idx])
        if not head and rest_frags:  # the cue stands alone ("从下周起，周报改成…")
            head, rest_frags = rest_frags[0], rest_frags[1:]
        return FoundStatement(statement_body(head, rest_frags), "durable")
    return None


def _implicit(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    """A standing instruction without a cue (kinds): a new focus ("接下来的重点放到…"); an instruction
    after a recurring occasion ("每次导出的时候，顶上加一行汇总", "For every monitoring visit, send me
    …") or about what goes into a recurring document ("给CRC的访视提醒里加一行：…", "In the weekly
    summary, add …"); a new value for a subject said as a wish ("周报还是放周三下午吧", "make the
    counts weekly") — a ``change``, which the merge keeps only where a line holds that subject."""
    focus = FOCUS_CHANGE.search(norm)
    if focus and not _trap(norm, focus.start(), focus.end(), message, question=question):
        frags = fragments(sentence[focus.end():])
        label = "当前重点：" if language_of(sentence) == "zh" else "Current focus: "
        # "往评估完整性上使劲" / "放到第16周访视上：…": the focus without its 上
        frags[:1] = [re.sub(r"^(.{1,20}?)上(?:(?:使|用)(?:劲|力)?)?(?=$|\W)", r"\1", frags[0])] if frags else []
        body = re.sub(r"^(?:for|on|is)\s+", "", statement_body(*_head_and_rest(frags)).strip(), flags=re.IGNORECASE)
        return FoundStatement(label + body, "change") if re.search(r"\w", body) else None
    never = NEVER_AGAIN.search(norm)
    if never and not _trap(norm, never.start(), never.end(), message, question=question, durable=True):
        frags = fragments(sentence)
        idx = next((i for i, f in enumerate(frags) if NEVER_AGAIN.search(nfkc(f))), 0)
        if idx and CONTINUE.match(LEAD_FILLER.sub("", frags[idx - 1])):
            idx -= 1  # the instruction the "never" clause completes ("keep dates in the … form, never 14/06")
        return FoundStatement(statement_body(LEAD_FILLER.sub("", frags[idx]), frags[idx + 1:]), "durable")
    occasion = RECURRING.search(norm) or RECURRING_DOCUMENT.search(norm)
    if occasion and re.search(r"我[^，,。]{0,4}$", norm[: occasion.start()]):
        occasion = None  # "那段说明我每次都是直接划过去的": what the speaker does, not an instruction
    if occasion and INSTRUCTION.search(norm, occasion.end()) and not _trap(
            norm, occasion.start(), occasion.end(), message, question=question, durable=True):
        frags = fragments(sentence)
        at = next((i for i, f in enumerate(frags) if occasion.group() in nfkc(f)), 0)
        kept = [f for f in frags[:at] if not (_COMPLAINT.search(nfkc(f)) or _TOO.search(nfkc(f)))]
        if len(kept) < at:  # a complaint before the rule ("…一周发一次我老事忘，…能不能改成每天早上发"): the rule alone
            return FoundStatement(statement_body(LEAD_FILLER.sub("", frags[at]), frags[at + 1:]), "durable")
        if _COMPLAINT.search(norm) and not INSTRUCTION.search(norm, max(m.end() for m in _COMPLAINT.finditer(norm))):
            return None  # "每次发的汇总都是一大坨…根本找不着重点": a complaint, no instruction after it
        return FoundStatement(LEAD_FILLER.sub("", sentence).strip(), "durable")
    return _about_every_copy(sentence, norm, message, question) or _value_wish(sentence, norm, message, question)


def _about_every_copy(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    """A standing instruction about what the assistant sends, without a cue: how an output it sends
    should be ("发我的东西尽量短", "一旦有新的SAE，给我的日报就把它放在第一条"), a standing request put
    as a question ("Could the reminders you send me include …?"), a rule bounded by an end
    ("Until the March data cut, send me …"), "keep the visit reminders in Chinese only"."""
    output = OUTPUT_OF_ASSISTANT.search(norm)
    if output is None and _CONDITIONAL_RULE.search(norm) and (DOCUMENT.search(norm) or _TELL_ME.search(norm)):
        # "如果…，就把他放清单最前面", "要是哪个受试者…，当天就在群里@我一下"
        frags = fragments(sentence)
        idx = next((i for i, f in enumerate(frags) if CONDITIONAL_HEAD.match(LEAD_FILLER.sub("", nfkc(f)))), 0)
        return FoundStatement(statement_body(LEAD_FILLER.sub("", frags[idx]), frags[idx + 1:]), "durable")
    bounded = UNTIL.match(norm) and INSTRUCTION.search(norm)
    kept = _KEEP.match(norm) and DOCUMENT.search(norm)
    told = output and (HOW_WORD.search(norm, output.end()) or INSTRUCTION.search(norm, output.end()) or (
        language_of(norm) == "en" and INSTRUCTION.search(norm[: output.start()])))  # "send anything for me to …"
    at = (output if told else None) or bounded or kept
    if at is None or (question and not _standing_request(norm)) or _COMPLAINT.search(norm) or _TOO.search(norm):
        return None  # "给我的汇总太简单了": a complaint, the instruction comes after it
    if _trap(norm, at.start(), at.end(), message, question=question, durable=True) or ACT_NOW.search(norm):
        return None
    text = REQUEST.sub("", LEAD_FILLER.sub("", sentence), count=1).strip() if question else sentence
    return FoundStatement(LEAD_FILLER.sub("", text).strip(), "durable")


def _risk_said(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    """A risk named without the word ("现在头疼的是…", "the main worry now is …"), labelled "风险：" /
    "Risk: " (a ``change``: it replaces the risk line)."""
    risk = RISK_SAID.search(norm)
    if risk is None or _trap(norm, risk.start(), risk.end(), message, question=question):
        return None
    said = sentence[risk.end():].strip(" ，,:：")
    label = "风险：" if language_of(said) == "zh" else "Risk: "
    return FoundStatement(label + said, "change") if len(re.sub(r"\W", "", said)) >= 6 else None


def _context(said: ContextSaid | None, norm: str, message: str, question: bool) -> FoundStatement | None:
    """A context statement of :mod:`agent_memory.hot_memory.context_statements` unless its cue is
    trapped (a question, a hypothetical, reported speech, a one-off …): an Active Context line."""
    if said is None or _trap(norm, said.start, said.end, message, question=question):
        return None
    return FoundStatement(said.text, said.kind, "Active Context")


def _early_context(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    return _context(early_context(sentence, norm, message), norm, message, question)


def _with_earlier_subject(found: FoundStatement, sentence: str, message: str) -> FoundStatement:
    """``found`` led by a change verb with no subject ("以后改到周五下午吧" after "周报周一上午发我根本没空
    看。") takes its subject from the message's previous sentence (:func:`_change_of_earlier_subject`);
    a durable statement opening with an instruction and no subject ("以后先按中心分开" after "query清单的
    排法我想换一下。", "以后发我邮箱" after "周报别走微信了。") takes the document an earlier sentence
    of the message opens with (:func:`_earlier_document`)."""
    bare = LEAD_FILLER.sub("", nfkc(found.text)).strip()
    change = CHANGE.match(bare)
    if found.kind == "withdraw":
        return found
    if change is None:
        unnamed = found.kind == "change" and values(bare) and not DOCUMENT.search(bare)  # "企业微信私聊发我Excel就行"
        if not (_NO_SUBJECT.match(bare) or unnamed) or OUTPUT_OF_ASSISTANT.match(bare):
            return found  # a subject of its own ("发我的东西第一行先给一句结论")
        document = _earlier_document(sentence, message)
        if unnamed and not _NO_SUBJECT.match(bare) and values(document):
            return found  # "周四下午那个周报…。挪到周一上午吧": the old value named, an amendment of its line
        if document and language_of(document) != "zh" and re.search(r"\b(?:them|it)\b", found.text):
            found.text = re.sub(r"\b(?:them|it)\b", document, found.text, count=1)  # "Sort them by …"
        elif document and document not in found.text:
            found.text = f"{document}{'' if language_of(document) == 'zh' else ' '}{LEAD_FILLER.sub('', found.text)}"
        elif not document:  # the subject whose value the message changes ("前一周…太赶了。以后提前两周发我")
            at = re.compile(f"(?={re.escape(bare[:3])})").search(nfkc(sentence))
            earlier = _change_of_earlier_subject(sentence, nfkc(sentence), message, False, at) if at else None
            if earlier is not None:
                found.text = earlier.text
        return found
    norm = nfkc(sentence)
    verb = re.compile(re.escape(change.group())).search(norm)
    if verb is None:
        return found
    return _change_of_earlier_subject(sentence, norm, message, False, verb) or found


def _earlier_document(sentence: str, message: str) -> str:
    """The document an earlier sentence of ``message`` opens with (nearest first), else the one the
    sentence's first clause opens with ("随访提醒一周发一次…，能不能改成每天早上发"), or ""."""
    start = message.find(sentence)
    earlier = [message[a:b] for a, b, _ in sentence_spans(message[:start])] if start > 0 else []
    own = fragments(sentence)  # the sentence's own first clause, when the statement starts later in it
    for text in [*reversed(earlier[-2:]), *(own[:1] if len(own) > 1 else [])]:
        m = _OPENS_WITH_DOCUMENT.match(LEAD_FILLER.sub("", nfkc(text.strip()))) or _OPENS_WITH_DOCUMENT_EN.match(
            nfkc(text.strip()))
        if m:
            return m.group(1)
    return ""


def _head_and_rest(frags: list[str]) -> tuple[str, list[str]]:
    return (frags[0], frags[1:]) if frags else ("", [])


def _sentence_topic(sentence: str, frag: str) -> str:
    """The topic the sentence's first clause names ("纪要的事改一下哈，还是给我Word" -> "纪要") when the
    wish clause ``frag`` opens without a subject, else ""."""
    first = fragments(sentence)[0] if fragments(sentence) else ""
    if first == frag or not _NO_SUBJECT.match(LEAD_FILLER.sub("", frag)):
        return ""
    m = re.match(r"^(.{2,12}?)(?:的事|这个事|这块|的话|那个)", LEAD_FILLER.sub("", first))
    return m.group(1) if m else ""


def _value_wish(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    """The clause of ``sentence`` that sets a value (weekday, time, lead time, frequency, channel,
    format, order …) as a wish, as a ``change`` (the merge keeps it only to replace a line)."""
    if _CONFIRMING.search(norm):
        return None  # "query清单按编号排、Excel，这个没变吧": a question whether it still holds
    for frag in fragments(sentence):
        f = nfkc(frag)
        wish = _WISH.search(f)
        if wish is None or f[wish.end(): wish.end() + 1] == "的" or _COMPLAINT.search(f) or _PURPOSE.search(f) or \
                _NOW_IS.match(LEAD_FILLER.sub("", f)) or _DOING_NOW.search(f):
            continue  # "早上发的…" (a relative clause), "周一上午发我根本没空看" (a complaint), "周五汇报要用" (a use)
        if values(f) and not ONE_OFF.search(f) and not (_TASK_NOW.search(f) and not PREFER.search(norm)):
            start = norm.find(f) if f in norm else 0
            if not _trap(norm, start, start + len(f), message, question=question, durable=True):
                if any(_EXCEPT.match(LEAD_FILLER.sub("", f)) for f in fragments(sentence)[1:]):
                    return FoundStatement(LEAD_FILLER.sub("", sentence).strip(), "change")  # a rule and its exception
                return FoundStatement(_sentence_topic(sentence, frag) + LEAD_FILLER.sub("", frag).strip(), "change")
    return None


def _change(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    """A new value for a named subject ("周报还是改到周四", "重点改成…"); not a decision of the day."""
    change = CHANGE.search(norm)
    if not change or question or DECISION.search(norm[: change.start()]) or FOCUS_CHANGE.search(norm[: change.start()]):
        return None  # "接下来劲都往W48上使，…，DMC会定在11月中旬": the focus, found by _implicit
    before = fragment_at(norm, change.start(), change.end())
    before = before[: before.find(change.group())] if change.group() in before else ""
    if not LEAD_FILLER.sub("", before).strip():
        return _change_of_earlier_subject(sentence, norm, message, question, change)
    if _trap(norm, change.start(), change.end(), message, question=question):
        return _TRAPPED
    frags = fragments(sentence)
    idx = next((i for i, f in enumerate(frags) if CHANGE.search(nfkc(f))), 0)
    if idx > 0 and _EXCEPT.match(LEAD_FILLER.sub("", frags[idx])):
        idx = 0  # an exception to the rule the sentence opens with: the rule and its exception
    return FoundStatement(statement_body(LEAD_FILLER.sub("", frags[idx]), frags[idx + 1:]), "change")


def _change_of_earlier_subject(sentence: str, norm: str, message: str, question: bool,
                               change: re.Match[str]) -> FoundStatement | None:
    """A new value with its subject in the message's previous sentence ("访视提醒提前一周太早了…。
    改成提前三天"): the subject (the words before the old value of the same family) leads the
    new value; None when the previous sentence sets no value of that family."""
    new = values(norm[change.end():])
    start = message.find(sentence)
    prior = fragments(message[:start]) if start > 0 else []
    # the nearest clause that names a document, else the nearest clause ("早上8点那份名单我没法看。…
    # 等腾出手都下午了。改成中午12点": the list, not "等腾出手")
    near = list(reversed(prior[-6:]))
    for frag in sorted(near, key=lambda x: (not DOCUMENT.search(nfkc(x)), near.index(x) >= 3)):
        f = nfkc(frag)
        family = next((fam for fam in values(f) if fam in new), None)
        if family is None:
            continue
        if language_of(f) == "en":
            found = _english_change(f, sentence[change.end():] if change.end() else sentence)
            if found is None:
                continue
            return None if _trap(norm, change.start(), change.end(), message, question=question) else found
        topic = LEAD_FILLER.sub("", f[: _value_start(f, family)]).strip()
        topic = re.sub(r"(?:别|不要|不|没|再|还是|改|用|走|发)+$", "", topic)
        if (not topic or values(topic)) and DOCUMENT.search(f):
            return None  # the old value leads the document ("早上8点那份名单我没法看"): an amendment of its line
        if not topic or len(re.sub(r"\W", "", topic)) < 2 or values(topic):
            continue  # a reason with a time in it ("7点半早交班…"): the subject is further back
        if _trap(norm, change.start(), change.end(), message, question=question):
            return None
        frags = fragments(sentence[change.end():])
        return FoundStatement(topic + statement_body(*_head_and_rest(frags)), "change")
    return None


def _english_change(earlier: str, rest: str) -> FoundStatement | None:
    """An English new value whose output the previous sentence names ("Those PDF screening logs are
    useless. Going forward send them as Excel."): the output (its values and determiners out) stands
    for "them" / "it", or leads the statement; None when the sentence names no output."""
    m = _EN_OUTPUT.search(earlier)
    if m is None:
        return None
    noun = re.sub(r"^(?:(?:the|those|these|our|my|your|all)\s+)+", "", m.group().strip(), flags=re.IGNORECASE)
    for pattern in VALUE_PATTERNS.values():
        noun = pattern.sub("", noun)
    noun = " ".join(noun.split())
    body = LEAD_FILLER.sub("", rest).strip()
    if not noun or not body:
        return None
    text = re.sub(r"\b(?:them|it)\b", f"the {noun}", body, count=1, flags=re.IGNORECASE)
    return FoundStatement(text if text != body else f"{noun}: {body}", "change")


def _value_start(text: str, family: str) -> int:
    """Where the first value of ``family`` starts in ``text``."""
    m = VALUE_PATTERNS[family].search(text.casefold())
    return m.start() if m else len(text)


def _remember(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    """What follows 记住 / remember (not an acknowledgement such as 我记住了)."""
    remember = REMEMBER.search(norm)
    if not remember or not norm[remember.end():].strip() or ACK.search(norm[remember.start(): remember.end() + 2]):
        return None
    if _trap(norm, remember.start(), remember.end(), message, question=question):
        return _TRAPPED
    rest = LESSON_LABEL.sub("", sentence[remember.end():])
    if language_of(rest) == "en":
        return FoundStatement(rest, "remember")
    frags = fragments(rest)
    return FoundStatement(statement_body(frags[0], frags[1:]), "remember") if frags else None


def _find_in_sentence(sentence: str, masked: str, message: str, *, question: bool) -> FoundStatement | None:
    norm = nfkc(masked)
    if len(norm) != len(masked):
        norm = masked
    # a withdrawal of something said before ("早上说的那个…先不要了")
    if WITHDRAW.search(norm) and BACK_REFERENCE.search(_EVERY_MORNING.sub("", norm)) and not CHANGE.search(norm):
        return FoundStatement(sentence, "withdraw")
    if HEADS_UP.match(nfkc(message)) and not DURABLE_ZH.search(norm) and not DURABLE_EN.search(norm):
        said = _context(late_context(sentence, norm, message), norm, message, question)
        if said is not None:  # news for the team ("跟大家同步一下：…随访都挪到周六上午做了"): a state note
            return said
    for finder in (_risk_said, _early_context, _durable, _change, _remember):
        found = finder(sentence, norm, message, question)
        if found is _TRAPPED:
            return None
        if found is not None:
            return _with_earlier_subject(found, sentence, message)
    starts = [0, *(m.end() for m in re.finditer(r"[:：]\s*|,\s*", norm))]
    for i, start in enumerate(starts):
        always = ALWAYS_EN.match(norm, start)
        if always and not question and not HYPOTHETICAL.search(norm[:start]):
            at = always.start("kw")
            if i and CONTINUE.match(LEAD_FILLER.sub("", norm[starts[i - 1]:start])):
                at = starts[i - 1]  # the instruction it completes ("please keep dates in the … form, never 14/06")
            return FoundStatement(LEAD_FILLER.sub("", sentence[at:]), "durable")
    habitual = _habitual(sentence, norm, message, question)
    if habitual is not None:
        return _with_earlier_subject(habitual, sentence, message)
    return _context(late_context(sentence, norm, message), norm, message, question)


def _habitual(sentence: str, norm: str, message: str, question: bool) -> FoundStatement | None:
    """A standing rule without a cue: "X should always / must never …", "给CRC的提醒都用中文" (a
    habitual 都 / 一律 before an instruction); not a question, hypothetical, one-off or subject's."""
    m = ALWAYS_MODAL.search(norm) or HABITUAL_ZH.search(norm)
    if m is None or FOCUS_CHANGE.search(norm):  # a new focus with its targets ("…上使：…一次都别漏")
        return _implicit(sentence, norm, message, question)
    if _trap(norm, m.start(), m.end(), message, question=question, durable=True):
        return None
    if m.re is HABITUAL_ZH and _TASK_NOW.search(norm) and not _every_copy(norm):
        # "帮我把query都按中心分组导出", "这周的周报都按中心发我": a task on what is at hand
        return _implicit(sentence, norm, message, question)
    return FoundStatement(LEAD_FILLER.sub("", sentence).strip(), "durable")


def _every_copy(norm: str) -> bool:
    """The sentence is about every copy of an output: a recurring occasion ("每次给PI的周报都…"), what
    goes into a recurring document ("给CRC的访视提醒里把…都写出来") or what the assistant sends
    ("你出的表都…"); not about this week's or this one ("这周的", "这份")."""
    return bool(RECURRING.search(norm) or RECURRING_DOCUMENT.search(norm) or OUTPUT_OF_ASSISTANT.search(norm)) and \
        not ACT_NOW.search(norm) and not ONE_OFF.search(norm)


def find_statements(text: str) -> list[FoundStatement]:
    """Every statement of one user message, in order (see the module docstring).

    A note (记一下 / note: …) gives at most one statement, the rest of the message (none when it
    is a reminder or a one-off); otherwise each sentence gives at most one. Statements shorter
    than 4 word characters, the speaker's own promises and bodies that only point back are
    dropped.

    Returns:
        ``[FoundStatement, ...]`` (texts cleaned; withdrawals keep their sentence); empty when the
        message states nothing durable.
    """
    masked_all = mask_quotes(text)
    out: list[FoundStatement] = []
    note = NOTE.search(nfkc(masked_all)) if len(nfkc(masked_all)) == len(masked_all) else NOTE.search(masked_all)
    if note and re.search(r"[让叫][^，,。！？!?]{1,4}$", text[: note.start()]):
        note = None  # "我让护士记下来了": someone else was told to note it
    lesson = bool(LESSON.search(nfkc(text)))
    if note and text[note.end():].strip():
        rest = text[note.end():]
        first = fragments(rest)[:1]
        # a lesson's story may name a subject; its rule is what must not be a subject's order
        ruled = "".join(x for x, _ in split_statements(rest) if DURABLE_ZH.search(x) or DURABLE_EN.search(x)) \
            if lesson else rest
        lead = re.split(r"[。！？!?；;\n]", text[: note.start()])[-1]  # the note's own sentence before the cue
        if REMINDER.search(rest) or (first and ONE_OFF.search(nfkc(first[0])) and not lesson) or ONE_OFF.search(
                nfkc(lead)) or (
                SUBJECT_ID.search(ruled) and CLINICAL_ORDER.search(nfkc(ruled))):
            return out  # a reminder, a one-off, a subject's clinical order ("记一下：P011以后每次给药前都要先测血压")
        body = ("。" if language_of(rest) == "zh" else ". ").join(s for s, _ in split_statements(rest))
        hint = "Lessons Learned" if lesson else None
        # a lesson with its rule: the rule sentence carries a durable cue; keep the whole note
        cleaned = clean_statement(note_body(rest) if lesson else body)
        if cleaned:
            noted = FoundStatement(cleaned, "note", hint)
            noted.sentence = rest
            out.append(noted)
        return out
    for start, end, question in sentence_spans(text):
        sentence, masked = text[start:end], masked_all[start:end]
        if not sentence.strip():
            continue
        found = _find_in_sentence(sentence, masked, text, question=question)
        if found is None:
            continue
        found.sentence = sentence
        found.text = clean_statement(found.text) if found.kind != "withdraw" else found.text
        if OWN_PROMISE.match(found.text) or ANAPHORA.match(found.text) or _AS_BEFORE.search(found.text) or \
                _PLEASANTRY.match(found.text) or (
                _ASKS_REMINDER.search(found.text) and not _ON_AN_OCCASION.search(found.text)
                and found.kind != "withdraw"):
            continue  # "每月31号提醒我做数据备份": a reminder the reminder skill schedules, not memory
        if len(re.sub(r"\W", "", found.text)) < 4:
            if not values(found.text) or found.kind == "withdraw":
                continue
            found.kind = "change"  # a bare new value ("以后每周发"): kept only where it changes a line
        if lesson:
            found.section_hint = "Lessons Learned"
        out.append(found)
    told = lesson_told(text, question=any(q for _, _, q in sentence_spans(text))) if lesson and not out else None
    if told:
        return [FoundStatement(clean_statement(told), "note", "Lessons Learned")]
    if lesson and len(out) > 1 and _LESSON_OPENS.match(nfkc(text)):
        # "教训：<what happened>。以后<the rule>": one lesson, its story and its rule
        joined = "；".join(re.sub(r"[。.]$", "", f.text) for f in out if f.kind != "withdraw")
        return [FoundStatement(clean_statement(joined), "note", "Lessons Learned")]
    for found in out:
        found.text = _LESSON_IS.sub("", found.text)
    return _instead_kept(_held_off([_another_value(f) for f in out], text))


#: a new risk named after a withdrawn one ("…那条可以撤了，现在要盯的风险是02中心的冷链温度记录")
_NEW_RISK = re.compile(r"(?:现在|目前|接下来)?(?:要盯的|要关注的|主要的|新的)?风险(?:点)?(?:是|为|换成|[:：])\s*(.+)")


def _another_value(found: FoundStatement) -> FoundStatement:
    """A withdrawal of one value followed by another of its kind ("PDF那个算了，还是Word吧", "周五那个
    不要了，改回周三"): a change to the new value, not a withdrawal of the line; a risk withdrawn for a new
    one ("06中心入组慢那条可以撤了，现在要盯的风险是02中心的冷链温度记录"): the new risk, which replaces it."""
    if found.kind != "withdraw":
        return found
    norm = nfkc(found.text)
    cue = WITHDRAW.search(norm)
    if cue is None or len(norm) != len(found.text):
        return found
    risk = _NEW_RISK.search(norm, cue.end())
    if risk is not None:
        changed = FoundStatement("风险：" + found.text[risk.start(1):].strip(" ，,。.;；") + "。", "change")
        changed.sentence = found.sentence
        return changed
    before, after = values(norm[: cue.start()]), values(norm[cue.end():])
    if not before.keys() & after.keys():
        return found
    changed = FoundStatement(found.text[cue.end():].strip(" ，,。.;；"), "change")
    changed.sentence = found.sentence
    return changed


#: the speaker holds a change off ("等寒假结束看看反馈再说，先不动", "先放着别改"): what they would change
#: is not said yet
_HOLD_OFF = re.compile(r"等[^，,。；;]{1,16}再(?:说|议|改|定|弄|看|讨论)|"
                       r"(?:先|暂时|暂且)(?:不|别)(?:动|改|换)(?:了|吧|哈|啊)*(?=[，,。；;!！~～\s]|$)|先放着|"
                       r"\bhold off\b|\bleave it as is for now\b", re.IGNORECASE)
#: what may open a hold's sentence besides punctuation ("算了，先不改了")
_BARE_LEAD = re.compile(r"^[\W_]*(?:(?:算了|还是|那就?|嗯|要不|不过|\bbut\b|\bactually\b)[\W_]*)*$", re.IGNORECASE)
#: where a sentence opens: after a full stop, or after an emoji and a space
_SENTENCE_OPENS = re.compile(r"[。！？!?；;\n]|[^\w\s，,、]\s")


def _held_off(found: list[FoundStatement], text: str) -> list[FoundStatement]:
    """``found`` without a statement the message then holds off: a sentence opening with the
    hold ("…口气软一点😂 等寒假结束看看反馈再说，先不动") takes back the last statement before it; a hold
    inside a statement's own sentence takes back that statement. A hold after a topic of its own
    ("QC清单的格式等下周开完会再定") is about that topic."""
    norm = nfkc(text)
    if len(norm) != len(text):
        return found
    kept = list(found)
    for m in _HOLD_OFF.finditer(norm):
        lead = _SENTENCE_OPENS.split(norm[: m.start()])[-1]
        own = [f for f in kept if f.kind != "withdraw" and f.sentence
               and (at := text.find(f.sentence)) <= m.start() < at + len(f.sentence)]
        before = [f for f in kept if f.kind != "withdraw" and f.sentence and 0 <= text.find(f.sentence) <= m.start()]
        if own:
            kept.remove(own[-1])
        elif before and _BARE_LEAD.match(lead):
            kept.remove(before[-1])
    return kept


def _instead_kept(found: list[FoundStatement]) -> list[FoundStatement]:
    """A "no more X" followed in the same message by what to do instead, a value of X's kind
    ("query清单别再给我xlsx了…。以后直接导CSV"): one statement, the instead (it says both)."""
    kept = list(found)
    for i, no_more in enumerate(found):
        if no_more.kind == "withdraw" or not _NO_MORE.search(nfkc(no_more.text)):
            continue
        kinds = {f for f, p in VALUE_PATTERNS.items() if p.search(nfkc(no_more.text).casefold())}
        if kinds and any(values(later.text).keys() & kinds and not _NO_MORE.search(nfkc(later.text))
                         for later in found[i + 1:]):
            kept.remove(no_more)
    return kept


