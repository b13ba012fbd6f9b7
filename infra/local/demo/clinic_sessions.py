"""Demo consultations of ``demo-clinic``: a few patients, their visits as imported
transcripts, one diagnosis, and a follow-up visit to compare with it.

Seeded through the same logic the API uses (:mod:`agent_memory.consultation.sessions`), with the rule-based
extractor, so the facts shown are exactly what the service extracts. Idempotent: a visit that
already exists is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from agent_memory.adapters.dynamo.sessions import SessionsRepository
from agent_memory.consultation.session_memory import SessionMemory
from agent_memory.consultation.sessions import SessionsDeps, add_diagnosis, create_session, import_transcript
from agent_memory.consultation.symptoms import RuleSymptomExtractor
from agent_memory.domain.session_models import TranscriptTurn

SHANGHAI = ZoneInfo("Asia/Shanghai")


@dataclass(frozen=True)
class DemoVisit:
    session_id: str
    patient_id: str
    name: str
    start: datetime  # local time of the first turn
    turns: tuple[tuple[str, str], ...]
    diagnosis: dict[str, Any] | None = None
    diagnosis_id: str | None = None


DEMO_VISITS: tuple[DemoVisit, ...] = (
    DemoVisit(
        session_id="visit-pt001-1",
        patient_id="pt-001",
        name="初诊：头痛、怕冷",
        start=datetime(2026, 3, 3, 9, 30, tzinfo=SHANGHAI),
        turns=(
            ("patient", "医生您好，我头痛、怕冷、不出汗，从前天开始的。"),
            ("doctor", "有没有发烧？"),
            ("patient", "没有"),
            ("doctor", "咳嗽吗？"),
            ("patient", "有一点咳嗽"),
            ("doctor", "考虑风寒表实证，建议多喝热水、注意保暖，三天后复诊。"),
        ),
        diagnosis={"证型": "风寒表实证", "治法": "辛温解表", "建议": ["多喝热水", "注意保暖", "三天后复诊"]},
        diagnosis_id="dx-pt001-1",
    ),
    DemoVisit(
        session_id="visit-pt001-2",
        patient_id="pt-001",
        name="复诊",
        start=datetime(2026, 3, 6, 10, 0, tzinfo=SHANGHAI),
        turns=(
            ("patient", "头痛加重了，昨天开始有点发烧。"),
            ("doctor", "还怕冷吗？"),
            ("patient", "不怕冷了"),
            ("doctor", "出汗吗？"),
            ("patient", "没有出汗"),
        ),
    ),
    DemoVisit(
        session_id="visit-pt002-1",
        patient_id="pt-002",
        name="小儿发热咳嗽",
        start=datetime(2026, 3, 5, 20, 15, tzinfo=SHANGHAI),
        turns=(
            ("patient", "孩子三岁，昨天开始发烧，上周起咳嗽，流清鼻涕。"),
            ("doctor", "孩子有没有呕吐、腹泻？"),
            ("patient", "没有呕吐，也没有腹泻"),
            ("doctor", "精神和胃口怎么样？"),
            ("patient", "胃口不好，精神还可以"),
        ),
    ),
    DemoVisit(
        session_id="visit-pt003-1",
        patient_id="pt-003",
        name="咽痛",
        start=datetime(2026, 3, 9, 14, 0, tzinfo=SHANGHAI),
        turns=(
            ("patient", "嗓子疼两天了，没有发烧。"),
            ("doctor", "咳嗽吗？"),
            ("patient", "不咳嗽"),
        ),
    ),
)


class _Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def seed_demo_visits(repo: SessionsRepository, project_id: str, *, now: datetime) -> int:
    """Create the demo visits that do not exist yet (only those that start before ``now``);
    returns how many were created."""
    memory = SessionMemory(extractor=RuleSymptomExtractor(), patients=repo, reader=repo)
    created = 0
    for visit in DEMO_VISITS:
        if visit.start > now or repo.get_session(project_id, visit.session_id) is not None:
            continue
        clock = _Clock(visit.start - timedelta(minutes=1))
        deps = SessionsDeps(store=repo, memory=memory, now=clock)
        create_session(deps, project_id=project_id, user_id="seed", session_id=visit.session_id,
                       patient_id=visit.patient_id, session_type="consultation", name=visit.name)
        turns = [
            TranscriptTurn(role=role, content=text, at=visit.start + timedelta(minutes=2 * i))
            for i, (role, text) in enumerate(visit.turns)
        ]
        clock.at = min(visit.start + timedelta(minutes=2 * len(visit.turns)), now)
        import_transcript(deps, project_id=project_id, session_id=visit.session_id, user_id="seed", turns=turns)
        if visit.diagnosis is not None:
            add_diagnosis(deps, project_id=project_id, session_id=visit.session_id, user_id="seed",
                          report=visit.diagnosis, diagnosis_id=visit.diagnosis_id)
        created += 1
    return created


__all__ = ["DEMO_VISITS", "seed_demo_visits"]
