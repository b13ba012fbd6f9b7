"""Collaborators and caps of the jobs, plus the helpers every job shares (alerts, metrics)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from agent_memory.domain.errors import VersionConflict
from agent_memory.domain.jobs import Alert, JobName, JobReport
from agent_memory.domain.llm import Effort
from agent_memory.jobs.notifier import cap_alert
from agent_memory.observability import MetricUnit, logger, metrics
from agent_memory.ports import JobStore, LLMClient, Notifier
from agent_memory.structured import UsageTally


def utc_now() -> datetime:
    """The current UTC time (aware)."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class JobCaps:
    """Caps and model settings of the jobs.

    Units: tokens as estimated by ``agent_memory.domain.text.estimate_tokens``; bytes are UTF-8 bytes;
    seconds. ``hot_memory_token_cap`` is the document cap (2,000 tokens);
    ``yearly_after_weeks`` its 50 weeks. ``llm_max_output_tokens`` is the output budget of a
    structured call, thinking included (so not tight: only what is used is billed).
    ``distill_effort`` / ``archive_effort`` / ``compact_effort`` are the ``output_config.effort``
    of each task's call (None: the model's default).
    """

    hot_memory_token_cap: int = 2000
    max_line_tokens: int = 200
    report_max_bytes: int = 4000
    report_point_max_bytes: int = 480
    report_points_per_section: int = 8
    yearly_after_weeks: int = 50
    yearly_summary_max_bytes: int = 8000
    alert_max_bytes: int = 2000
    revision_reason_max_bytes: int = 1000
    llm_model_id: str = "claude-haiku-5-5"
    llm_max_output_tokens: int = 8192
    distill_effort: Effort | None = None
    archive_effort: Effort | None = None
    compact_effort: Effort | None = None
    llm_input_token_budget: int = 60_000
    llm_message_max_bytes: int = 2000
    llm_timeout_s: float = 120.0
    conflict_attempts: int = 5
    conflict_wait_max_s: float = 0.5


@dataclass
class JobDeps:
    """What a job needs; tests pass fakes.

    - ``store``: storage (``JobsRepository``);
    - ``llm``: the LLM port, or None for the offline rule-based extractors/compactor/summary
      (an ``offline`` provider is treated as None: it cannot answer structured calls);
    - ``notifier``: admin alerts (SNS adapter, in-memory fake);
    - ``clock``: returns the current aware UTC datetime;
    - ``caps``: :class:`JobCaps`.
    """

    store: JobStore
    llm: LLMClient | None
    notifier: Notifier
    clock: Callable[[], datetime] = utc_now
    caps: JobCaps = field(default_factory=JobCaps)

    @property
    def structured_llm(self) -> LLMClient | None:
        """The LLM when it can answer structured calls (not None, not the offline provider)."""
        if self.llm is None or self.llm.provider == "offline":
            return None
        return self.llm


@dataclass
class JobProgress:
    """What one run of a job for one project reports as it goes: its counts and details, and the
    LLM calls it made (``tally``: their number and summed usage, added to the details once there
    is a call)."""

    job: JobName
    project_id: str
    run_date: date
    counts: dict[str, int] = field(default_factory=dict)
    details: dict[str, object] = field(default_factory=dict)
    tally: UsageTally = field(default_factory=UsageTally)

    def already_done(self, store: JobStore, key: str) -> bool:
        """True when the run marker ``JOBRUN#{job}#{key}`` exists (a re-run, a duplicate delivery, or
        a concurrent run that finished first): the details say with which status."""
        done = store.get_job_run(self.project_id, self.job, key)
        if done is None:
            return False
        self.details["already_done"] = done.status
        return True

    def report(self, changed: bool) -> JobReport:
        """The job's report (``llm_calls`` and ``llm_usage`` in the details when the LLM was called)."""
        if self.tally.calls:
            self.details.update(self.tally.details())
        return JobReport(job=self.job, project_id=self.project_id, date=self.run_date, changed=changed,
                         counts=self.counts, details=self.details)


def count_metric(name: str, value: int = 1) -> None:
    """Add a Count metric (a business event of a job; flushed by the handler's ``log_metrics``)."""
    if value:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def send_alert(deps: JobDeps, alert: Alert) -> bool:
    """Send ``alert`` at most once per ``dedupe_key``: claim ``ALERT#{key}`` (conditional put),
    then notify; a failed delivery releases the claim and re-raises (so a retry sends it).

    At most once: a crash between the claim and the publish loses that one alert rather than
    risking duplicates on every retry; a delivery error (the common failure) is retried.

    Returns:
        True when sent now, False when it had been sent before.
    """
    capped = cap_alert(alert, deps.caps.alert_max_bytes)
    if not deps.store.claim_alert(alert.project_id, alert.dedupe_key, kind=alert.kind, now=deps.clock()):
        return False
    try:
        deps.notifier.notify(capped)
    except Exception:
        deps.store.release_alert(alert.project_id, alert.dedupe_key)
        raise
    count_metric("AdminAlertsSent")
    logger.info("admin alert sent", extra={"alert_kind": alert.kind, "project_id": alert.project_id})
    return True




def conflict_retrying(caps: JobCaps) -> Retrying:
    """Re-apply a job's hot-memory commit on a version conflict (an admin or another job wrote
    meanwhile): at most ``caps.conflict_attempts`` tries, jittered exponential waits of at most
    ``caps.conflict_wait_max_s`` seconds; the last conflict is raised."""
    return Retrying(
        stop=stop_after_attempt(caps.conflict_attempts),
        wait=wait_random_exponential(multiplier=0.02, max=caps.conflict_wait_max_s),
        retry=retry_if_exception_type(VersionConflict),
        reraise=True,
    )


__all__ = ["JobCaps", "JobDeps", "JobProgress", "conflict_retrying", "count_metric", "send_alert", "utc_now"]
