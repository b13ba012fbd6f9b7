"""The demo-iit project as a REDCap project: data dictionary, events, records (local only).

Built from ``clinical_data.json`` (the same 20 fictional subjects, P001 enrolled 2026-02-05) in
REDCap's shapes: metadata rows with REDCap's 18 keys, a longitudinal design (screening, baseline
V1 and follow-up visits V2-V8 on one arm), a repeating ``adverse_events`` instrument, a checkbox
field, form completion status, identifier fields with SYNTHETIC values (names from a fixed list,
mobile numbers, resident ID numbers with valid check characters, e-mail addresses on the
reserved ``example.org`` domain) and free text that mentions some of them. A few values are
deliberately wrong so that QC finds them (see :data:`SEEDED_ERRORS`).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

#: The demo token of demo-iit on the local REDCap server (32 hex characters, as REDCap's).
DEMO_TOKEN = "0D3A1F2B9C8E7D6A5B4C3D2E1F0A9B8C"
PROJECT_TITLE = "EGFR NSCLC IIT (local REDCap demo)"

#: What QC must find: (subject, event, field, kind).
SEEDED_ERRORS: tuple[tuple[str, str, str, str], ...] = (
    ("P007", "screening_arm_1", "ecog", "required_missing"),
    ("P007", "screening_arm_1", "crcl", "out_of_range"),
    ("P007", "baseline_arm_1", "visit_date", "date_order"),
    ("P012", "v2_arm_1", "sbp", "out_of_range"),
    ("P010", "v4_arm_1", "visit_date", "date_order"),
)

_KEYS = (
    "field_name", "form_name", "section_header", "field_type", "field_label", "select_choices_or_calculations",
    "field_note", "text_validation_type_or_show_slider_number", "text_validation_min", "text_validation_max",
    "identifier", "branching_logic", "required_field", "custom_alignment", "question_number",
    "matrix_group_name", "matrix_ranking", "field_annotation",
)


def _f(name: str, form: str, ftype: str, label: str, *, choices: str = "", validation: str = "",
       vmin: str = "", vmax: str = "", required: bool = False, identifier: bool = False,
       branching: str = "", note: str = "") -> dict[str, str]:
    row = dict.fromkeys(_KEYS, "")
    row.update(field_name=name, form_name=form, field_type=ftype, field_label=label,
               select_choices_or_calculations=choices, text_validation_type_or_show_slider_number=validation,
               text_validation_min=vmin, text_validation_max=vmax, identifier="y" if identifier else "",
               required_field="y" if required else "", branching_logic=branching, field_note=note)
    return row


METADATA: list[dict[str, str]] = [
    _f("subject_id", "screening", "text", "受试者编号 Subject ID"),
    _f("subj_name", "screening", "text", "姓名 Name", identifier=True),
    _f("resident_id", "screening", "text", "身份证号 Resident ID", identifier=True),
    _f("phone", "screening", "text", "联系电话 Phone", validation="phone", identifier=True),
    _f("email", "screening", "text", "电子邮箱 E-mail", validation="email", identifier=True),
    _f("sex", "screening", "radio", "性别 Sex", choices="1, 男 Male | 2, 女 Female", required=True),
    _f("age", "screening", "text", "年龄 Age (years)", validation="integer", vmin="18", vmax="85", required=True),
    _f("ecog", "screening", "text", "ECOG 评分 ECOG", validation="integer", vmin="0", vmax="2", required=True),
    _f("crcl", "screening", "text", "肌酐清除率 CrCl (mL/min)", validation="number", vmin="0", vmax="200",
       required=True),
    _f("screening_date", "screening", "text", "筛选日期 Screening date", validation="date_ymd",
       vmin="2026-01-01", required=True),
    _f("consent_date", "screening", "text", "知情同意日期 Consent date", validation="date_ymd", required=True),
    _f("risk_factors", "screening", "checkbox", "危险因素 Risk factors",
       choices="1, 吸烟史 Smoking | 2, 高血压 Hypertension | 3, 糖尿病 Diabetes | 4, 慢性肾脏病 CKD"),
    _f("medical_history", "screening", "notes", "既往史 Medical history"),
    _f("status", "screening", "dropdown", "受试者状态 Status",
       choices="1, 筛选中 screening | 2, 已入组 enrolled | 3, 筛选失败 screen failed | 4, 已退出 withdrawn",
       required=True),
    _f("screen_fail_reason", "screening", "notes", "筛选失败原因 Screen-failure reason", branching="[status] = '3'"),
    _f("enrolment_date", "enrolment", "text", "入组日期 Enrolment date", validation="date_ymd",
       vmin="2026-01-01", required=True),
    _f("rand_arm", "enrolment", "radio", "随机分组 Arm", choices="1, A 组（联合治疗） | 2, B 组（单药治疗）",
       required=True),
    _f("site", "enrolment", "dropdown", "中心 Site", choices="1, S01 | 2, S02", required=True),
    _f("visit_date", "visit", "text", "访视日期 Visit date", validation="date_ymd", required=True),
    _f("visit_status", "visit", "radio", "访视状态 Visit status", choices="1, 已完成 completed | 2, 缺失 missed",
       required=True),
    _f("sbp", "visit", "text", "收缩压 SBP (mmHg)", validation="integer", vmin="70", vmax="220"),
    _f("weight", "visit", "text", "体重 Weight (kg)", validation="number", vmin="30", vmax="150", required=True),
    _f("crf_notes", "visit", "notes", "备注 CRF notes"),
    _f("ae_term", "adverse_events", "text", "不良事件 AE term", required=True),
    _f("ae_grade", "adverse_events", "text", "CTCAE 分级 Grade", validation="integer", vmin="1", vmax="5",
       required=True),
    _f("ae_onset", "adverse_events", "text", "发生日期 Onset", validation="date_ymd", required=True),
    _f("ae_serious", "adverse_events", "yesno", "严重不良事件 Serious"),
    _f("ae_related", "adverse_events", "yesno", "与研究药物相关 Related"),
    _f("ae_resolved", "adverse_events", "text", "恢复日期 Resolved", validation="date_ymd"),
]

ARMS = [{"arm_num": 1, "name": "Main"}]


def _events(schedule: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events = [{"event_name": "Screening 筛选", "arm_num": 1, "unique_event_name": "screening_arm_1",
               "custom_event_label": "", "event_id": 101, "days_offset": -14, "offset_min": 0, "offset_max": 0}]
    for v in schedule:
        unique = "baseline_arm_1" if v["visit"] == 1 else f"v{v['visit']}_arm_1"
        events.append({"event_name": v["name"], "arm_num": 1, "unique_event_name": unique,
                       "custom_event_label": "", "event_id": 101 + v["visit"], "days_offset": v["day"] - 1,
                       "offset_min": 0, "offset_max": 7})
    return events


def _mapping(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [{"arm_num": 1, "unique_event_name": "screening_arm_1", "form": "screening"}]
    for e in events[1:]:
        forms = ["enrolment", "visit", "adverse_events"] if e["unique_event_name"] == "baseline_arm_1" else ["visit"]
        out += [{"arm_num": 1, "unique_event_name": e["unique_event_name"], "form": f} for f in forms]
    return out


REPEATING = [{"event_name": "baseline_arm_1", "form_name": "adverse_events", "custom_form_label": "[ae_term]"}]

_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗"
_GIVEN = ("建国", "秀英", "志强", "桂兰", "海涛", "丽娟", "国华", "玉梅", "明辉", "淑珍",
          "永胜", "红霞", "德明", "春燕", "文斌", "晓燕", "振华", "慧敏", "立新", "雪梅")
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _resident_id(n: int, birth_year: int) -> str:
    first17 = f"330106{birth_year:04d}{(n % 12) + 1:02d}{(n % 27) + 1:02d}{100 + n:03d}"
    return first17 + "10X98765432"[sum(int(d) * w for d, w in zip(first17, _ID_WEIGHTS, strict=True)) % 11]


def identifiers(n: int, age: int) -> dict[str, str]:
    """The synthetic identifier values of subject ``n`` (1-based)."""
    return {
        "subj_name": _SURNAMES[(n - 1) % len(_SURNAMES)] + _GIVEN[(n - 1) % len(_GIVEN)],
        "resident_id": _resident_id(n, 2026 - age),
        "phone": f"139{n:04d}{(n * 7919) % 10000:04d}",
        "email": f"participant.{n * 37 % 1000:03d}@example.org",
    }


def _blank_row(record: str, event: str, instrument: str = "", instance: int | str = "") -> dict[str, Any]:
    return {"subject_id": record, "redcap_event_name": event, "redcap_repeat_instrument": instrument,
            "redcap_repeat_instance": instance}


def demo_records() -> list[dict[str, Any]]:
    """The stored records: one dict per (record, event, repeat instance) with the values it holds
    (checkbox values as ``field___code``, form status as ``<form>_complete``)."""
    data = json.loads(resources.files("infra.local.demo").joinpath("clinical_data.json").read_text("utf-8"))
    subjects: dict[str, Any] = data["demo-iit"]["subjects"]
    status_code = {"screening": "1", "enrolled": "2", "screen_failed": "3", "withdrawn": "4"}
    rows: list[dict[str, Any]] = []
    for n, (sid, s) in enumerate(sorted(subjects.items()), start=1):
        ids = identifiers(n, int(s.get("age") or 60))
        history = "；".join(s.get("medical_history") or [])
        if n % 4 == 1:  # free text that mentions an identifier: scrubbed before any tool result
            history += f"；紧急联系人电话 {ids['phone'][:3]} {ids['phone'][3:7]} {ids['phone'][7:]}"
        if n % 5 == 0:
            history += f"；外院病历登记身份证号 {ids['resident_id']}，邮箱 {ids['email']}"
        risk = {"1": "吸烟" in history, "2": "高血压" in history, "3": "糖尿病" in history, "4": "肾" in history}
        screening = {
            **_blank_row(sid, "screening_arm_1"), **ids,
            "sex": "1" if s.get("sex") == "男" else "2", "age": str(s.get("age") or ""),
            "ecog": str(s.get("ecog") if s.get("ecog") is not None else ""),
            "crcl": str(78 + (n * 13) % 40), "screening_date": s.get("screening_date") or "",
            "consent_date": s.get("screening_date") or "", "medical_history": history,
            **{f"risk_factors___{c}": "1" if on else "0" for c, on in risk.items()},
            "status": status_code.get(s.get("status", ""), "1"),
            "screen_fail_reason": s.get("screen_fail_reason") or "",
            "screening_complete": "2",
        }
        if sid == "P007":  # seeded errors: ECOG left blank, CrCl typed as 450 (the report says 45)
            screening.update(ecog="", crcl="450", screening_complete="1")
        rows.append(screening)
        if s.get("enrolment_date"):
            rows.append({**_blank_row(sid, "baseline_arm_1"), "enrolment_date": s["enrolment_date"],
                         "rand_arm": "1" if s.get("arm") == "A" else "2",
                         "site": "1" if s.get("site", "S01") == "S01" else "2", "enrolment_complete": "2"})
        for v in s.get("visits") or []:
            if v.get("status") not in ("completed", "missed"):
                continue
            event = "baseline_arm_1" if v["visit"] == 1 else f"v{v['visit']}_arm_1"
            missing = bool(v.get("missing_fields"))
            visit = {"visit_date": v.get("date") or v.get("planned_date") or "",
                     "visit_status": "1" if v["status"] == "completed" else "2",
                     "sbp": str(112 + (n * 7 + v["visit"] * 5) % 30),
                     "weight": "" if missing else f"{55 + (n * 3) % 25}.{v['visit']}",
                     "crf_notes": ("待补：" + "；".join(v["missing_fields"])) if missing else "",
                     "visit_complete": "0" if missing else "2"}
            if n % 6 == 3 and v["visit"] == 2:
                visit["crf_notes"] = f"患者致电 0571-8{n:03d}5678 改约访视时间"
            if sid == "P012" and v["visit"] == 2:
                visit["sbp"] = "260"  # seeded error: above the 220 mmHg range
            existing = next((r for r in rows if r["subject_id"] == sid and r["redcap_event_name"] == event
                             and not r["redcap_repeat_instrument"]), None)
            if existing is not None:
                existing.update(visit)
            else:
                rows.append({**_blank_row(sid, event), **visit})
        if sid == "P010":  # seeded error: V4 dated before V3
            v3 = next(r for r in rows if r["subject_id"] == sid and r["redcap_event_name"] == "v3_arm_1")
            v4 = next(r for r in rows if r["subject_id"] == sid and r["redcap_event_name"] == "v4_arm_1")
            v4["visit_date"] = "2026-05-20" if v3["visit_date"] > "2026-05-20" else v3["visit_date"][:8] + "01"
        for i, ae in enumerate(s.get("adverse_events") or [], start=1):
            rows.append({**_blank_row(sid, "baseline_arm_1", "adverse_events", i), "ae_term": ae.get("term", ""),
                         "ae_grade": str(ae.get("grade", "")), "ae_onset": ae.get("onset") or "",
                         "ae_serious": "1" if ae.get("serious") else "0",
                         "ae_related": "1" if ae.get("related") else "0",
                         "ae_resolved": ae.get("resolved") or "", "adverse_events_complete": "2"})
    # P007 (a screen failure) has a baseline visit row dated before its screening: seeded error.
    rows.append({**_blank_row("P007", "baseline_arm_1"), "visit_date": "2026-02-27", "visit_status": "1",
                 "sbp": "128", "weight": "61.5", "crf_notes": "", "visit_complete": "1"})
    return rows


def demo_project() -> dict[str, Any]:
    """Everything the local REDCap server serves for demo-iit."""
    data = json.loads(resources.files("infra.local.demo").joinpath("clinical_data.json").read_text("utf-8"))
    events = _events(data["demo-iit"]["visit_schedule"])
    return {
        "project": {"project_id": 4242, "project_title": PROJECT_TITLE, "creation_time": "2025-12-29 09:00:00",
                    "production_time": "2026-01-10 09:00:00", "in_production": 1, "project_language": "English",
                    "purpose": 2, "purpose_other": "", "project_notes": "Fictional demo data.",
                    "custom_record_label": "", "secondary_unique_field": "", "is_longitudinal": 1,
                    "has_repeating_instruments_or_events": 1, "surveys_enabled": 0,
                    "scheduling_enabled": 0, "record_autonumbering_enabled": 0, "randomization_enabled": 0,
                    "display_today_now_button": 1, "missing_data_codes": ""},
        "metadata": METADATA,
        "arms": ARMS,
        "events": events,
        "mapping": _mapping(events),
        "repeating": REPEATING,
        "records": demo_records(),
    }
