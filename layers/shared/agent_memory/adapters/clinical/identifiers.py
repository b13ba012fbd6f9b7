"""``SubjectIdentifiersPort`` on REDCap, through the PyCap adapter (docs/architecture.md, "Identifiers").

Reads the data dictionary (cached per container by :class:`RedcapSources`), then exports only the
record-id field and the fields flagged as identifiers whose values are text
(:func:`agent_memory.domain.clinical.identifier_kind`), and returns their values per subject. The
values go straight into the caller's subject identifier index, which keeps salted digests only;
nothing here logs or keeps them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.domain.clinical import IdentifierValue, identifier_kind, subject_identifier_values

if TYPE_CHECKING:
    from agent_memory.domain.models import Project
    from agent_memory.ports import ClinicalSourcesPort


class RedcapSubjectIdentifiers:
    """The identifier values of a project's REDCap subjects.

    Args:
        sources: opens the project's REDCap (``RedcapSources``: token from Secrets Manager,
            https only, backoff inside the deadline).
    """

    def __init__(self, sources: ClinicalSourcesPort) -> None:
        self._sources = sources

    def subject_identifiers(self, project: Project, *, deadline: float | None) -> list[IdentifierValue]:
        """See :meth:`SubjectIdentifiersPort.subject_identifiers` (``[]`` without ``clinical_data``).

        Raises:
            ClinicalSourceError: the source is unavailable, refused the token or the request.
        """
        if project.clinical_data is None:
            return []
        records = self._sources.open(project.clinical_data, project_id=project.project_id, deadline=deadline)
        dd = records.dictionary()
        fields = [f.name for f in dd.fields if identifier_kind(f) is not None]
        if not fields:
            return []
        return subject_identifier_values(dd, records.export_records(fields=fields))


__all__ = ["RedcapSubjectIdentifiers"]
