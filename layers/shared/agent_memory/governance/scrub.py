"""The one-off identifier scrub of what a project already stores (docs/architecture.md, "Identifiers").

What was stored before the identifier firewall (or before a subject's identifiers were in REDCap)
still holds what people typed: the flow log, the sessions (windows, messages with their tool
calls and context manifests, summaries, facts, diagnoses, ratings) and hot memory (the document,
its revisions), the history book and the review queue. :func:`run_scrub` passes every such
text through the project's firewall (its patterns and its subject identifier index, whatever the
project's policy: data already stored is redacted, never refused) and rewrites what changed.

Run by the job worker from THE job table (``JobRequest(job="scrub")``; ``make job JOB=scrub
PROJECT=<id>`` locally or with ``AWS=1`` on the deployed queue). Its audit record
(``ScrubRecord``, MemoryTable ``SCRUB#{run_key}``) says who asked, when, and how many values of
each kind were withheld in how many items of each area, never a value. Idempotent: each rewrite
is conditional on the text as read and adds to the record's counts in the same transaction, so a
retry (or a second delivery) re-reads everything, finds the rewritten texts clean and counts
nothing twice; once the record is done, the same run answers it without reading again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from agent_memory.domain.models import Project
from agent_memory.domain.scrub import ScrubRecord, StoredText, scrub_run_key
from agent_memory.identifiers import IdentifierFirewall
from agent_memory.observability import logger
from agent_memory.ports import ScrubStore

#: Re-reads of one text that a concurrent writer changed before the rewrite gives up on it.
REWRITE_ATTEMPTS = 4


@dataclass(frozen=True)
class ScrubDeps:
    """The scrub's collaborators (built by ``wiring.build_scrub_deps``): the store, the firewall
    (with the projects' subject identifier indexes), the clock (aware UTC)."""

    store: ScrubStore
    firewall: IdentifierFirewall
    clock: Callable[[], datetime]


def run_scrub(deps: ScrubDeps, *, project_id: str, run_date: date, actor: str) -> ScrubRecord:
    """Scrub every text the project stores (see the module docstring).

    Args:
        run_date: the date the run was requested for (it names the run: ``SCRUB#{date}``).
        actor: who asked (``operator`` for the CLI, the job's requester).

    Returns:
        The run's record, ``status == "done"``, with ``withheld`` (values by kind) and ``items``
        (rewritten items by area) summed over every try of the run.

    Raises:
        ProjectNotFound: unknown project (the worker drops the job).
    """
    store = deps.store
    project = store.get_project(project_id)
    record = store.start_scrub(ScrubRecord(project_id=project_id, run_key=scrub_run_key(run_date),
                                           actor=actor, requested_at=deps.clock()))
    if record.status == "done":
        return record
    now = deps.clock()
    since = project.created_at.date() - timedelta(days=1)  # a UTC day partition may start before
    for text in store.stored_texts(project_id, since=since, until=now.date() + timedelta(days=1)):
        _scrub_one(deps, record, project, text)
    done = store.finish_scrub(record, at=deps.clock())
    logger.info("identifier scrub done", extra={"project_id": project_id, "run_key": done.run_key,
                                                "withheld": done.withheld, "items": done.items})
    return done


def _scrub_one(deps: ScrubDeps, record: ScrubRecord, project: Project, text: StoredText) -> None:
    """Rewrite ``text`` when the firewall withholds anything from it; a text changed meanwhile is
    read again and scrubbed as it is now (up to :data:`REWRITE_ATTEMPTS` times)."""
    current: StoredText | None = text
    for _attempt in range(REWRITE_ATTEMPTS):
        if current is None:
            return
        value, withheld = deps.firewall.scrub_data(project, current.value)
        if not withheld or deps.store.rewrite(record, current, value, withheld):
            return
        current = deps.store.reread(current)
    logger.warning("a stored text kept changing during the identifier scrub; run the scrub again",
                   extra={"project_id": project.project_id, "area": text.area})


__all__ = ["REWRITE_ATTEMPTS", "ScrubDeps", "run_scrub"]
