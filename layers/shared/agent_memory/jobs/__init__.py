"""Background memory jobs (seed 000 section 2, seed 001 section 5): daily distillation,
weekly archiving, pruning. Fanned out per project through SQS; every job is idempotent.

Contract between the fan-out (functions/jobs/*) and the job logic:

- :class:`JobRequest` is the SQS message body (one project, one job, one date).
- ``agent_memory.jobs.runner.run_job(deps, request) -> JobReport`` runs one job for one
  project and is safe to run again (a duplicate delivery or a re-run changes nothing).
"""

from __future__ import annotations

import datetime as _dt
from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

JobName = Literal["distill", "archive", "prune"]


class ScheduleInput(BaseModel):
    """The ``Input`` payload EventBridge Scheduler sends to the dispatcher.

    ``date`` is the run's LOCAL date in ``time_zone`` (absent: today in that zone at the
    time of the run). distill processes the local day before ``date``; archive the ISO
    week before the one containing ``date``; prune runs as of ``date``.
    """

    model_config = ConfigDict(extra="forbid")

    job: JobName
    # ``_dt.date``: a field named ``date`` with a default shadows the type in the class namespace.
    date: _dt.date | None = None
    time_zone: str = "Asia/Shanghai"
    project_id: str | None = Field(default=None, description="backfill one project instead of the active ones")


class JobRequest(BaseModel):
    """One SQS message of the fan-out: run ``job`` for ``project_id`` as of ``date``."""

    model_config = ConfigDict(extra="forbid")

    job: JobName
    project_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    date: date


class JobReport(BaseModel):
    """What a job did (counts only, never message text)."""

    job: JobName
    project_id: str
    date: date
    changed: bool
    counts: dict[str, int] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
