"""The local reminder clock: what EventBridge Scheduler does in AWS, for ``make run``.

Every few seconds it reads the schedules of the reminder group from the embedded (moto) scheduler,
and for each one that is due invokes the ReminderFunction with the schedule's Input, exactly as the
scheduler would, then prints the delivery. A one-time ``at(...)`` schedule is due once its local time
(``ScheduleExpressionTimezone``) has come and is then deleted (``ActionAfterCompletion=DELETE``); a
``cron(...)`` schedule is due at each occurrence after its creation, then after its last firing.
The schedules are kept across restarts (:mod:`infra.local.moto_state`), so a reminder that fell due
while the server was stopped fires once at the first tick after the start; the ReminderFunction marks
it late (and drops a recurring occurrence it already delivered). With
``REMINDER_WEBHOOK_URL`` set, the demo projects get that webhook (HMAC key
``REMINDER_WEBHOOK_KEY``, default ``local-dev-key``), so a local sink
(``python -m infra.local.webhook_sink``) receives signed POSTs.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from agent_memory.adapters.scheduler import recurrence_from_cron
from infra.local.functions import FunctionError
from infra.local.stack import LocalStack

REMINDER_FUNCTION = "ReminderFunction"
_AT = re.compile(r"at\((?P<t>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)")


class ReminderClock:
    """Fires the due reminder schedules of ``stack`` (see the module docstring)."""

    def __init__(
        self,
        stack: LocalStack,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        out: Callable[[str], None] = print,
    ) -> None:
        self._stack = stack
        self._now = now
        self._out = out
        self._started = now()
        self._last: dict[str, datetime] = {}
        self._group = stack.env.get("REMINDER_SCHEDULE_GROUP", "")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _schedules(self) -> list[dict[str, Any]]:
        client = self._stack.aws_client("scheduler")
        out: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"GroupName": self._group}
        while True:
            page = client.list_schedules(**kwargs)
            for summary in page.get("Schedules", []):
                out.append(client.get_schedule(Name=summary["Name"], GroupName=self._group))
            if not page.get("NextToken"):
                return out
            kwargs["NextToken"] = page["NextToken"]

    def due(self, schedule: dict[str, Any], now: datetime) -> bool:
        """Whether ``schedule`` fires at ``now`` (aware): see the module docstring."""
        zone = ZoneInfo(schedule.get("ScheduleExpressionTimezone") or "UTC")
        local_now = now.astimezone(zone).replace(tzinfo=None)
        expression = schedule["ScheduleExpression"]
        at = _AT.fullmatch(expression)
        if at:
            return datetime.fromisoformat(at.group("t")) <= local_now
        created = schedule.get("CreationDate") or self._started
        since = self._last.get(schedule["Name"], min(created, self._started)).astimezone(zone).replace(tzinfo=None)
        return recurrence_from_cron(expression).next_after(since) <= local_now

    def tick(self, *, reminder_ids: frozenset[str] | None = None) -> list[dict[str, Any]]:
        """Fire every due schedule once (only those of ``reminder_ids`` when given: a test firing its
        own reminders on a stack other tests share); returns the ReminderFunction's results."""
        if not self._group:
            return []
        now = self._now()
        results = []
        for schedule in self._schedules():
            event = json.loads(schedule["Target"]["Input"])
            if reminder_ids is not None and event.get("reminder_id") not in reminder_ids:
                continue
            if not self.due(schedule, now):
                continue
            self._last[schedule["Name"]] = now
            try:
                result = self._stack.invoke(REMINDER_FUNCTION, event)
            except FunctionError as exc:
                # one reminder's failure (an unreachable webhook) never holds back the others; the
                # schedule stays, so a one-time reminder is tried again on the next tick (as the
                # scheduler's retry policy would)
                results.append({**event, "status": "failed", "error": str(exc)})
                self._out(f"reminder {event.get('reminder_id')} ({event.get('project_id')}) failed: {exc}")
                continue
            results.append(result)
            if schedule.get("ActionAfterCompletion") == "DELETE":
                self._stack.aws_client("scheduler").delete_schedule(Name=schedule["Name"], GroupName=self._group)
            if result.get("status") == "delivered":
                late = f" (late: due {result['scheduled_local']})" if result.get("late") else ""
                self._out(f"⏰ reminder {result['reminder_id']} -> {result['user_id']} ({result['project_id']}) "
                          f"via {', '.join(result['channels']) or 'nothing'}{late}: {result.get('text', '')}")
        return results

    def start(self, interval_s: float = 5.0) -> ReminderClock:
        """Tick every ``interval_s`` seconds in a daemon thread until :meth:`stop`."""
        def loop() -> None:
            while not self._stop.wait(interval_s):
                try:
                    self.tick()
                except Exception as exc:  # the clock must outlive one bad tick; the stack keeps serving
                    self._out(f"reminder clock: tick failed: {type(exc).__name__}: {exc}")

        self._thread = threading.Thread(target=loop, name="reminder-clock", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def configure_webhook(stack: LocalStack, url: str, key: str, project_ids: list[str]) -> None:
    """Give ``project_ids`` the webhook ``url`` signed with ``key``, as ``PUT .../reminder-webhook``
    does (the URL through the egress policy, the key in each project's own secret), but with a key
    the local sink knows instead of a generated one.

    Raises:
        EgressRefused: the egress policy refuses ``url``.
    """
    from datetime import UTC, datetime

    from agent_memory.adapters.dynamo.reminders import ReminderRepository
    from agent_memory.config import get_settings
    from agent_memory.reminders.webhook import WebhookDeps, put_reminder_webhook
    from agent_memory.wiring import build_project_secrets, egress_policy, host_resolver, secret_naming

    _ = stack.repo  # binds the models to the stack's tables
    with stack.environment():
        get_settings.cache_clear()  # the stack's settings, not cached for anyone else
        try:
            settings = get_settings()
            deps = WebhookDeps(store=ReminderRepository(), naming=secret_naming(settings),
                               secrets=build_project_secrets(settings, client=stack.aws_client("secretsmanager")),
                               policy=egress_policy(settings), resolver=host_resolver(settings), new_key=lambda: key)
        finally:
            get_settings.cache_clear()
    for project_id in project_ids:
        put_reminder_webhook(deps, project_id, url, now=datetime.now(UTC))


def start_for_server(stack: LocalStack, out: Callable[[str], None] = print) -> ReminderClock:
    """What ``make run`` starts: the clock (every ``REMINDER_CLOCK_S`` seconds, default 5) and, with
    ``REMINDER_WEBHOOK_URL`` set, the demo projects' webhook."""
    import os

    from infra.local.demo.seed import DEMO_PROJECTS

    url = os.environ.get("REMINDER_WEBHOOK_URL", "").strip()
    if url:
        configure_webhook(stack, url, os.environ.get("REMINDER_WEBHOOK_KEY", "local-dev-key"),
                          [p.project_id for p in DEMO_PROJECTS])
        out(f"reminder webhook: {url} (HMAC key from REMINDER_WEBHOOK_KEY, default local-dev-key)")
    clock = ReminderClock(stack, out=out).start(float(os.environ.get("REMINDER_CLOCK_S", "5")))
    out("reminder clock: fires due reminders from the embedded scheduler; `make reminders PROJECT=demo-iit` lists them")
    return clock


__all__ = ["ReminderClock", "configure_webhook", "start_for_server"]
