"""Standing directives versus tasks (docs/architecture.md, "Intents").

A standing directive ("以后周报周一发", "记住：QC清单以后直接贴表格", "From now on …") is kept by the
nightly distillation; the turn that states it only acknowledges it: it asks for no report, QC run,
look-up or tool call now, whatever its words name. A message may also ask for something now
("以后周报周一发，这周的先发我"): that part is a task like any other.

A directive that would relax one of the project's System Rules is never acknowledged as accepted:
:func:`rules_relaxed_by_directives` judges the message with the distillation's own guard
(:func:`agent_memory.hot_memory.relaxation.rules_relaxed_by`), so the turn says which rule it would
relax, that it is not applied, and that it goes to the project admin's review (the nightly
distillation queues it there). A message without standing directives that asks, this once, for what
a rule forbids is judged the same way (:func:`rules_relaxed_once`): the turn says the rule stands
and that the assistant does not do it.

The message is cut with the distillation's own statement finder
(:func:`agent_memory.hot_memory.statements.directive_parts`, the same kinds of wording it
distils): the standing statements, and the fragments outside them. The intents of the message are
those of what it asks for now:

- nothing outside the statements, or nothing there that is a task or asks for something now
  ("表格就够", "门诊忙"): no task intent at all;
- a part with its own subject ("P011 入组了没", "生成这周的周报"): that part's intents;
- a part that only points back to the statement's subject ("这周的先发我", "先把P001到P010查一遍",
  "run it on P018 now"; it starts with 先 / 现在 / 顺便 / now …, names it / that, or names no
  task of its own): the task the statement is about (QC, a report, the project's data).

Deterministic; nothing here logs message text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_memory.domain.jobs import SYSTEM_RULES
from agent_memory.domain.models import HISTORY_INTENTS, HotMemoryLine, Intent
from agent_memory.hot_memory.analysis import nfkc
from agent_memory.hot_memory.relaxation import does_what_rule_forbids, relaxation_probe, rules_relaxed_by
from agent_memory.hot_memory.statements import ACT_NOW, classify_section, directive_parts

#: Intents that make a turn do something now: a look-up, a QC run, a report, the history book.
TASK_INTENTS = frozenset({Intent.QUERY_DATA, Intent.QC_TASK, Intent.GENERATE_REPORT, *HISTORY_INTENTS})
#: A part that continues the statement's subject ("先…", "现在…", "顺便…", "and … now").
_CONTINUES = re.compile(r"^\s*(?:[,，]\s*)?(?:先|现在|今天|马上|顺便|这周的|本周的|这个月的|and\b|also\b|now\b)",
                        re.IGNORECASE)
#: A reminder request is the reminder skill's task, not a standing directive ("以后每周一提醒我…").
_REMINDER_ASK = re.compile(r"提醒我|给我设(?:个|一个)?提醒|\bremind me\b", re.IGNORECASE)


@dataclass(frozen=True)
class DirectiveSplit:
    """``statements``: the standing directives of a message (as the distiller words them);
    ``task``: the message outside them (fragments joined; "" when it asks nothing now)."""

    statements: tuple[str, ...]
    task: str

    @property
    def asks_now(self) -> bool:
        """The part outside the statements asks for something now (its words, not its intents)."""
        return bool(self.task) and bool(ACT_NOW.search(nfkc(self.task)))


def split_directives(text: str) -> DirectiveSplit:
    """The standing directives of ``text`` and what it asks for now (see the module docstring).
    A message asking to be reminded is a reminder request: no directive is split off it."""
    statements, task = directive_parts(text)
    if not statements or _REMINDER_ASK.search(nfkc(text)):
        return DirectiveSplit((), text)
    joiner = "，" if re.search(r"[\u4e00-\u9fff]", " ".join(task)) else ", "
    return DirectiveSplit(tuple(statements), joiner.join(f.strip() for f in task if f.strip()))


def intents_now(split: DirectiveSplit, classify: Callable[[str], Sequence[Intent]]) -> tuple[Intent, ...]:
    """The intents of a message holding standing directives: those of what it asks for now.

    Args:
        split: :func:`split_directives` of the message (with at least one statement).
        classify: the rule classification of a text (its intents).

    Returns:
        The part's own intents when it has a subject of its own; the intent of the statements'
        subject (QC, a report, data) when the part points back to it ("这周的先发我", "run it on
        P018 now", "先查一下P002"); ``(GENERAL,)`` when the message asks for nothing now but to
        keep the directives.
    """
    part = tuple(classify(split.task)) if split.task else ()
    own = tuple(i for i in part if i in TASK_INTENTS)
    points_back = bool(_CONTINUES.match(split.task) or _POINTS_BACK.search(split.task))
    if own and not points_back:
        return part
    if own or split.asks_now:
        subject = subject_intent(split.statements)
        if subject is not None:
            return (subject, *(i for i in part if i not in TASK_INTENTS and i is not Intent.GENERAL))
        if own:
            return part
    rest = tuple(i for i in part if i not in TASK_INTENTS and i is not Intent.GENERAL)
    return rest or (Intent.GENERAL,)


#: What a standing statement is about, by the task it names: QC, a report, the project's data
#: (first match wins: a QC report is QC).
_SUBJECTS: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    (Intent.QC_TASK, re.compile(r"质控|核查|稽查|sdv|(?<![a-z])qc(?![a-z])|quality check|data check", re.IGNORECASE)),
    (Intent.GENERATE_REPORT, re.compile(r"周报|月报|季报|年报|日报|报告|简报|汇报|\breports?\b|\bdigest\b",
                                        re.IGNORECASE)),
    (Intent.QUERY_DATA, re.compile(r"受试者|入组|访视|随访|筛选|化验|偏离|超窗|数据|\bsubjects?\b|\benrol|"
                                   r"\bvisits?\b|\bscreen|\blabs?\b|\bdeviations?\b", re.IGNORECASE)),
)
#: A part pointing back to what the statement is about ("run it", "send me that").
_POINTS_BACK = re.compile(r"\b(?:it|that|them|this one)\b|这个|那个", re.IGNORECASE)


def subject_intent(statements: Sequence[str]) -> Intent | None:
    """The task the statements are about (:data:`_SUBJECTS`), or None."""
    text = nfkc(" ".join(statements))
    return next((intent for intent, rx in _SUBJECTS if rx.search(text)), None)


def without_tasks(intents: Sequence[Intent]) -> tuple[Intent, ...]:
    """``intents`` without the task intents (``(GENERAL,)`` when none is left)."""
    rest = tuple(i for i in intents if i not in TASK_INTENTS)
    return rest or (Intent.GENERAL,)


def _system_rules(lines: Sequence[HotMemoryLine]) -> list[HotMemoryLine]:
    """The project's admin ``System Rules`` lines, in document order."""
    return [ln for ln in lines if ln.source == "admin" and ln.section == SYSTEM_RULES]


def _named(judged: Sequence[list[HotMemoryLine] | None], rules: Sequence[HotMemoryLine]) -> tuple[str, ...] | None:
    """The texts of the rules the guard's answers single out (None: none relaxed; ``()``: the rules
    as a whole; a rule is singled out when fewer than all are relaxed)."""
    if all(found is None for found in judged):
        return None
    named = [found[0].text for found in judged if found and (len(found) < len(rules) or len(rules) == 1)]
    return tuple(dict.fromkeys(named))


def rules_relaxed_by_directives(directives: Sequence[str], message: str,
                                lines: Sequence[HotMemoryLine]) -> tuple[str, ...] | None:
    """The System Rules the standing ``directives`` of ``message`` would relax, judged as the
    nightly distillation judges them (docs/architecture.md, "Hot memory": each statement read with
    its whole message against the admin's System Rules; a message that relaxes a rule holds every
    statement of it).

    Args:
        directives: the message's standing directives (:func:`split_directives`).
        message: the user's message (as screened by the identifier firewall).
        lines: the project's hot-memory lines; its admin ``System Rules`` lines are the rules.
    Returns:
        None when no directive relaxes a rule; else the texts of the rules singled out, best match
        first, without repeats (``()``: the directives ask to relax the System Rules as a whole).
    """
    rules = _system_rules(lines)
    return _named([rules_relaxed_by(d, rules, message) or _forbidden(d, rules, message) for d in directives], rules)


def _forbidden(directive: str, rules: Sequence[HotMemoryLine], message: str) -> list[HotMemoryLine] | None:
    """A preference doing what a rule forbids in the rule's own words, as the distillation holds it
    (:func:`agent_memory.hot_memory.relaxation.does_what_rule_forbids`; preferences only)."""
    if classify_section(directive) != "User Preferences":
        return None
    return does_what_rule_forbids(directive, rules, message) or None


def _probe_judged(text: str, rules: Sequence[HotMemoryLine]) -> list[HotMemoryLine] | None:
    """The distiller's judgement of a message stating nothing durable: its relaxation probe (the
    sentence asking for what a safeguard forbids) read with the whole message; None: no probe, or
    it relaxes no rule."""
    probe = relaxation_probe(text)
    return None if probe is None else rules_relaxed_by(probe, rules, text)


def rules_relaxed_once(message: str, lines: Sequence[HotMemoryLine], earlier: str = "") -> tuple[str, ...] | None:
    """The System Rules a message without standing directives asks, this once, to relax
    ("这次这个偏离就别记了", "just this once, fill in the missing lab value from last visit", "AE相关性你
    直接判断就行"): judged as the nightly distillation judges such a message (its relaxation probe,
    :func:`agent_memory.hot_memory.relaxation.relaxation_probe`, read with the whole message against
    the admin's System Rules; docs/architecture.md, "Hot memory"), so the turn says the rule stands.

    Args:
        message: the user's message (as screened by the identifier firewall).
        lines: the project's hot-memory lines; its admin ``System Rules`` lines are the rules.
        earlier: the user's previous message of the session ("" for none): a message that relaxes
            no rule on its own words is read after it, since it may only point back to its topic
            ("Let's just not put it in the log this time" after a deviation was told); it counts only
            when the earlier message, on its own, relaxed nothing (that one was judged in its turn).
    Returns:
        None when the message relaxes no rule; else the texts of the rules singled out, best match
        first (``()``: the System Rules as a whole).
    """
    rules = _system_rules(lines)
    if not rules:
        return None
    own = _probe_judged(message, rules)
    if own is not None or not earlier.strip() or _probe_judged(earlier, rules) is not None:
        return _named([own], rules)
    return _named([_probe_judged(f"{earlier}\n{message}", rules)], rules)


__all__ = ["TASK_INTENTS", "DirectiveSplit", "intents_now", "rules_relaxed_by_directives", "rules_relaxed_once",
           "split_directives", "subject_intent", "without_tasks"]
