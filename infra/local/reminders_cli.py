"""``make reminders PROJECT=<id>``: the reminders of a project of the running ``make run`` stack
(read from its embedded DynamoDB through ``.local/stack.json``), with their schedules."""

from __future__ import annotations

import argparse
import os
import sys

from infra.jobs import JobsCliError, local_description


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make reminders", description=__doc__)
    parser.add_argument("--project", required=True)
    parser.add_argument("--all", action="store_true", help="also done and cancelled reminders")
    args = parser.parse_args(argv)
    try:
        description = local_description()
    except JobsCliError as exc:
        print(exc, file=sys.stderr)
        return 1
    os.environ.update(description["env"])
    from agent_memory.adapters.dynamo.reminders import ReminderRepository
    from agent_memory.adapters.dynamo.tables import bind_tables

    tables = description["table_names"]
    bind_tables(memory_table=tables["MemoryTable"], sessions_table=tables["SessionsTable"],
                flow_log_table=tables["FlowLogTable"])
    found = [r for r in ReminderRepository().list_reminders(args.project) if args.all or r.status == "active"]
    if not found:
        print(f"no {'' if args.all else 'active '}reminders in {args.project}")
    for r in found:
        moved = f"  (moved from {r.requested}: {r.shifted_because})" if r.shifted_because else ""
        print(f"{r.reminder_id}  {r.status:9}  {r.owner:12}  {r.description} [{r.time_zone}]  "
              f"next {r.next_fire_local}  {r.expression}  {r.text}{moved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
