"""The offline provider's clinical-data turns: which tool to call, and the answer from its result.

It calls the same tools a real model would (``read_clinical_data``, ``list_subjects``,
``qc_check``; only ``read_clinical_data`` when the project uses the demo file) and answers in the
user's language (Chinese when the question holds CJK characters, else English). Results are the
JSON the tools return (``agent_memory.chat.clinical_tools``); an error result becomes a plain
sentence (a subject not found, the data source unavailable), never a raw error.
"""

from __future__ import annotations

import json
import re
from typing import Any

_CJK = re.compile(r"[\u4e00-\u9fff]")
_ENROL = re.compile(r"enrol|enroll|入组|random|随机", re.IGNORECASE)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def is_chinese(text: str) -> bool:
    """Answer in Chinese when the question holds CJK characters."""
    return bool(_CJK.search(text))


def plan_tool_uses(tool_names: set[str], intents: set[str], subjects: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The (tool, input) calls for a data or QC question, given the tools the request offers."""
    if "QC_TASK" in intents and "qc_check" in tool_names:
        return [("qc_check", {"subject_ids": subjects or "all"})]
    if subjects:
        return [("read_clinical_data", {"subject_id": s}) for s in subjects[:3]]
    if "list_subjects" in tool_names:
        return [("list_subjects", {})]
    return [("read_clinical_data", {})]


_LEGACY_NOT_FOUND = re.compile(r"^subject (\S+) not found$")


def answer(name: str, data: dict[str, Any], *, zh: bool, qc: bool) -> str | None:
    """The sentence for one result of a clinical tool; None when ``data`` is not such a result."""
    legacy = _LEGACY_NOT_FOUND.match(str(data.get("error", "")))
    if legacy:  # the demo file's "subject P999 not found"
        return _error({"error": "subject_not_found", "subject_id": legacy.group(1)}, zh)
    if "error" in data and isinstance(data.get("error"), str) and data["error"].islower() and "_" in data["error"]:
        return _error(data, zh)
    if name == "list_subjects" and "by_status" in data:
        return _enrolment(data, zh)
    if name == "qc_check" and "findings" in data:
        return _qc(data, zh)
    if name == "read_clinical_data" and "events" in data:
        return _subject(data, zh, qc)
    return None


#: Tool errors where nothing reached the source: what the project admin must set (Chinese, English).
_UNUSABLE = {
    "source_token_missing": ("本项目尚未设置 REDCap 令牌（或令牌不适用于当前地址），未访问数据源；已通知管理员。",
                             "The project's REDCap token is not set (for this address); the source was not "
                             "contacted and the admins have been alerted."),
    "source_token_unreadable": ("本项目的 REDCap 令牌无法读取，未访问数据源；已通知管理员。",
                                "The project's REDCap token cannot be read; the source was not contacted and the "
                                "admins have been alerted."),
    "source_egress_refused": ("出站策略拒绝了该数据源地址，未发送任何请求；已通知管理员。",
                              "The data source is refused by the egress policy; nothing was sent and the admins "
                              "have been alerted."),
}


def _error(data: dict[str, Any], zh: bool) -> str:
    code = data["error"]
    if code == "subject_not_found":
        return f"未找到受试者 {data.get('subject_id')}。" if zh else f"Subject {data.get('subject_id')} was not found."
    if code == "source_unavailable":
        return ("临床数据源（REDCap）暂时无法访问，本次无法读取当前数据，请稍后再试。" if zh
                else "The clinical data source (REDCap) is unavailable right now; please try again later.")
    if code == "source_auth":
        return ("临床数据源拒绝了本项目的访问凭据，已通知管理员。" if zh
                else "The clinical data source refused this project's credentials; the admins have been alerted.")
    if code in _UNUSABLE:
        return _UNUSABLE[code][0 if zh else 1]
    return f"读取临床数据失败（{code}）。" if zh else f"Reading the clinical data failed ({code})."


def _enrolment(data: dict[str, Any], zh: bool) -> str:
    by_status = "，".join(f"{k} {v}" for k, v in sorted(data["by_status"].items()))
    if zh:
        return (f"目前共入组 {data['enrolled']} 人（共 {data['subjects']} 名受试者：{by_status}）；"
                f"首例入组 {data.get('first_enrolment')}，最近一例 {data.get('latest_enrolment')}。")
    return (f"{data['enrolled']} subjects enrolled so far ({data['subjects']} subjects: {by_status}); "
            f"first enrolment {data.get('first_enrolment')}, latest {data.get('latest_enrolment')}.")


def _qc(data: dict[str, Any], zh: bool) -> str:
    findings = data["findings"]
    kinds_zh = {"required_missing": "必填缺失", "out_of_range": "超出范围", "date_order": "日期顺序错误",
                "invalid_value": "格式错误", "form_incomplete": "表单未完成"}
    lines = []
    for f in findings[:10]:
        where = f"{f['subject_id']} {f.get('event_label') or f.get('event', '')}"
        what = f.get("label") or f["field"]
        kind = kinds_zh.get(f["kind"], f["kind"]) if zh else f["kind"].replace("_", " ")
        value = f" = {f['value']}" if f.get("value") else ""
        expected = (f"（应为 {f['expected']}）" if zh else f" (expected {f['expected']})") if f.get("expected") else ""
        sep = "：" if zh else ": "
        lines.append(f"- {where}{sep}{what} {kind}{value}{expected}")
    if zh:
        head = f"质控（仅当前数据）：检查 {data['checked_subjects']} 名受试者，发现 {len(findings)} 个问题。"
        if not findings:
            head = f"质控（仅当前数据）：检查 {data['checked_subjects']} 名受试者，未发现问题。"
    else:
        head = f"QC (current data only): {data['checked_subjects']} subject(s) checked, {len(findings)} finding(s)."
    return "\n".join([head, *lines])


def _subject(data: dict[str, Any], zh: bool, qc: bool) -> str:
    sid = data.get("subject_id")
    values: dict[str, Any] = {}
    incomplete: list[str] = []
    for ev in data.get("events", []):
        for form in ev.get("forms", []):
            for k, v in form.get("values", {}).items():
                values.setdefault(k, v)
            if form.get("status") == "incomplete":
                incomplete.append(f"{ev.get('label')}/{form.get('form')}")
    enrolled = next((str(v) for k, v in values.items() if _ENROL.search(k) and _DATE.match(str(v))), None)
    status = next((str(v) for k, v in values.items() if "status" in k and "visit" not in k), None)
    if qc:
        return (f"{sid}：未完成的表单 {len(incomplete)} 个" + (f"（{'，'.join(incomplete[:5])}）" if incomplete else "")
                if zh else f"{sid}: {len(incomplete)} incomplete form(s)"
                + (f" ({', '.join(incomplete[:5])})" if incomplete else ""))
    if enrolled:
        return (f"{sid} 已入组，入组时间是 {enrolled}" + (f"（状态：{status}）。" if status else "。") if zh
                else f"{sid} is enrolled; enrolment date {enrolled}" + (f" (status: {status})." if status else "."))
    return (f"{sid} 尚未入组" + (f"（状态：{status}）。" if status else "。") if zh
            else f"{sid} is not enrolled" + (f" (status: {status})." if status else "."))


def tool_names_of(results: list[dict[str, Any]], messages: list[dict[str, Any]]) -> dict[str, str]:
    """tool_use id -> tool name, from the assistant messages of the conversation."""
    names: dict[str, str] = {}
    for m in messages:
        if m["role"] == "assistant" and isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    names[str(b["id"])] = str(b["name"])
    return names


def parse(content: Any) -> dict[str, Any]:
    """A tool result's JSON object, or ``{}``."""
    try:
        data = json.loads(content or "{}")
    except (json.JSONDecodeError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}
