"""The identifier firewall: what every ingress calls before a text is stored or sent
(docs/architecture.md, "Identifiers").

One :class:`IdentifierFirewall` per function container (built by wiring). For each project it
keeps the subject identifier index (:class:`~agent_memory.identifiers.index.IdentifierIndex`:
salted digests only), read through the :class:`~agent_memory.ports.SubjectIdentifiersPort` at
most once every ``max_age_s`` seconds (a failed read is retried after ``retry_after_s``; until
then the last index, or none, is used, and the patterns still apply), and applies the project's
policy (``Project.identifiers``):

- :meth:`IdentifierFirewall.screen` - typed text (chat messages, transcript turns, feedback
  reasons, reminder texts): ``redact`` -> the scrubbed text; ``reject`` -> ``IdentifiersRejected``
  (HTTP 422 with the kinds) when anything was found;
- :meth:`IdentifierFirewall.screen_all` - several texts of one request (a transcript): all are
  checked before any is returned, so a rejected request stores none of them;
- :meth:`IdentifierFirewall.scrub` - always redact, whatever the policy (the model's own texts,
  the jobs' inputs: defence in depth); :meth:`IdentifierFirewall.scrub_value` one value of a record
  with its label as context (REDCap tool results, every field type);
  :meth:`IdentifierFirewall.scrub_data` every string of a JSON-like structure (what the scrub job
  rewrites).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_memory.domain.clinical import ClinicalSourceError
from agent_memory.domain.errors import IdentifiersRejected
from agent_memory.domain.redaction import Language, Scrubbed, scrub, scrub_data, scrub_value
from agent_memory.identifiers.index import IdentifierIndex
from agent_memory.observability import logger

if TYPE_CHECKING:
    from agent_memory.domain.models import Project
    from agent_memory.ports import SubjectIdentifiersPort

#: A project's index is read again after this many seconds (a new subject is known within it).
INDEX_MAX_AGE_S = 300.0
#: After a failed read, the next try waits this long (the source is down: do not ask every turn).
RETRY_AFTER_FAILURE_S = 60.0
#: Longest a read of the identifier values may take (seconds), whatever the caller's deadline.
READ_TIMEOUT_S = 5.0


@dataclass
class _Held:
    index: IdentifierIndex | None
    read_at: float
    ok: bool


class IdentifierFirewall:
    """The scrubber with each project's subject identifier index (see the module docstring).

    Args:
        source: reads the identifier values; None = the patterns alone (no clinical source).
        max_age_s: seconds an index is used before it is read again.
        retry_after_s: seconds after a failed read before the next one.
        clock: monotonic seconds (``time.monotonic``; tests pass a fake).
        salt: the index digests' key; default the per-process salt.
    """

    def __init__(
        self,
        source: SubjectIdentifiersPort | None,
        *,
        max_age_s: float = INDEX_MAX_AGE_S,
        retry_after_s: float = RETRY_AFTER_FAILURE_S,
        clock: Callable[[], float] = time.monotonic,
        salt: bytes | None = None,
    ) -> None:
        self._source = source
        self._max_age_s = max_age_s
        self._retry_after_s = retry_after_s
        self._clock = clock
        self._salt = salt
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()

    def index(self, project: Project, *, deadline: float | None = None) -> IdentifierIndex | None:
        """The project's index, read through the port when it is missing or older than
        ``max_age_s`` (None while no read has succeeded). Never raises for a source failure."""
        now = self._clock()
        with self._lock:
            held = self._held.get(project.project_id)
            if held is not None and now - held.read_at < (self._max_age_s if held.ok else self._retry_after_s):
                return held.index
            if self._source is None:
                return None
            self._held[project.project_id] = _Held(held.index if held else None, now, held.ok if held else False)
        index = self._read(project, now, deadline)
        with self._lock:
            if index is not None:
                self._held[project.project_id] = _Held(index, now, True)
            else:
                self._held[project.project_id] = _Held(held.index if held else None, now, False)
            return self._held[project.project_id].index

    def _read(self, project: Project, now: float, deadline: float | None) -> IdentifierIndex | None:
        assert self._source is not None
        until = now + READ_TIMEOUT_S if deadline is None else min(deadline, now + READ_TIMEOUT_S)
        try:
            values = self._source.subject_identifiers(project, deadline=until)
        except ClinicalSourceError as exc:
            logger.warning("subject identifier values could not be read; the patterns still apply",
                           extra={"project_id": project.project_id, "error": type(exc).__name__})
            return None
        return IdentifierIndex(values, salt=self._salt)

    def scrub(self, project: Project, text: str, *, lang: Language | None = None,
              deadline: float | None = None) -> Scrubbed:
        """``text`` with its identifiers withheld, whatever the project's policy (tool results and
        the jobs' inputs). ``lang``: the placeholders' language (None: the text's own)."""
        index = self.index(project, deadline=deadline)
        return scrub(text, known=index.find if index is not None else None, lang=lang)

    def scrub_value(self, project: Project, value: str, *, label: str | None = None, lang: Language | None = None,
                    deadline: float | None = None) -> Scrubbed:
        """One value of a record (a REDCap field of any type, a report member) with its
        identifiers withheld, its ``label`` read as context (``domain.redaction.scrub_value``),
        whatever the project's policy."""
        index = self.index(project, deadline=deadline)
        return scrub_value(value, label=label, known=index.find if index is not None else None, lang=lang)

    def scrub_data(self, project: Project, data: Any, *, lang: Language | None = None,
                   deadline: float | None = None) -> tuple[Any, dict[str, int]]:
        """Every string value of ``data`` (JSON-like; JSON text inside it too) scrubbed with its
        key as label (``domain.redaction.scrub_data``), whatever the policy. Returns the data
        (``data`` itself when nothing was withheld) and the spans withheld by kind."""
        index = self.index(project, deadline=deadline)
        known = index.find if index is not None else None
        clean, counts = scrub_data(data, lambda value, label: scrub_value(value, label=label, known=known, lang=lang))
        return clean, dict(sorted(counts.items()))

    def screen(self, project: Project, text: str, *, lang: Language | None = None,
               deadline: float | None = None) -> Scrubbed:
        """Typed text at ingress, under the project's policy: the scrubbed text (``redact``).

        Raises:
            IdentifiersRejected: the policy is ``reject`` and the text holds identifiers (its
                ``kinds``; HTTP 422); nothing may be stored.
        """
        return self.screen_all(project, [text], lang=lang, deadline=deadline)[0]

    def screen_all(self, project: Project, texts: Sequence[str], *, lang: Language | None = None,
                   deadline: float | None = None) -> list[Scrubbed]:
        """:meth:`screen` for the texts of one request (a transcript's turns), all checked before
        any is returned: under ``reject`` one text with identifiers refuses them all.

        Raises:
            IdentifiersRejected: as :meth:`screen`, with the kinds found in all the texts.
        """
        results = [self.scrub(project, t, lang=lang, deadline=deadline) for t in texts]
        if project.identifiers == "reject":
            kinds = tuple(sorted({k for r in results for k in r.counts}))
            if kinds:
                raise IdentifiersRejected(kinds)
        return results


__all__ = ["INDEX_MAX_AGE_S", "READ_TIMEOUT_S", "RETRY_AFTER_FAILURE_S", "IdentifierFirewall"]
