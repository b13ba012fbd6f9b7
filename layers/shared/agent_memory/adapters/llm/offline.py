"""The offline provider: deterministic, no network, answers from the assembled context.

It serves local runs and tests and labels every reply as offline. It reads the same
request the real provider would get: for a history question it cites the most relevant
weekly-report lines (ranked by character-bigram / word overlap with the question); for a
memory question the matching hot-memory lines; for a data or QC question it calls the clinical
tools the request offers (``read_clinical_data``, ``list_subjects``, ``qc_check``; see
:mod:`.offline_clinical`) and answers from their results in the user's language.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from agent_memory.adapters.llm import offline_clinical
from agent_memory.adapters.llm.offline_reminders import asks_for_reminder, split_reminder_request
from agent_memory.domain.lexicon import expand_bilingual
from agent_memory.domain.llm import LLMRequest, LLMResponse, Provider
from agent_memory.domain.text import estimate_tokens

OFFLINE_LABEL = "【离线模式 offline】"
_SUBJECT_RE = re.compile(r"\b[Pp]\d{3}\b|(?<![A-Za-z])[Pp]\d{3}(?!\d)")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_STOP_BIGRAMS = {"我们", "之前", "为什么", "什么", "一下", "的是", "是不", "有没", "没有", "了吗"}


#: Function characters that carry no topic (used only for single-character terms).
_STOP_CHARS = frozenset("的了吗呢吧啊是我们你他她它有没在和与之前什么为怎么哪个这那一下过都也就还把被")


def _terms(text: str) -> set[str]:
    """Latin words (3+ characters), CJK character bigrams and single CJK characters.

    Single characters let ``太慢`` meet ``缓慢`` and ``解决`` meet ``决定``; their weight is
    low (see :func:`rank_lines`), so bigram matches still dominate.
    """
    text = text.lower()
    terms = {w for w in re.findall(r"[a-z0-9]{3,}", text)}
    cjk_runs = re.findall(r"[\u4e00-\u9fff]+", text)
    for run in cjk_runs:
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
        terms.update(ch for ch in run if ch not in _STOP_CHARS)
    return terms - _STOP_BIGRAMS


@functools.lru_cache(maxsize=4096)
def _line_terms(line: str) -> frozenset[str]:
    """:func:`_terms` of a memory line, remembered for the last 4,096 lines: the hot memory's
    lines recur on every turn of a project (the question's terms are not kept)."""
    return frozenset(_terms(line))


def rank_lines(question: str, lines: Sequence[str], top: int = 3) -> list[str]:
    """The ``top`` lines most relevant to ``question`` (ties: earlier first).

    A line scores the sum of the IDF weights (over ``lines``) of the terms it shares with
    the question; multi-character terms weigh double. A term found in nearly every line
    (e.g. ``入组`` in a history book of weekly enrolment reports) therefore counts little
    and the lines that share the question's rarer words rank first. Deterministic.
    """
    q = _terms(question)
    line_terms = [_line_terms(line) & q for line in lines]
    df: dict[str, int] = {}
    for shared in line_terms:
        for t in shared:
            df[t] = df.get(t, 0) + 1
    n = len(lines)

    def weight(term: str) -> float:
        return math.log((n + 1) / (df[term] + 0.5)) * (2.0 if len(term) > 1 else 1.0)

    scored = [(sum(weight(t) for t in sorted(shared)), -i, line)
              for i, (shared, line) in enumerate(zip(line_terms, lines, strict=True))]
    scored = [s for s in scored if s[0] > 0]
    scored.sort(reverse=True)
    return [line for _, _, line in scored[:top]]


#: A report point ``[决策] text [m-1,m-2]``: its label, and its text without the message ids.
_POINT = re.compile(r"^\[([^\]]{1,8})\]\s*[:：]?\s*(.*?)(?:\s*\[[^\]\[]*\])?\s*$")
#: A question about a decision or its reason: decision points answer it first.
_ASKS_DECISION = re.compile(
    r"决定|决策|定的|为什么|为啥|原因|怎么解决|如何解决|\bdecid|\bdecision|\bwhy\b|\breason|\bagree", re.IGNORECASE
)
_DECISION_LABELS = ("决策", "decision", "decisions")


def history_answer(question: str, history_block: str, *, top: int = 3) -> str:
    """The offline answer to a history question from the prompt's history block.

    The weekly-report points most relevant to the question (:func:`rank_lines` on the question
    expanded with the bilingual lexicon, so an English question finds Chinese reports), only the
    decision points among them when the question asks for a decision or a reason, cited in date order as
    ``- 2026-W06 决策：<text>`` (the week, the section, the point's own words; no message ids).
    A block of a period the question named holds only that period: when no point shares the
    question's words, the period's first points are cited; the weeks it names as having no report
    are said so, and "no report" is the answer only when no week of the period has one.
    """
    week = ""
    cited: list[tuple[str, str, str]] = []  # (week, label, text)
    period = False
    missing = ""
    for raw in history_block.splitlines():
        ln = raw.strip()
        if ln.startswith("Period asked about:"):
            period = True
        elif ln.startswith(_NO_REPORT):
            missing = ln[len(_NO_REPORT):].strip().rstrip(".")
        elif ln.startswith("## "):
            week = ln[3:].strip()
        elif (m := _POINT.match(ln)) and week:
            cited.append((week, m.group(1), m.group(2)))
    english = not _CJK.search(question)
    lines = [f"{w} {label} {text}" for w, label, text in cited]
    ranked = rank_lines(expand_bilingual(question), lines, top=top * 2)
    if _ASKS_DECISION.search(question):
        decisions = [ln for ln in ranked if ln.split(" ", 2)[1].casefold() in _DECISION_LABELS]
        ranked = decisions or ranked
    chosen = set(ranked[:top]) or (set(lines[:top]) if period else set())
    picked = [(w, label, text) for (w, label, text), ln in zip(cited, lines, strict=True) if ln in chosen]
    gap = (f"\n(No weekly report for {missing}.)" if english else f"\n（{missing} 没有周报。）") if missing else ""
    if not picked:
        if period and missing and not cited:
            return f"No weekly report for {missing}." if english else f"{missing} 没有周报。"
        return ("No entry in the weekly reports (history book) matches this question." if english
                else "周报中没有找到与该问题直接相关的记录。")
    head = ("From the weekly reports (history book), in date order:" if english
            else "根据周报（history book），按时间顺序：")
    return head + "\n" + "\n".join(f"- {w} {label}：{text}" for w, label, text in picked) + gap


#: How the history block names the weeks of a period without a report.
_NO_REPORT = "No weekly report for:"


class OfflineLLM:
    """Deterministic stand-in for Claude (see module docstring). ``provider == "offline"``."""

    provider: Provider = "offline"

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer ``request`` from its own content; never raises for well-formed requests."""
        if request.output_schema is not None:
            return self._structured_output(request)
        if request.tool_choice and request.tool_choice.get("type") == "tool":
            return self._structured(request)
        last = request.messages[-1] if request.messages else {"role": "user", "content": ""}
        blocks = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
        tool_results = [b for b in blocks if b.get("type") == "tool_result"]
        question = _question(request.messages)
        intents = set(request.metadata.get("intents", []))
        reminder = self._reminders(request, question, tool_results)
        if reminder is not None:
            return reminder
        if tool_results:
            text = self._answer_from_tools(tool_results, intents, request.messages, question)
        else:
            subjects = sorted(set(s.upper() for s in _SUBJECT_RE.findall(question)))
            wants_tools = bool(request.tools) and (request.tool_choice or {}).get("type") != "none"
            if wants_tools and intents & {"QUERY_DATA", "QC_TASK"}:
                # Deterministic (same request -> same id) but unique within a conversation:
                # the whole conversation is hashed, not only the question, so asking the
                # same question twice never yields two tool_use blocks with one id.
                conversation = json.dumps(request.messages, ensure_ascii=False, sort_keys=True, default=str)
                tag = hashlib.sha256(conversation.encode("utf-8")).hexdigest()[:10]
                calls = offline_clinical.plan_tool_uses({t.name for t in request.tools}, intents, subjects)
                uses = [
                    {"type": "tool_use", "id": f"toolu_offline_{tag}_{i}", "name": name, "input": tool_input}
                    for i, (name, tool_input) in enumerate(calls)
                ]
                return self._reply(request, uses, "tool_use")
            text = self._answer_from_context(request, question, intents)
        ack = _acknowledgement(request.messages, question)
        if ack and intents <= {"GENERAL"}:
            text = ""  # only standing directives: the acknowledgement is the whole reply
        return self._finish(request, OFFLINE_LABEL + (ack + text).strip())

    # ---------------------------------------------------------------- helpers
    def _reminders(
        self, request: LLMRequest, question: str, tool_results: list[dict[str, Any]]
    ) -> LLMResponse | None:
        """The reminder skill offline: a reminder request (``…提醒我…``, ``remind me …``), a listing
        (``我的提醒``, ``list my reminders``) or a cancellation (``取消提醒 r-…``) becomes the matching
        tool call when the reminder tools are offered; their result becomes the reply. None: not a
        reminder turn."""
        names = {t.name for t in request.tools or []}
        if "schedule_reminder" not in names:
            return None
        zh = bool(_CJK.search(question))
        if tool_results:
            used = _tool_names(request.messages)
            if not all(used.get(str(r.get("tool_use_id"))) in _REMINDER_TOOLS for r in tool_results):
                return None
            parts = [_reminder_reply(r, zh) for r in tool_results]
            return self._finish(request, OFFLINE_LABEL + "\n".join(parts))
        call: tuple[str, dict[str, Any]] | None = None
        cancel = _CANCEL_RE.search(question)
        if cancel:
            call = ("cancel_reminder", {"reminder_id": cancel.group("id")})
        elif _LIST_RE.search(question):
            call = ("list_reminders", {})
        else:
            split = split_reminder_request(question)
            if split is not None:
                call = ("schedule_reminder", {"text": split[1], "when": split[0]})
            elif _REMIND_CUE.search(question) and asks_for_reminder(question):
                call = ("schedule_reminder", {"text": question.strip(), "when": ""})
        if call is None:
            return None
        conversation = json.dumps(request.messages, ensure_ascii=False, sort_keys=True, default=str)
        tag = hashlib.sha256(conversation.encode("utf-8")).hexdigest()[:10]
        use = {"type": "tool_use", "id": f"toolu_offline_{tag}_r", "name": call[0], "input": call[1]}
        return self._reply(request, [use], "tool_use")

    def _answer_from_context(self, request: LLMRequest, question: str, intents: set[str]) -> str:
        system = {b.name: b.text for b in request.system}
        if "history" in system:
            # A trend is read across more weeks than a single past event.
            return history_answer(question, system["history"], top=6 if "ANALYZE_TREND" in intents else 3)
        hot_lines = [ln.strip()[2:] for ln in system.get("hot_memory", "").splitlines() if ln.strip().startswith("- ")]
        if "MEMORY_RECALL" in intents:
            best = rank_lines(question, hot_lines, top=2) or hot_lines[:1]
            return "记得，热记忆中记录着：\n" + "\n".join(f"- {b}" for b in best)
        if "GENERATE_REPORT" in intents:
            context = [ln for ln in hot_lines if "任务" in ln or "风险" in ln] or hot_lines[:2]
            return "本周周报草稿（当前数据，不含历史）：\n" + "\n".join(f"- {c}" for c in context)
        if "QC_TASK" in intents:
            return "质控仅基于当前数据执行；未指定受试者，未发现可核查的记录。"
        if "CONSULTATION" in intents:
            session = _session_block(request.messages)
            # Only the symptom lines (the block also lists diagnosis records and the summary).
            section = (
                session.split("Symptoms so far:", 1)[1].split("\n\n", 1)[0] if "Symptoms so far:" in session else ""
            )
            symptoms = []
            for ln in section.splitlines()[1:]:
                if not ln.startswith("- "):
                    break
                symptoms.append(ln[2:])
            noted = "；".join(symptoms) if symptoms else "您描述的情况"
            return f"已记录：{noted}。请问症状持续多久了？有没有发烧？"
        return "已收到。"

    @staticmethod
    def _answer_from_tools(
        results: list[dict[str, Any]], intents: set[str], messages: Sequence[dict[str, Any]], question: str
    ) -> str:
        parts = []
        names = offline_clinical.tool_names_of(results, list(messages))
        zh = offline_clinical.is_chinese(question)
        for r in results:
            try:
                data = json.loads(r.get("content") or "{}")
            except json.JSONDecodeError:
                data = {"error": "unreadable tool result"}
            said = offline_clinical.answer(names.get(str(r.get("tool_use_id")), ""), data, zh=zh,
                                           qc="QC_TASK" in intents) if isinstance(data, dict) else None
            if said is not None:
                parts.append(said)
                continue
            if "error" in data:
                parts.append(str(data["error"]))
                continue
            if "subject" in data:
                s = data["subject"]
                sid = s.get("subject_id")
                status = s.get("status")
                if "QC_TASK" in intents:
                    missing = [f for v in s.get("visits", []) for f in v.get("missing_fields", [])]
                    parts.append(
                        f"{sid} 质控：缺失字段 {len(missing)} 个"
                        + (f"（{', '.join(missing[:5])}）" if missing else "")
                        + f"，未关闭 Query {s.get('open_queries', 0)} 个。"
                    )
                elif status == "enrolled" or s.get("enrolment_date"):
                    parts.append(f"{sid} 已入组，入组日期 {s.get('enrolment_date')}（状态：{status}）。")
                else:
                    parts.append(f"{sid} 当前状态：{status}。")
            elif "summary" in data:
                sm = data["summary"]
                parts.append(
                    f"共 {sm.get('subjects')} 名受试者，已入组 {sm.get('enrolled')} 名（目标 {sm.get('target')}）。"
                )
        return "\n".join(parts) or "没有读到数据。"

    def _structured(self, request: LLMRequest) -> LLMResponse:
        """Forced-tool calls (classifiers, extractors) are not answered offline: the caller
        falls back to its rule-based implementation (an empty tool input fails validation)."""
        name = (request.tool_choice or {}).get("name", "tool")
        return self._reply(
            request, [{"type": "tool_use", "id": "toolu_offline_s", "name": name, "input": {}}], "tool_use"
        )

    def _structured_output(self, request: LLMRequest) -> LLMResponse:
        """Structured-output calls (``output_schema``) are not answered offline either: the reply is
        the empty JSON object ``{}``, which fails the caller's validation, so it falls back to its
        rule-based implementation."""
        return self._reply(request, [{"type": "text", "text": "{}"}], "end_turn")

    def _finish(self, request: LLMRequest, text: str) -> LLMResponse:
        if estimate_tokens(text) > request.max_tokens:
            cut = text[: max(1, request.max_tokens)]
            return self._reply(request, [{"type": "text", "text": cut}], "max_tokens")
        return self._reply(request, [{"type": "text", "text": text}], "end_turn")

    @staticmethod
    def _reply(request: LLMRequest, content: list[dict[str, Any]], stop: str) -> LLMResponse:
        return LLMResponse(
            content=content,
            stop_reason=stop,
            provider="offline",
            model="offline",
        )


_REMINDER_TOOLS = frozenset({"schedule_reminder", "list_reminders", "cancel_reminder"})
_CANCEL_RE = re.compile(r"(?:取消|删除|删掉|cancel|delete|remove).{0,20}?(?P<id>r-[0-9a-f]{6,32})", re.IGNORECASE)
_LIST_RE = re.compile(r"(?:我的|我有|有哪些|列出|查看|看看).{0,6}提醒|提醒(?:列表|有哪些)|"
                      r"\b(?:list|show|what are)\b.{0,12}\breminders\b", re.IGNORECASE)
_REMIND_CUE = re.compile(r"提醒我|\bremind me\b", re.IGNORECASE)


def _tool_names(messages: Sequence[dict[str, Any]]) -> dict[str, str]:
    """tool_use id -> tool name, over the conversation's assistant messages."""
    out: dict[str, str] = {}
    for m in messages:
        if m["role"] == "assistant" and isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    out[str(b.get("id"))] = str(b.get("name"))
    return out


def _reminder_reply(result: dict[str, Any], zh: bool) -> str:
    """The reply to one reminder tool result: its ready sentence, the listing, or why nothing was done."""
    content = str(result.get("content") or "")
    if result.get("is_error"):
        return (f"没有设置提醒：{content}" if zh else f"Nothing was scheduled: {content}")
    try:
        data = json.loads(content)
    except json.JSONDecodeError:
        return content
    if "message" in data:
        return str(data["message"])
    if "reminders" in data:
        items = data["reminders"]
        if not items:
            return "你目前没有进行中的提醒。" if zh else "You have no active reminders."
        head = "你的提醒：" if zh else "Your reminders:"
        return head + "\n" + "\n".join(
            f"- {r['reminder_id']}: {r['text']} — {r['when']} (next {r['next_fire_local']})" for r in items
        )
    if data.get("status") == "cancelled":
        return f"已取消提醒「{data['text']}」。" if zh else f"Cancelled the reminder \"{data['text']}\"."
    return content


def _session_block(messages: Sequence[dict[str, Any]]) -> str:
    """The ``<session>`` block the prompt sends with the user's message (after the last cache
    breakpoint; docs/architecture.md, "Prompt caching"), or ``""``."""
    for m in reversed(messages):
        if m["role"] == "user" and isinstance(m["content"], list):
            if all(block.get("type") == "tool_result" for block in m["content"]):
                continue  # a step of the tool loop: the session block came with the question
            for block in m["content"]:
                if block.get("type") == "text" and str(block.get("text", "")).startswith("<session"):
                    return str(block["text"])
            return ""
    return ""


#: How the session block names the standing directives a message states (chat/prompt.py).
_DIRECTIVES = re.compile(r"^Standing directives in this message: (.+)$", re.MULTILINE)


#: How the session block says the directives would relax System Rules (chat/session_block.py):
#: each rule singled out is quoted; none quoted names the System Rules as a whole.
_RELAXES = re.compile(r"^NOT ACCEPTED: this message would relax (.+?) \(hot memory\)", re.MULTILINE)
_RELAXED_RULE = re.compile(r'the System Rule "(.+?)"(?= and the System Rule "|$)')


#: How the session block says the message asks, this once, to relax System Rules (chat/session_block.py).
_WITHDRAWN = re.compile(r"^Withdrawn in this message: (.+)$", re.MULTILINE)
_RELAXES_ONCE = re.compile(r"^RULE STANDS: this message asks, this once, to relax (.+?) \(hot memory\)", re.MULTILINE)


def _rule_stands(rules: Sequence[str], zh: bool) -> str:
    """The reply to a one-off request relaxing ``rules`` (texts; none: the System Rules as a whole):
    the rule stands and the assistant does not do it."""
    if zh:
        named = "项目规则「" + "」「".join(rules) + "」" if rules else "项目的系统规则"
        return f"这个请求会放宽{named}；该规则仍然有效，助手不会这样做（规则只能由项目管理员修改）。\n"
    named = "rule " + " and ".join(f'"{r}"' for r in rules) if rules else "System Rules"
    return (f"That would relax the project's {named}: the rule stands, so the assistant will not do it"
            " (only the project admin changes a rule).\n")


def _acknowledgement(messages: Sequence[dict[str, Any]], question: str) -> str:
    """"好的，以后…。" / "Noted, from now on: …" for the standing directives the session block names
    (kept by the nightly distillation, not done now); when the block says they would relax a System
    Rule, the refusal naming it (not applied, sent to the project admin's review) instead; when it
    says the message asks, this once, to relax one, that the rule stands (:func:`_rule_stands`); or ""."""
    block = _session_block(messages)
    zh = bool(_CJK.search(question))
    taken_back = "好的，那条不作数了，不会记下。" if zh else "OK, withdrawn: it will not be kept."
    if _WITHDRAWN.search(block) and not _DIRECTIVES.search(block):
        return taken_back + "\n"
    once = _RELAXES_ONCE.search(block)
    if once is not None:
        return _rule_stands(_RELAXED_RULE.findall(once.group(1)), zh)
    m = _DIRECTIVES.search(block)
    if m is None:
        return ""
    refused = _RELAXES.search(block)
    if refused is not None:
        rules = _RELAXED_RULE.findall(refused.group(1))
        if zh:
            named = "项目规则「" + "」「".join(rules) + "」" if rules else "项目的系统规则"
            return f"这条指示会放宽{named}，所以不会生效，已转交项目管理员审核。\n"
        named = "rule " + " and ".join(f'"{r}"' for r in rules) if rules else "System Rules"
        return f"That would relax the project's {named}, so it is not applied; it goes to the project admin's review.\n"
    said = [s.strip() for s in m.group(1).split(" | ") if s.strip()]
    if zh:
        return "".join(f"好的，以后{s}" if i == 0 else s for i, s in enumerate(said)) + "\n"
    return "Noted, from now on: " + " ".join(said) + "\n"


def _question(messages: Sequence[dict[str, Any]]) -> str:
    """The text of the last user message that is not only tool results."""
    for m in reversed(messages):
        if m["role"] != "user":
            continue
        content = m["content"]
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content if b.get("type") == "text"]
        if texts:
            return texts[-1]
    return ""
