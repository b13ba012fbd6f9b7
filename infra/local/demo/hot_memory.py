"""Hot memory of the demo IIT project ``demo-iit`` (sections in the order of docs/architecture.md, "Hot memory").

Every line carries its provenance: admin lines were written by a named admin user (PI / data
manager / CRC lead) and are never touched by the AI; distilled lines were added by the daily
distillation job (``created_by="distiller"``) and cite the flow-log messages they came from.
The rendered document is about 450 estimated tokens, well under the 2,000-token cap.
"""

from __future__ import annotations

from datetime import UTC, datetime

from agent_memory.domain.models import HotMemory, HotMemoryLine

DEMO_IIT_PROJECT_ID = "demo-iit"

#: Admin user ids of the demo project (the ``sub`` of their JWTs).
PI_USER = "u-pi-zhang"  # 张教授, principal investigator
DATA_MANAGER_USER = "u-dm-li"  # 李工, data manager
CRC_LEAD_USER = "u-crc-wang"  # 王老师, CRC lead
DISTILLER = "distiller"


def _at(text: str) -> datetime:
    """An ISO-8601 instant with offset (project time zone is +08:00) as a UTC datetime."""
    return datetime.fromisoformat(text).astimezone(UTC)


def _line(
    line_id: str,
    section: str,
    text: str,
    *,
    source: str,
    created_at: str,
    created_by: str,
    role_tag: str | None = None,
    evidence: tuple[str, ...] = (),
) -> HotMemoryLine:
    return HotMemoryLine(
        line_id=line_id,
        section=section,
        text=text,
        source=source,
        role_tag=role_tag,
        created_at=_at(created_at),
        created_by=created_by,
        evidence=list(evidence),
    )


def demo_iit_hot_memory_lines() -> list[HotMemoryLine]:
    """The demo-iit hot memory lines, in document order (a fresh list on every call)."""
    return [
        # ------------------------------------------------------------- System Rules (admin only)
        _line(
            "hm-sys-001",
            "System Rules",
            "【系统禁令】严禁在未授权情况下删除数据",
            source="admin",
            created_at="2026-01-06T09:30:00+08:00",
            created_by=PI_USER,
        ),
        _line(
            "hm-sys-002",
            "System Rules",
            "【系统禁令】禁止输出患者身份证号、手机号、住址等直接身份信息，一律用受试者编号（如 P001）指代。",
            source="admin",
            created_at="2026-01-06T09:32:00+08:00",
            created_by=DATA_MANAGER_USER,
        ),
        _line(
            "hm-sys-003",
            "System Rules",
            "【系统禁令】AE 相关性判断、揭盲和剂量调整只能由 PI 决定，AI 只提供数据和提醒。",
            source="admin",
            created_at="2026-02-09T10:05:00+08:00",
            created_by=PI_USER,
        ),
        # ------------------------------------------------------------------- User Preferences
        _line(
            "hm-pref-001",
            "User Preferences",
            "汇报时只看数据，不要废话。",
            role_tag="PI",
            source="admin",
            created_at="2026-01-06T09:35:00+08:00",
            created_by=PI_USER,
        ),
        _line(
            "hm-pref-002",
            "User Preferences",
            "下午 2 点后比较忙，尽量上午推任务。",
            role_tag="CRC",
            source="distilled",
            created_at="2026-03-03T02:00:41+08:00",
            created_by=DISTILLER,
            evidence=("m-20260302-crc-0412", "m-20260302-crc-0415"),
        ),
        _line(
            "hm-pref-003",
            "User Preferences",
            "不要在周末发消息，周末产生的提醒顺延到周一上午 9 点。",
            role_tag="PI",
            source="distilled",
            created_at="2026-02-16T02:00:37+08:00",
            created_by=DISTILLER,
            evidence=("m-20260215-pi-0087",),
        ),
        _line(
            "hm-pref-004",
            "User Preferences",
            "质控结果按受试者编号排序，逐条列出缺失字段名称。",
            role_tag="DM",
            source="distilled",
            created_at="2026-04-11T02:01:02+08:00",
            created_by=DISTILLER,
            evidence=("m-20260410-dm-0233",),
        ),
        # ---------------------------------------------------------------------- Active Context
        _line(
            "hm-ctx-001",
            "Active Context",
            "当前重点任务：清理 3 月份的 Query。",
            source="admin",
            created_at="2026-11-02T09:10:00+08:00",
            created_by=DATA_MANAGER_USER,
        ),
        _line(
            "hm-ctx-002",
            "Active Context",
            "风险提示：P005 患者依从性差，需每日提醒。",
            source="distilled",
            created_at="2026-07-11T02:00:52+08:00",
            created_by=DISTILLER,
            evidence=("m-20260710-crc-1180", "m-20260710-pi-1183"),
        ),
        _line(
            "hm-ctx-003",
            "Active Context",
            "当前处于入组冲刺阶段：目标 60 例，截至 11 月 22 日累计入组 17 例（在组 16 例），S01、S02 两个中心在筛。",
            source="distilled",
            created_at="2026-11-23T02:00:48+08:00",
            created_by=DISTILLER,
            evidence=("m-20261120-pi-2291",),
        ),
        _line(
            "hm-ctx-004",
            "Active Context",
            "方案 v1.3 已执行：V7（W36）改为远程随访，V8（W48）仍须回院做影像评估。",
            source="admin",
            created_at="2026-10-16T15:20:00+08:00",
            created_by=CRC_LEAD_USER,
        ),
        # --------------------------------------------------------------------- Lessons Learned
        _line(
            "hm-les-001",
            "Lessons Learned",
            "严禁直接调用 API 修改数据，所有修改必须由 CRC 在 EDC 中人工确认。",
            source="admin",
            created_at="2026-01-30T17:45:00+08:00",
            created_by=DATA_MANAGER_USER,
        ),
        _line(
            "hm-les-002",
            "Lessons Learned",
            "化验单 OCR 自动录入精度不足（单位和小数点易错），化验结果一律人工复核后再录入 EDC。",
            source="distilled",
            created_at="2026-02-07T02:00:33+08:00",
            created_by=DISTILLER,
            evidence=("m-20260206-dm-0061",),
        ),
        _line(
            "hm-les-003",
            "Lessons Learned",
            "EDC 同步前先核对中心编码等参数（W05 曾因参数错误导致同步失败）。",
            source="admin",
            created_at="2026-02-02T11:00:00+08:00",
            created_by=DATA_MANAGER_USER,
        ),
    ]


def demo_iit_hot_memory() -> HotMemory:
    """The demo-iit hot memory, unsaved (``version == 0``)."""
    return HotMemory(project_id=DEMO_IIT_PROJECT_ID, version=0, lines=demo_iit_hot_memory_lines())
