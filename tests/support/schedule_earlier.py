"""``python -m tests.support.schedule_earlier STACK_FILE PROJECT OWNER SECONDS WHEN TEXT``: schedule a
reminder in the running local stack the way the chat's reminder tool does (the reminder use case,
the MemoryTable item and the embedded EventBridge Scheduler schedule), as if it had been asked for
SECONDS ago: "1分钟后" asked 150 s ago fell due 90 s ago. What a server stopped meanwhile would have
missed, without a test waiting for the clock. Prints the reminder id."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path


def main(argv: list[str]) -> int:
    stack_file, project_id, owner, seconds, when, text = argv
    description = json.loads(Path(stack_file).read_text(encoding="utf-8"))
    os.environ.update(description["env"])
    from agent_memory.config import get_settings
    from agent_memory.reminders.service import schedule_reminder
    from agent_memory.wiring import build_reminder_deps

    deps = build_reminder_deps(get_settings())
    assert deps is not None, "the stack has no reminder schedule group"
    asked_at = datetime.now(UTC) - timedelta(seconds=float(seconds))
    scheduled = schedule_reminder(dataclasses.replace(deps, now=lambda: asked_at), project_id=project_id,
                                  time_zone="Asia/Shanghai", owner=owner, text=text, when=when)
    print(scheduled.reminder.reminder_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
